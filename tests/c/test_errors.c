/*
 * test_errors.c: zoo_version, zoo_status_str, and every status a C caller
 * can reach with bad input: NULL handles and strings, text that is not
 * UTF-8, malformed or wrong-shaped JSON, bad config values, bad schemas,
 * bad tool choices, missing models. Each failure must come with a non-empty
 * out_error, leave the outputs untouched and work with out_error == NULL.
 */
#define _POSIX_C_SOURCE 200809L

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chatctx.h"
#include "harness.h"
#include "json_mini.h"

/* Outputs are preset to these and must still hold them after a failure. */
static char sentinel_byte;
#define SENTINEL_AGENT ((zoo_agent *)&sentinel_byte)
#define SENTINEL_MODEL ((zoo_model *)&sentinel_byte)
#define SENTINEL_CHAT ((zoo_chat *)&sentinel_byte)
#define SENTINEL_STR ((char *)&sentinel_byte)

static const char *BAD_UTF8 = "\xff";

static void noop_tool(void *ud, const char *args, size_t len, zoo_tool_result *result) {
    (void)ud;
    (void)args;
    (void)len;
    zoo_tool_result_set_json(result, "null", NULL);
}

static zoo_agent *mock_agent(const char *replies) {
    zoo_agent *agent = NULL;
    char *err = NULL;
    if (!CHECK_STATUS(zoo_agent_create_mock(NULL, replies, 0, &agent, &err), ZOO_OK, err)) {
        th_free_string(&err);
        return NULL;
    }
    return agent;
}

void test_version(void) {
    const char *v = zoo_version();
    REQUIRE(v != NULL);
    /* "major.minor.patch", optionally followed by a pre-release suffix. */
    int major = -1, minor = -1, patch = -1;
    CHECKF(sscanf(v, "%d.%d.%d", &major, &minor, &patch) == 3 && major >= 0 && minor >= 0 &&
               patch >= 0,
           "zoo_version() = \"%s\" is not a semantic version", v);
    CHECK(zoo_version() == v); /* static: the same pointer every time */
}

void test_json_string_member(void) {
    char *out = NULL, *err = NULL;
    REQUIRE_STATUS(zoo_json_string_member("{\"text\": \"a\\u00e9\\n\", \"n\": 1}", "text", &out, &err),
                   ZOO_OK, err);
    CHECK_STR(out, "a\xc3\xa9\n");
    zoo_string_free(out);
    out = (char *)"untouched";
    REQUIRE_STATUS(zoo_json_string_member("{\"n\": 1}", "n", &out, &err), ZOO_OK, err);
    CHECK(out == NULL); /* not a string */
    REQUIRE_STATUS(zoo_json_string_member("{}", "text", &out, &err), ZOO_OK, err);
    CHECK(out == NULL); /* absent */
    out = NULL;
    CHECK_STATUS(zoo_json_string_member("[1]", "text", &out, &err), ZOO_INVALID_JSON, err);
    CHECK_STR(err, "invalid JSON: the JSON to read is an array, not an object");
    CHECK(out == NULL); /* outputs only on success */
    th_free_string(&err);
    CHECK_STATUS(zoo_json_string_member("{", "text", &out, &err), ZOO_INVALID_JSON, err);
    th_free_string(&err);
    CHECK_STATUS(zoo_json_string_member(NULL, "text", &out, &err), ZOO_INVALID_ARGUMENT, err);
    th_free_string(&err);
    CHECK_STATUS(zoo_json_string_member("{}", "text", NULL, &err), ZOO_INVALID_ARGUMENT, err);
    th_free_string(&err);
}

void test_status_str(void) {
    static const char *const expected[] = {
        "ok",                       /* ZOO_OK */
        "invalid argument",         /* ZOO_INVALID_ARGUMENT */
        "invalid config",           /* ZOO_INVALID_CONFIG */
        "invalid JSON",             /* ZOO_INVALID_JSON */
        "model load failed",        /* ZOO_MODEL_LOAD_FAILED */
        "invalid message sequence", /* ZOO_INVALID_MESSAGE_SEQUENCE */
        "context overflow",         /* ZOO_CONTEXT_OVERFLOW */
        "inference failed",         /* ZOO_INFERENCE_FAILED */
        "cancelled",                /* ZOO_CANCELLED */
        "tool not found",           /* ZOO_TOOL_NOT_FOUND */
        "tool validation failed",   /* ZOO_TOOL_VALIDATION_FAILED */
        "tool retries exhausted",   /* ZOO_TOOL_RETRIES_EXHAUSTED */
        "tool handler failed",      /* ZOO_TOOL_HANDLER_FAILED */
        "agent not running",        /* ZOO_AGENT_NOT_RUNNING */
        "MCP error",                /* ZOO_MCP */
        "I/O error",                /* ZOO_IO */
        "internal error",           /* ZOO_INTERNAL */
        "provider failed",          /* ZOO_PROVIDER_FAILED */
        "authentication failed",    /* ZOO_AUTHENTICATION_FAILED */
    };
    /* The enum's values are the documented numbers. */
    CHECK(ZOO_OK == 0 && ZOO_INVALID_ARGUMENT == 1 && ZOO_INVALID_CONFIG == 2 &&
          ZOO_INVALID_JSON == 3 && ZOO_MODEL_LOAD_FAILED == 4 &&
          ZOO_INVALID_MESSAGE_SEQUENCE == 5 && ZOO_CONTEXT_OVERFLOW == 6 &&
          ZOO_INFERENCE_FAILED == 7 && ZOO_CANCELLED == 8 && ZOO_TOOL_NOT_FOUND == 9 &&
          ZOO_TOOL_VALIDATION_FAILED == 10 && ZOO_TOOL_RETRIES_EXHAUSTED == 11 &&
          ZOO_TOOL_HANDLER_FAILED == 12 && ZOO_AGENT_NOT_RUNNING == 13 && ZOO_MCP == 14 &&
          ZOO_IO == 15 && ZOO_INTERNAL == 16 && ZOO_PROVIDER_FAILED == 17 &&
          ZOO_AUTHENTICATION_FAILED == 18);
    for (int s = 0; s <= ZOO_AUTHENTICATION_FAILED; s++) {
        const char *text = zoo_status_str(s);
        REQUIRE(text != NULL);
        CHECK_STR(text, expected[s]);
    }
    const int unknown[] = {-1, 19, 99, 1 << 30, (int)0x80000000u};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        CHECK_STR(zoo_status_str(unknown[i]), "unknown status");
    }
    CHECK(zoo_status_str(ZOO_OK) == zoo_status_str(ZOO_OK)); /* static storage */
}

/* NULL handles and NULL out-pointers: ZOO_INVALID_ARGUMENT with a message. */
void test_null_arguments(void) {
    char *err = NULL;
    zoo_agent *agent_out = SENTINEL_AGENT;
    zoo_model *model_out = SENTINEL_MODEL;
    zoo_chat *chat_out = SENTINEL_CHAT;
    char *str_out = SENTINEL_STR;
    bool done = true;

    /* The void frees ignore NULL. */
    zoo_agent_free(NULL);
    zoo_chat_free(NULL);
    zoo_model_free(NULL);
    zoo_string_free(NULL);

    CHECK_STATUS(zoo_agent_create(NULL, &agent_out, &err), ZOO_INVALID_ARGUMENT, err);
    CHECK_ERROR_MESSAGE(err);
    CHECK_STATUS(zoo_agent_create("{\"model_path\": \"x.gguf\"}", NULL, &err),
                 ZOO_INVALID_ARGUMENT, err);
    CHECK_ERROR_MESSAGE(err);
    CHECK_STATUS(zoo_agent_create_with_model(NULL, NULL, &agent_out, &err), ZOO_INVALID_ARGUMENT,
                 err);
    CHECK_ERROR_MESSAGE(err);
    CHECK_STATUS(zoo_agent_create_mock(NULL, NULL, 0, NULL, &err), ZOO_INVALID_ARGUMENT, err);
    CHECK_ERROR_MESSAGE(err);
    CHECK(agent_out == SENTINEL_AGENT);

    CHECK_STATUS(zoo_agent_set_system_prompt(NULL, "x", &err), ZOO_INVALID_ARGUMENT, err);
    CHECK_ERROR_MESSAGE(err);
    CHECK_STATUS(zoo_agent_stop(NULL), ZOO_INVALID_ARGUMENT, NULL);
    CHECK_STATUS(zoo_agent_history_json(NULL, &str_out, &err), ZOO_INVALID_ARGUMENT, err);
    CHECK_ERROR_MESSAGE(err);
    CHECK_STATUS(zoo_agent_set_history_json(NULL, "[]", &err), ZOO_INVALID_ARGUMENT, err);
    CHECK_ERROR_MESSAGE(err);
    CHECK_STATUS(zoo_agent_clear_history(NULL, &err), ZOO_INVALID_ARGUMENT, err);
    CHECK_ERROR_MESSAGE(err);
    CHECK_STATUS(zoo_agent_chat(NULL, "hi", NULL, NULL, &str_out, &err), ZOO_INVALID_ARGUMENT,
                 err);
    CHECK_ERROR_MESSAGE(err);
    CHECK_STATUS(zoo_agent_chat_async(NULL, "hi", NULL, NULL, &chat_out, &err),
                 ZOO_INVALID_ARGUMENT, err);
    CHECK_ERROR_MESSAGE(err);
    CHECK_STATUS(zoo_chat_wait(NULL, 0, &done, &str_out, &err), ZOO_INVALID_ARGUMENT, err);
    CHECK_ERROR_MESSAGE(err);
    CHECK_STATUS(zoo_chat_poll(NULL, &done), ZOO_INVALID_ARGUMENT, NULL);
    CHECK_STATUS(zoo_chat_cancel(NULL), ZOO_INVALID_ARGUMENT, NULL);
    CHECK_STATUS(zoo_model_load(NULL, NULL, &model_out, &err), ZOO_INVALID_ARGUMENT, err);
    CHECK_ERROR_MESSAGE(err);
    CHECK_STATUS(zoo_model_load_with_progress(NULL, NULL, NULL, NULL, &model_out, &err),
                 ZOO_INVALID_ARGUMENT, err);
    CHECK_ERROR_MESSAGE(err);
    CHECK_STATUS(zoo_model_load(th_model_path(), NULL, NULL, &err), ZOO_INVALID_ARGUMENT, err);
    CHECK_ERROR_MESSAGE(err);
    CHECK_STATUS(zoo_model_metadata_json(NULL, &str_out, &err), ZOO_INVALID_ARGUMENT, err);
    CHECK_ERROR_MESSAGE(err);
    CHECK_STATUS(zoo_agent_register_tool(NULL, "t", "d", "{\"type\":\"object\"}", noop_tool,
                                         NULL, NULL, &err),
                 ZOO_INVALID_ARGUMENT, err);
    CHECK_ERROR_MESSAGE(err);
    CHECK_STATUS(zoo_agent_unregister_tool(NULL, "t", NULL, &err), ZOO_INVALID_ARGUMENT, err);
    CHECK_ERROR_MESSAGE(err);
    CHECK_STATUS(zoo_tool_result_set_json(NULL, "1", &err), ZOO_INVALID_ARGUMENT, err);
    CHECK_ERROR_MESSAGE(err);
    CHECK_STATUS(zoo_tool_result_set_error(NULL, "boom", &err), ZOO_INVALID_ARGUMENT, err);
    CHECK_ERROR_MESSAGE(err);
    CHECK(model_out == SENTINEL_MODEL && chat_out == SENTINEL_CHAT && str_out == SENTINEL_STR);
    CHECK(done == true);

    /* With a live agent: NULL strings and NULL out-pointers. */
    zoo_agent *agent = mock_agent(NULL);
    REQUIRE(agent != NULL);
    zoo_chat *chat = NULL;
    CHECK_STATUS(zoo_agent_history_json(agent, NULL, &err), ZOO_INVALID_ARGUMENT, err);
    CHECK_ERROR_MESSAGE(err);
    CHECK_STATUS(zoo_agent_set_history_json(agent, NULL, &err), ZOO_INVALID_ARGUMENT, err);
    CHECK_ERROR_MESSAGE(err);
    CHECK_STATUS(zoo_agent_chat(agent, NULL, NULL, NULL, &str_out, &err), ZOO_INVALID_ARGUMENT,
                 err);
    CHECK_ERROR_MESSAGE(err);
    CHECK_STATUS(zoo_agent_chat(agent, "hi", NULL, NULL, NULL, &err), ZOO_INVALID_ARGUMENT, err);
    CHECK_ERROR_MESSAGE(err);
    CHECK_STATUS(zoo_agent_chat_async(agent, NULL, NULL, NULL, &chat_out, &err),
                 ZOO_INVALID_ARGUMENT, err);
    CHECK_ERROR_MESSAGE(err);
    CHECK_STATUS(zoo_agent_chat_async(agent, "hi", NULL, NULL, NULL, &err), ZOO_INVALID_ARGUMENT,
                 err);
    CHECK_ERROR_MESSAGE(err);
    CHECK_STATUS(zoo_agent_unregister_tool(agent, NULL, NULL, &err), ZOO_INVALID_ARGUMENT, err);
    CHECK_ERROR_MESSAGE(err);
    CHECK(str_out == SENTINEL_STR && chat_out == SENTINEL_CHAT);

    /* A NULL system prompt is allowed: it removes the prompt. */
    CHECK_STATUS(zoo_agent_set_system_prompt(agent, NULL, &err), ZOO_OK, err);

    REQUIRE_STATUS(zoo_agent_chat_async(agent, "hi", NULL, NULL, &chat, &err), ZOO_OK, err);
    CHECK_STATUS(zoo_chat_wait(chat, -1, NULL, NULL, &err), ZOO_INVALID_ARGUMENT, err);
    CHECK_ERROR_MESSAGE(err);
    CHECK_STATUS(zoo_chat_poll(chat, NULL), ZOO_INVALID_ARGUMENT, NULL);
    CHECK_STATUS(zoo_chat_wait(chat, -1, &done, NULL, &err), ZOO_OK, err);
    CHECK(done);
    zoo_chat_free(chat);

    /* out_error is optional: failures without it still return the status. */
    CHECK_STATUS(zoo_agent_chat(agent, NULL, NULL, NULL, &str_out, NULL), ZOO_INVALID_ARGUMENT,
                 NULL);
    CHECK_STATUS(zoo_agent_create("{", &agent_out, NULL), ZOO_INVALID_JSON, NULL);
    CHECK(str_out == SENTINEL_STR && agent_out == SENTINEL_AGENT);
    zoo_agent_free(agent);
}

/* Text that is not UTF-8 is ZOO_INVALID_ARGUMENT wherever a string goes in. */
void test_invalid_utf8(void) {
    char *err = NULL;
    zoo_agent *agent_out = SENTINEL_AGENT;
    zoo_model *model_out = SENTINEL_MODEL;
    char *str_out = SENTINEL_STR;
    zoo_chat *chat_out = SENTINEL_CHAT;
    atomic_int freed;
    atomic_init(&freed, 0);

    CHECK_STATUS(zoo_agent_create(BAD_UTF8, &agent_out, &err), ZOO_INVALID_ARGUMENT, err);
    CHECK_ERROR_MESSAGE(err);
    CHECK_STATUS(zoo_agent_create("{\"model_path\": \"\xff.gguf\"}", &agent_out, &err),
                 ZOO_INVALID_ARGUMENT, err);
    CHECK_ERROR_MESSAGE(err);
    CHECK_STATUS(zoo_agent_create_mock(BAD_UTF8, NULL, 0, &agent_out, &err),
                 ZOO_INVALID_ARGUMENT, err);
    CHECK_ERROR_MESSAGE(err);
    CHECK_STATUS(zoo_agent_create_mock(NULL, "[\"\xff\"]", 0, &agent_out, &err),
                 ZOO_INVALID_ARGUMENT, err);
    CHECK_ERROR_MESSAGE(err);
    CHECK_STATUS(zoo_model_load(BAD_UTF8, NULL, &model_out, &err), ZOO_INVALID_ARGUMENT, err);
    CHECK_ERROR_MESSAGE(err);
    CHECK_STATUS(zoo_model_load(th_model_path(), BAD_UTF8, &model_out, &err),
                 ZOO_INVALID_ARGUMENT, err);
    CHECK_ERROR_MESSAGE(err);
    CHECK(agent_out == SENTINEL_AGENT && model_out == SENTINEL_MODEL);

    zoo_agent *agent = mock_agent(NULL);
    REQUIRE(agent != NULL);
    CHECK_STATUS(zoo_agent_chat(agent, "caf\xc3", NULL, NULL, &str_out, &err),
                 ZOO_INVALID_ARGUMENT, err);
    CHECK_ERROR_MESSAGE(err);
    CHECK_STATUS(zoo_agent_chat_async(agent, BAD_UTF8, NULL, NULL, &chat_out, &err),
                 ZOO_INVALID_ARGUMENT, err);
    CHECK_ERROR_MESSAGE(err);
    zoo_chat_options opts = {0};
    opts.rag_context = BAD_UTF8;
    CHECK_STATUS(zoo_agent_chat(agent, "hi", &opts, NULL, &str_out, &err), ZOO_INVALID_ARGUMENT,
                 err);
    CHECK_ERROR_MESSAGE(err);
    opts.rag_context = NULL;
    opts.tool_choice = ZOO_TOOL_CHOICE_NAMED;
    opts.tool_name = BAD_UTF8;
    CHECK_STATUS(zoo_agent_chat(agent, "hi", &opts, NULL, &str_out, &err), ZOO_INVALID_ARGUMENT,
                 err);
    CHECK_ERROR_MESSAGE(err);
    CHECK_STATUS(zoo_agent_set_system_prompt(agent, BAD_UTF8, &err), ZOO_INVALID_ARGUMENT, err);
    CHECK_ERROR_MESSAGE(err);
    CHECK_STATUS(zoo_agent_set_history_json(agent, BAD_UTF8, &err), ZOO_INVALID_ARGUMENT, err);
    CHECK_ERROR_MESSAGE(err);
    CHECK_STATUS(zoo_agent_register_tool(agent, BAD_UTF8, "d", "{\"type\":\"object\"}",
                                         noop_tool, &freed, th_count_free, &err),
                 ZOO_INVALID_ARGUMENT, err);
    CHECK_ERROR_MESSAGE(err);
    CHECK_STATUS(zoo_agent_register_tool(agent, "t", BAD_UTF8, "{\"type\":\"object\"}",
                                         noop_tool, &freed, th_count_free, &err),
                 ZOO_INVALID_ARGUMENT, err);
    CHECK_ERROR_MESSAGE(err);
    CHECK_STATUS(zoo_agent_register_tool(agent, "t", "d", BAD_UTF8, noop_tool, &freed,
                                         th_count_free, &err),
                 ZOO_INVALID_ARGUMENT, err);
    CHECK_ERROR_MESSAGE(err);
    CHECK(atomic_load(&freed) == 3);
    CHECK_STATUS(zoo_agent_unregister_tool(agent, BAD_UTF8, NULL, &err), ZOO_INVALID_ARGUMENT,
                 err);
    CHECK_ERROR_MESSAGE(err);
    CHECK(str_out == SENTINEL_STR && chat_out == SENTINEL_CHAT);

    /* Nothing reached the history. */
    char *history = NULL;
    CHECK_STATUS(zoo_agent_history_json(agent, &history, &err), ZOO_OK, err);
    CHECK_STR(history, "[]");
    zoo_string_free(history);
    zoo_agent_free(agent);
}

/* Malformed config JSON is ZOO_INVALID_JSON; anything else wrong (not an
 * object, a bad value, an unknown key) is ZOO_INVALID_CONFIG with a message
 * naming the key. */
void test_config_errors(void) {
    struct {
        const char *json;
        zoo_status want;
        const char *key; /* must appear in the message */
    } cases[] = {
        {"{", ZOO_INVALID_JSON, NULL},
        {"", ZOO_INVALID_JSON, NULL},
        {"[]", ZOO_INVALID_CONFIG, "expected a JSON object"},
        {"42", ZOO_INVALID_CONFIG, "expected a JSON object"},
        {"{\"temperature\": -1}", ZOO_INVALID_CONFIG, "temperature"},
        {"{\"top_p\": 0}", ZOO_INVALID_CONFIG, "top_p"},
        {"{\"context_size\": 10}", ZOO_INVALID_CONFIG, "context_size"},
        {"{\"max_tokens\": 0}", ZOO_INVALID_CONFIG, "max_tokens"},
        {"{\"tool_choice\": \"no such choice!\"}", ZOO_INVALID_CONFIG, "tool_choice"},
        {"{\"template\": \"nonsense\"}", ZOO_INVALID_CONFIG, "template"},
        {"{\"no_such_key\": 1}", ZOO_INVALID_CONFIG, "no_such_key"},
        {"{\"temperature\": \"hot\"}", ZOO_INVALID_CONFIG, "temperature"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *err = NULL;
        zoo_agent *agent = SENTINEL_AGENT;
        /* The mock validates the config exactly as zoo_agent_create does. */
        zoo_status s = zoo_agent_create_mock(cases[i].json, NULL, 0, &agent, &err);
        CHECKF(s == cases[i].want, "config %s: status %d (%s), expected %d: %s", cases[i].json,
               (int)s, zoo_status_str(s), (int)cases[i].want, err ? err : "");
        CHECK(agent == SENTINEL_AGENT);
        if (cases[i].key) {
            CHECKF(err && strstr(err, cases[i].key), "message for %s does not name `%s`: %s",
                   cases[i].json, cases[i].key, err ? err : "(null)");
        }
        CHECK_ERROR_MESSAGE(err);

        /* zoo_agent_create checks the config before it touches a model. */
        s = zoo_agent_create(cases[i].json, &agent, &err);
        CHECKF(s == cases[i].want, "zoo_agent_create(%s): %d (%s), expected %d: %s",
               cases[i].json, (int)s, zoo_status_str(s), (int)cases[i].want, err ? err : "");
        CHECK(agent == SENTINEL_AGENT);
        CHECK_ERROR_MESSAGE(err);
    }

    /* The exact message, the same in every front door (zoo-core's
     * tests/engine/config_errors.rs, tests/python/test_config_errors.py,
     * tests/node/config.test.mjs). */
    struct {
        const char *json, *message;
    } exact[] = {
        {"{\"temperature\": \"hot\"}",
         "invalid config `temperature`: expected a finite number >= 0 (0 is greedy), got \"hot\""},
        {"{\"context_size\": -1}",
         "invalid config `context_size`: expected 0 (the model's trained context) or a whole "
         "number from 64 to 4294967295, got -1"},
        {"{\"gpu_layers\": -2}",
         "invalid config `gpu_layers`: expected a whole number from -1 to 2147483647 (-1 offloads "
         "every layer), got -2"},
        {"{\"temperature\": NaN}",
         "invalid config `temperature`: expected a finite number >= 0 (0 is greedy), got NaN"},
        {"{\"repeat_penalty\": Infinity}",
         "invalid config `repeat_penalty`: expected a finite number > 0 (1 disables it), got "
         "Infinity"},
        {"[1]",
         "invalid config `config`: expected a JSON object such as {\"model_path\": \"model.gguf\"}, "
         "got an array"},
    };
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++) {
        char *err = NULL;
        zoo_agent *agent = SENTINEL_AGENT;
        zoo_status s = zoo_agent_create_mock(exact[i].json, NULL, 0, &agent, &err);
        CHECKF(s == ZOO_INVALID_CONFIG && err && strcmp(err, exact[i].message) == 0,
               "config %s: status %d, message \"%s\", expected \"%s\"", exact[i].json, (int)s,
               err ? err : "(null)", exact[i].message);
        CHECK(agent == SENTINEL_AGENT);
        th_free_string(&err);
    }
    {
        const char *prefix = "invalid config `temprature`: unknown key; the config keys are "
                             "`model_path`, `context_size`, ";
        char *err = NULL;
        zoo_agent *agent = SENTINEL_AGENT;
        zoo_status s = zoo_agent_create_mock("{\"temprature\": 0.5}", NULL, 0, &agent, &err);
        CHECKF(s == ZOO_INVALID_CONFIG && err && strncmp(err, prefix, strlen(prefix)) == 0,
               "unknown key: status %d, message \"%s\"", (int)s, err ? err : "(null)");
        CHECK(agent == SENTINEL_AGENT);
        th_free_string(&err);
    }

    /* zoo_agent_create needs a model_path. */
    char *err = NULL;
    zoo_agent *agent = SENTINEL_AGENT;
    CHECK_STATUS(zoo_agent_create("{}", &agent, &err), ZOO_INVALID_CONFIG, err);
    CHECKF(err && strstr(err, "model_path"), "message: %s", err ? err : "(null)");
    CHECK_ERROR_MESSAGE(err);
    CHECK(agent == SENTINEL_AGENT);
}

void test_mock_script_errors(void) {
    const char *bad[] = {"not json", "{\"a\": 1}", "[1]", "[[\"x\"]]", "[{\"x\": 1}]",
                         "[{\"error\": 5}]"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *err = NULL;
        zoo_agent *agent = SENTINEL_AGENT;
        zoo_status s = zoo_agent_create_mock(NULL, bad[i], 0, &agent, &err);
        CHECKF(s == ZOO_INVALID_JSON, "replies %s: %d (%s): %s", bad[i], (int)s,
               zoo_status_str(s), err ? err : "");
        CHECK(agent == SENTINEL_AGENT);
        CHECK_ERROR_MESSAGE(err);
    }

    /* zoo_agent_create_mock is zoo_agent_create with the mock provider
     * added: a config naming a provider or a model of its own, and a delay
     * past the provider's bound, are refused in the provider's words. */
    struct {
        const char *config;
        uint32_t delay_ms;
        const char *message;
    } refused[] = {
        {"{\"provider\": {\"type\": \"mock\"}}", 0,
         "invalid config `provider`: zoo_agent_create_mock makes the mock provider, so the config "
         "may not name one (got `mock`); give it to zoo_agent_create instead"},
        {"{\"model_path\": \"model.gguf\"}", 0,
         "invalid config `provider`: `model_path` and `provider` cannot both be given (an agent "
         "runs on a local model or on a provider)"},
        {NULL, 60001,
         "invalid config `provider.piece_delay_ms`: expected a whole number from 0 to 60000, got "
         "60001"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        char *err = NULL;
        zoo_agent *agent = SENTINEL_AGENT;
        zoo_status s = zoo_agent_create_mock(refused[i].config, "[]", refused[i].delay_ms, &agent,
                                             &err);
        CHECKF(s == ZOO_INVALID_CONFIG && err && strcmp(err, refused[i].message) == 0,
               "config %s, delay %u: status %d, message \"%s\", expected \"%s\"",
               refused[i].config ? refused[i].config : "NULL", (unsigned)refused[i].delay_ms,
               (int)s, err ? err : "(null)", refused[i].message);
        CHECK(agent == SENTINEL_AGENT);
        th_free_string(&err);
    }
}

/* The mock chosen in zoo_agent_create's config, as a user testing their own
 * code without a model would: the scripted replies in order (an error item
 * fails its chat), then the echo. */
void test_mock_provider_in_config(void) {
    char *err = NULL, *response = NULL;
    zoo_agent *agent = NULL;
    REQUIRE_STATUS(zoo_agent_create("{\"temperature\": 0, \"provider\": {\"type\": \"mock\", "
                                    "\"replies\": [\"Hello there\", {\"error\": \"no luck\"}], "
                                    "\"piece_delay_ms\": 1}}",
                                    &agent, &err),
                   ZOO_OK, err);
    if (CHECK_STATUS(zoo_agent_chat(agent, "hi", NULL, NULL, &response, &err), ZOO_OK, err)) {
        CHECKF(strstr(response, "\"text\":\"Hello there\""), "response: %s", response);
        th_free_string(&response);
    }
    CHECK_STATUS(zoo_agent_chat(agent, "again", NULL, NULL, &response, &err),
                 ZOO_INFERENCE_FAILED, err);
    CHECK_STR(err, "inference failed: no luck");
    th_free_string(&err);
    if (CHECK_STATUS(zoo_agent_chat(agent, "third", NULL, NULL, &response, &err), ZOO_OK, err)) {
        CHECKF(strstr(response, "\"text\":\"echo: third\""), "response: %s", response);
        th_free_string(&response);
    }
    zoo_agent_free(agent);
}

/* Writes a small file that is not a GGUF; returns its malloc'd path. */
static char *write_temp_file(const char *content) {
    char *path = strdup("/tmp/zoo-test-XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0) {
        free(path);
        return NULL;
    }
    if (write(fd, content, strlen(content)) < 0) CHECK(!"write failed");
    close(fd);
    return path;
}

void test_model_load_errors(void) {
    char *err = NULL;
    zoo_model *model = SENTINEL_MODEL;
    zoo_agent *agent = SENTINEL_AGENT;
    const char *missing = "/nonexistent/zoo/no-such-model.gguf";

    CHECK_STATUS(zoo_model_load(missing, NULL, &model, &err), ZOO_MODEL_LOAD_FAILED, err);
    CHECKF(err && strstr(err, missing), "the message should name the path: %s",
           err ? err : "(null)");
    CHECK_ERROR_MESSAGE(err);

    char *junk = write_temp_file("this is not a GGUF file\n");
    REQUIRE(junk != NULL);
    CHECK_STATUS(zoo_model_load(junk, NULL, &model, &err), ZOO_MODEL_LOAD_FAILED, err);
    CHECK_ERROR_MESSAGE(err);
    CHECK_STATUS(zoo_model_load("/tmp", NULL, &model, &err), ZOO_MODEL_LOAD_FAILED, err);
    CHECK_ERROR_MESSAGE(err);

    /* zoo_agent_create loads the model itself. */
    char config[512];
    snprintf(config, sizeof config, "{\"model_path\": \"%s\"}", missing);
    CHECK_STATUS(zoo_agent_create(config, &agent, &err), ZOO_MODEL_LOAD_FAILED, err);
    CHECK_ERROR_MESSAGE(err);
    snprintf(config, sizeof config, "{\"model_path\": \"%s\"}", junk);
    CHECK_STATUS(zoo_agent_create(config, &agent, &err), ZOO_MODEL_LOAD_FAILED, err);
    CHECK_ERROR_MESSAGE(err);

    /* Bad load parameters are reported before the file is opened. */
    CHECK_STATUS(zoo_model_load(missing, "{", &model, &err), ZOO_INVALID_JSON, err);
    CHECK_ERROR_MESSAGE(err);
    CHECK_STATUS(zoo_model_load(missing, "{\"no_such_param\": 1}", &model, &err),
                 ZOO_INVALID_CONFIG, err);
    CHECKF(err && strstr(err, "`no_such_param`: unknown key"), "message: %s",
           err ? err : "(null)");
    CHECK_ERROR_MESSAGE(err);
    CHECK_STATUS(zoo_model_load(missing, "{\"gpu_layers\": -2}", &model, &err),
                 ZOO_INVALID_CONFIG, err);
    CHECKF(err && strcmp(err, "invalid config `gpu_layers`: expected a whole number from -1 to "
                              "2147483647 (-1 offloads every layer), got -2") == 0,
           "message: %s", err ? err : "(null)");
    CHECK_ERROR_MESSAGE(err);
    /* An array is not an object (serde would read it as a tuple). */
    CHECK_STATUS(zoo_model_load(missing, "[-1, true]", &model, &err), ZOO_INVALID_CONFIG, err);
    CHECKF(err && strstr(err, "`model_params`: expected a JSON object"), "message: %s",
           err ? err : "(null)");
    CHECK_ERROR_MESSAGE(err);
    CHECK_STATUS(zoo_model_load(missing, "{\"use_mmap\": \"yes\"}", &model, &err),
                 ZOO_INVALID_CONFIG, err);
    CHECKF(err && strstr(err, "`use_mmap`"), "message: %s", err ? err : "(null)");
    CHECK_ERROR_MESSAGE(err);
    CHECK_STATUS(zoo_model_load_with_progress(missing, NULL, NULL, NULL, &model, &err),
                 ZOO_MODEL_LOAD_FAILED, err);
    CHECK_ERROR_MESSAGE(err);

    CHECK(model == SENTINEL_MODEL && agent == SENTINEL_AGENT);
    unlink(junk);
    free(junk);
}

/* Tool registration failures: each status, and free_user_data runs once. */
void test_register_tool_errors(void) {
    zoo_agent *agent = mock_agent(NULL);
    REQUIRE(agent != NULL);
    const char *object = "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}";
    struct {
        const char *name, *description, *schema;
        bool handler;
        zoo_status want;
    } cases[] = {
        {NULL, "d", object, true, ZOO_INVALID_ARGUMENT},
        {"t", NULL, object, true, ZOO_INVALID_ARGUMENT},
        {"t", "d", NULL, true, ZOO_INVALID_ARGUMENT},
        {"t", "d", object, false, ZOO_INVALID_ARGUMENT},
        {"", "d", object, true, ZOO_INVALID_ARGUMENT},
        {"bad name", "d", object, true, ZOO_INVALID_ARGUMENT},
        {"x2345678901234567890123456789012345678901234567890123456789012345", "d", object, true,
         ZOO_INVALID_ARGUMENT}, /* 65 characters */
        {"t", "d", "{", true, ZOO_INVALID_JSON},
        {"t", "d", "", true, ZOO_INVALID_JSON},
        {"t", "d", "[]", true, ZOO_TOOL_VALIDATION_FAILED},
        {"t", "d", "{\"type\":\"string\"}", true, ZOO_TOOL_VALIDATION_FAILED},
        {"t", "d", "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"nonsense\"}}}", true,
         ZOO_TOOL_VALIDATION_FAILED},
        {"t", "d", "{\"type\":\"object\",\"required\":\"a\"}", true, ZOO_TOOL_VALIDATION_FAILED},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        atomic_int freed;
        atomic_init(&freed, 0);
        char *err = NULL;
        zoo_status s =
            zoo_agent_register_tool(agent, cases[i].name, cases[i].description, cases[i].schema,
                                    cases[i].handler ? noop_tool : NULL, &freed, th_count_free,
                                    &err);
        CHECKF(s == cases[i].want, "case %zu (name %s, schema %s): %d (%s), expected %d: %s", i,
               cases[i].name ? cases[i].name : "NULL",
               cases[i].schema ? cases[i].schema : "NULL", (int)s, zoo_status_str(s),
               (int)cases[i].want, err ? err : "");
        CHECKF(atomic_load(&freed) == 1, "case %zu: free_user_data ran %d times", i,
               atomic_load(&freed));
        CHECK_ERROR_MESSAGE(err);
    }
    /* A NULL agent also releases user_data. */
    atomic_int freed;
    atomic_init(&freed, 0);
    CHECK_STATUS(zoo_agent_register_tool(NULL, "t", "d", object, noop_tool, &freed,
                                         th_count_free, NULL),
                 ZOO_INVALID_ARGUMENT, NULL);
    CHECK(atomic_load(&freed) == 1);
    /* A NULL free_user_data is allowed on failure too. */
    CHECK_STATUS(zoo_agent_register_tool(agent, NULL, "d", object, noop_tool, &freed, NULL, NULL),
                 ZOO_INVALID_ARGUMENT, NULL);
    CHECK(atomic_load(&freed) == 1);
    zoo_agent_free(agent);
}

/* Tool-choice values: unknown integers and bad names are invalid arguments;
 * a well-formed name that is not registered is ZOO_TOOL_NOT_FOUND. */
void test_tool_choice_errors(void) {
    zoo_agent *agent = mock_agent("[\"first\"]");
    REQUIRE(agent != NULL);
    char *err = NULL, *out = SENTINEL_STR;
    zoo_chat *chat = SENTINEL_CHAT;
    zoo_chat_options opts = {0};
    const int bad_values[] = {99, -1, 5};
    for (size_t i = 0; i < sizeof bad_values / sizeof bad_values[0]; i++) {
        opts.tool_choice = bad_values[i];
        CHECK_STATUS(zoo_agent_chat(agent, "hi", &opts, NULL, &out, &err), ZOO_INVALID_ARGUMENT,
                     err);
        CHECK_ERROR_MESSAGE(err);
        CHECK_STATUS(zoo_agent_chat_async(agent, "hi", &opts, NULL, &chat, &err),
                     ZOO_INVALID_ARGUMENT, err);
        CHECK_ERROR_MESSAGE(err);
    }
    opts.tool_choice = ZOO_TOOL_CHOICE_NAMED;
    opts.tool_name = NULL;
    CHECK_STATUS(zoo_agent_chat(agent, "hi", &opts, NULL, &out, &err), ZOO_INVALID_ARGUMENT,
                 err);
    CHECK_ERROR_MESSAGE(err);
    opts.tool_name = "not a name!";
    CHECK_STATUS(zoo_agent_chat(agent, "hi", &opts, NULL, &out, &err), ZOO_INVALID_ARGUMENT,
                 err);
    CHECK_ERROR_MESSAGE(err);
    opts.tool_name = "no_such_tool";
    CHECK_STATUS(zoo_agent_chat(agent, "hi", &opts, NULL, &out, &err), ZOO_TOOL_NOT_FOUND, err);
    CHECKF(err && strstr(err, "no_such_tool"), "message: %s", err ? err : "(null)");
    CHECK_ERROR_MESSAGE(err);
    /* Asynchronously, the same error comes through the handle. */
    REQUIRE_STATUS(zoo_agent_chat_async(agent, "hi", &opts, NULL, &chat, &err), ZOO_OK, err);
    bool done = false;
    CHECK_STATUS(zoo_chat_wait(chat, -1, &done, &out, &err), ZOO_TOOL_NOT_FOUND, err);
    CHECK_ERROR_MESSAGE(err);
    zoo_chat_free(chat);
    CHECK(out == SENTINEL_STR);

    /* The failed turns left no trace, and the agent still works: the first
     * scripted reply was never consumed by them. */
    char *history = NULL;
    CHECK_STATUS(zoo_agent_history_json(agent, &history, &err), ZOO_OK, err);
    CHECK_STR(history, "[]");
    zoo_string_free(history);
    out = NULL;
    CHECK_STATUS(zoo_agent_chat(agent, "hi", NULL, NULL, &out, &err), ZOO_OK, err);
    char *text = jm_string(out, "text");
    CHECK_STR(text, "first");
    free(text);
    zoo_string_free(out);
    zoo_agent_free(agent);
}

/* An inference failure injected by the mock is ZOO_INFERENCE_FAILED; the
 * turn is undone and the agent stays usable. */
void test_inference_failure(void) {
    zoo_agent *agent = mock_agent("[{\"error\": \"the GPU caught fire\"}, \"recovered\"]");
    REQUIRE(agent != NULL);
    char *err = NULL, *out = SENTINEL_STR;
    CHECK_STATUS(zoo_agent_chat(agent, "hi", NULL, NULL, &out, &err), ZOO_INFERENCE_FAILED, err);
    CHECKF(err && strstr(err, "the GPU caught fire"), "message: %s", err ? err : "(null)");
    CHECK_ERROR_MESSAGE(err);
    CHECK(out == SENTINEL_STR);

    char *history = NULL;
    CHECK_STATUS(zoo_agent_history_json(agent, &history, &err), ZOO_OK, err);
    CHECK_STR(history, "[]");
    zoo_string_free(history);

    out = NULL;
    REQUIRE_STATUS(zoo_agent_chat(agent, "again", NULL, NULL, &out, &err), ZOO_OK, err);
    char *text = jm_string(out, "text");
    CHECK_STR(text, "recovered");
    free(text);
    zoo_string_free(out);

    /* Through an async chat: the status and message arrive in both the
     * handle and on_complete. */
    zoo_agent_free(agent);
    agent = mock_agent("[{\"error\": \"boom\"}]");
    REQUIRE(agent != NULL);
    chat_ctx ctx;
    chat_ctx_init(&ctx);
    zoo_chat_callbacks cb = chat_ctx_callbacks(&ctx, true);
    zoo_chat *chat = NULL;
    REQUIRE_STATUS(zoo_agent_chat_async(agent, "hi", NULL, &cb, &chat, &err), ZOO_OK, err);
    bool done = false;
    out = SENTINEL_STR;
    CHECK_STATUS(zoo_chat_wait(chat, -1, &done, &out, &err), ZOO_INFERENCE_FAILED, err);
    CHECK(!done); /* outputs untouched on failure */
    CHECK(out == SENTINEL_STR);
    CHECKF(err && strstr(err, "boom"), "message: %s", err ? err : "(null)");
    CHECK_ERROR_MESSAGE(err);
    CHECK(th_wait_int(&ctx.freed, 1, 2000));
    CHECK(atomic_load(&ctx.completes) == 1);
    CHECK(ctx.complete_status == ZOO_INFERENCE_FAILED);
    CHECKF(ctx.complete_text && strstr(ctx.complete_text, "boom"), "on_complete text: %s",
           ctx.complete_text ? ctx.complete_text : "(null)");
    zoo_chat_free(chat);
    zoo_agent_free(agent);
    chat_ctx_destroy(&ctx);
}

/* zoo_agent_set_history_json: role order, JSON shape, and nothing changes
 * on error. */
void test_history_errors(void) {
    zoo_agent *agent = mock_agent(NULL);
    REQUIRE(agent != NULL);
    char *err = NULL;
    const char *good = "[{\"role\":\"system\",\"content\":\"Be brief.\"},"
                       "{\"role\":\"user\",\"content\":\"hi\"},"
                       "{\"role\":\"assistant\",\"content\":\"hello\"}]";
    REQUIRE_STATUS(zoo_agent_set_history_json(agent, good, &err), ZOO_OK, err);
    /* Visible when the call returns (test history_visible_on_return). */
    char *before = NULL;
    REQUIRE_STATUS(zoo_agent_history_json(agent, &before, &err), ZOO_OK, err);
    CHECK(jm_count(before, "") == 3);

    struct {
        const char *json;
        zoo_status want;
    } cases[] = {
        {"[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"user\",\"content\":\"b\"}]",
         ZOO_INVALID_MESSAGE_SEQUENCE},
        {"[{\"role\":\"user\",\"content\":\"a\"},"
         "{\"role\":\"tool\",\"content\":\"r\",\"tool_call_id\":\"x\",\"name\":\"t\"}]",
         ZOO_INVALID_MESSAGE_SEQUENCE},
        {"[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"assistant\",\"content\":\"\","
         "\"tool_calls\":[{\"id\":\"c1\",\"name\":\"t\",\"arguments\":{}}]},"
         "{\"role\":\"user\",\"content\":\"b\"}]",
         ZOO_INVALID_MESSAGE_SEQUENCE},
        {"{", ZOO_INVALID_JSON},
        {"{\"role\":\"user\"}", ZOO_INVALID_JSON},
        {"[{\"role\":\"wizard\",\"content\":\"a\"}]", ZOO_INVALID_JSON},
        {"[{\"content\":\"no role\"}]", ZOO_INVALID_JSON},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        zoo_status s = zoo_agent_set_history_json(agent, cases[i].json, &err);
        CHECKF(s == cases[i].want, "history %s: %d (%s), expected %d: %s", cases[i].json, (int)s,
               zoo_status_str(s), (int)cases[i].want, err ? err : "");
        CHECK_ERROR_MESSAGE(err);
        char *after = NULL;
        CHECK_STATUS(zoo_agent_history_json(agent, &after, &err), ZOO_OK, err);
        CHECK_STR(after, before);
        zoo_string_free(after);
    }
    zoo_string_free(before);
    zoo_agent_free(agent);
}

/* The setters wait for the inference thread, so when they return the new
 * history must be what zoo_agent_history_json reads. */
void test_history_visible_on_return(void) {
    zoo_agent *agent = mock_agent(NULL);
    REQUIRE(agent != NULL);
    char *err = NULL;
    int stale_history = 0, stale_prompt = 0;
    const int rounds = 2000; /* the race shows in about 1 round in 300 */
    for (int i = 0; i < rounds; i++) {
        char json[160], prompt[32];
        /* A restored history must be able to take the next user message. */
        snprintf(json, sizeof json,
                 "[{\"role\":\"user\",\"content\":\"m%d\"},"
                 "{\"role\":\"assistant\",\"content\":\"r%d\"}]",
                 i, i);
        REQUIRE_STATUS(zoo_agent_set_history_json(agent, json, &err), ZOO_OK, err);
        char *history = NULL;
        REQUIRE_STATUS(zoo_agent_history_json(agent, &history, &err), ZOO_OK, err);
        stale_history += strcmp(history, json) != 0;
        zoo_string_free(history);

        snprintf(prompt, sizeof prompt, "p%d", i);
        REQUIRE_STATUS(zoo_agent_set_system_prompt(agent, prompt, &err), ZOO_OK, err);
        history = NULL;
        REQUIRE_STATUS(zoo_agent_history_json(agent, &history, &err), ZOO_OK, err);
        char *got = jm_string(history, "0.content");
        stale_prompt += !got || strcmp(got, prompt) != 0;
        free(got);
        zoo_string_free(history);
    }
    CHECKF(stale_history == 0,
           "%d of %d zoo_agent_history_json calls right after zoo_agent_set_history_json "
           "returned the previous history",
           stale_history, rounds);
    CHECKF(stale_prompt == 0,
           "%d of %d zoo_agent_history_json calls right after zoo_agent_set_system_prompt "
           "returned the previous system prompt",
           stale_prompt, rounds);
    zoo_agent_free(agent);
}
