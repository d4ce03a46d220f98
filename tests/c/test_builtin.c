/*
 * test_builtin.c: the built-in tools from C, on the mock and a temporary
 * workspace: zoo_agent_add_builtin_tools (the options, its errors, the
 * user_data freed once), the confirmation callback allowing, refusing and
 * failing (zoo_confirmation_set_error), hostile paths refused (`..`, an
 * absolute path outside, a symlink to /etc), bash's timeout and output
 * cap, the model reading a result's text while the host gets its details,
 * and zoo_agent_stop killing a running bash command.
 */
#define _POSIX_C_SOURCE 200809L

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "json_mini.h"

/* A fresh workspace folder under /tmp; `n` tells the tests apart. */
static void make_workspace(char *dir, size_t size, int n) {
    snprintf(dir, size, "/tmp/zoo-c-builtin-%ld-%d", (long)getpid(), n);
    char command[400];
    snprintf(command, sizeof command, "rm -rf '%s' && mkdir -p '%s'", dir, dir);
    CHECK(system(command) == 0);
}

static void remove_workspace(const char *dir) {
    char command[400];
    snprintf(command, sizeof command, "rm -rf '%s'", dir);
    CHECK(system(command) == 0);
}

static void write_text(const char *dir, const char *name, const char *text) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!CHECK(f != NULL)) return;
    fputs(text, f);
    fclose(f);
}

/* The file's content (caller frees), or NULL when it does not exist. */
static char *read_text(const char *dir, const char *name) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    char *text = calloc(1, 4096);
    size_t n = fread(text, 1, 4095, f);
    text[n] = '\0';
    fclose(f);
    return text;
}

/* A mock agent whose replies are `replies_json` (a JSON array). The
 * tests' calls fail on purpose more often than the default retries allow,
 * and bash's 256 KB of output is cut to fit the mock's window. */
static zoo_agent *mock(const char *replies_json) {
    zoo_agent *agent = NULL;
    char *err = NULL;
    const char *config = "{\"max_tool_retries\": 5, \"max_tool_result_tokens\": 500}";
    if (!CHECK_STATUS(zoo_agent_create_mock(config, replies_json, 0, &agent, &err), ZOO_OK, err)) {
        th_free_string(&err);
        return NULL;
    }
    return agent;
}

static bool has_text(const char *json, const char *path, const char *want) {
    char *got = jm_string(json, path);
    bool same = got && strcmp(got, want) == 0;
    if (!same) th_note("%s: got \"%s\", want \"%s\"", path, got ? got : "(none)", want);
    free(got);
    return same;
}

static bool contains(const char *json, const char *path, const char *part) {
    char *got = jm_string(json, path);
    bool found = got && strstr(got, part) != NULL;
    if (!found) th_note("%s: got \"%s\", want it to hold \"%s\"", path, got ? got : "(none)", part);
    free(got);
    return found;
}

/* What a confirmation callback was asked, and what it answers. */
typedef struct {
    atomic_int asked;
    bool allow;
    const char *fail; /* set as the callback's error when not NULL */
    char last_tool[64];
    char last_args[512];
} asker;

static bool confirm(void *user_data, const char *tool, const char *args, size_t len,
                    zoo_confirmation *confirmation) {
    asker *a = user_data;
    atomic_fetch_add(&a->asked, 1);
    snprintf(a->last_tool, sizeof a->last_tool, "%s", tool);
    snprintf(a->last_args, sizeof a->last_args, "%.*s", (int)len, args);
    if (a->fail) zoo_confirmation_set_error(confirmation, a->fail, NULL);
    return a->allow;
}

static char *options_json(const char *dir, const char *tools) {
    char *json = malloc(1024);
    snprintf(json, 1024, "{\"tools\": %s, \"workspace\": \"%s\", \"bash_deny\": [\"sudo\"]}",
             tools, dir);
    return json;
}

void test_builtin_register_and_errors(void) {
    char dir[256];
    make_workspace(dir, sizeof dir, 1);
    zoo_agent *agent = mock("[]");
    REQUIRE(agent != NULL);
    char *err = NULL;
    atomic_int freed = 0;
    char *options = options_json(dir, "[\"read_file\", \"bash\"]");
    CHECK_STATUS(zoo_agent_add_builtin_tools(agent, options, confirm, &freed, th_count_free, &err),
                 ZOO_OK, err);
    free(options);
    char *tools = NULL;
    CHECK_STATUS(zoo_agent_tools_json(agent, &tools, &err), ZOO_OK, err);
    CHECK(has_text(tools, "0.name", "read_file"));
    CHECK(has_text(tools, "1.name", "bash"));
    th_free_string(&tools);
    CHECK(atomic_load(&freed) == 0);

    /* Each failure frees its user_data at once and adds nothing. */
    atomic_int freed_on_error = 0;
    CHECK_STATUS(zoo_agent_add_builtin_tools(agent, "{not json", confirm, &freed_on_error,
                                             th_count_free, &err),
                 ZOO_INVALID_JSON, err);
    th_free_string(&err);
    options = options_json(dir, "[\"rm_rf\"]");
    CHECK_STATUS(zoo_agent_add_builtin_tools(agent, options, confirm, &freed_on_error,
                                             th_count_free, &err),
                 ZOO_INVALID_ARGUMENT, err);
    CHECK(err && strstr(err, "unknown built-in tool `rm_rf`"));
    th_free_string(&err);
    free(options);
    CHECK_STATUS(zoo_agent_add_builtin_tools(agent, "{\"tools\": [\"read_file\"]}", confirm,
                                             &freed_on_error, th_count_free, &err),
                 ZOO_INVALID_ARGUMENT, err);
    CHECK(err && strstr(err, "missing field `workspace`"));
    th_free_string(&err);
    CHECK_STATUS(zoo_agent_add_builtin_tools(
                     agent, "{\"tools\": [\"read_file\"], \"workspace\": \"/no/such/folder\"}",
                     confirm, &freed_on_error, th_count_free, &err),
                 ZOO_INVALID_ARGUMENT, err);
    th_free_string(&err);
    CHECK_STATUS(zoo_agent_add_builtin_tools(NULL, "{}", confirm, &freed_on_error, th_count_free,
                                             &err),
                 ZOO_INVALID_ARGUMENT, err);
    th_free_string(&err);
    CHECK(atomic_load(&freed_on_error) == 5);

    /* Replacing both tools lets go of the first registration's user_data. */
    options = options_json(dir, "[\"read_file\", \"bash\"]");
    CHECK_STATUS(zoo_agent_add_builtin_tools(agent, options, NULL, NULL, NULL, &err), ZOO_OK, err);
    free(options);
    CHECK(atomic_load(&freed) == 1);
    zoo_agent_free(agent);
    remove_workspace(dir);
}

#define WRITE_CALL                                                                           \
    "\"<tool_call>{\\\"name\\\": \\\"write_file\\\", \\\"arguments\\\": {\\\"path\\\": "   \
    "\\\"notes/a.txt\\\", \\\"content\\\": \\\"hello\\\"}}</tool_call>\""

void test_builtin_confirmation(void) {
    char dir[256];
    make_workspace(dir, sizeof dir, 2);
    char *err = NULL, *out = NULL;
    char *options = options_json(dir, "[\"write_file\"]");

    /* Refused: the model reads why, nothing is written. */
    asker no = {.allow = false};
    zoo_agent *agent = mock("[" WRITE_CALL ", \"Refused.\"]");
    REQUIRE(agent != NULL);
    CHECK_STATUS(zoo_agent_add_builtin_tools(agent, options, confirm, &no, NULL, &err), ZOO_OK,
                 err);
    CHECK_STATUS(zoo_agent_chat(agent, "write it", NULL, NULL, &out, &err), ZOO_OK, err);
    CHECK(atomic_load(&no.asked) == 1);
    CHECK_STR(no.last_tool, "write_file");
    CHECK(strstr(no.last_args, "\"path\":\"notes/a.txt\"") != NULL);
    CHECK(has_text(out, "tool_calls.0.error",
                   "tool `write_file` failed: the user refused this write_file call"));
    CHECK(has_text(out, "tool_errors.0.kind", "tool_handler_failed"));
    th_free_string(&out);
    char *written = read_text(dir, "notes/a.txt");
    CHECK(written == NULL);
    free(written);
    zoo_agent_free(agent);

    /* A failing callback refuses too, with its message. */
    asker broken = {.allow = true, .fail = "no terminal"};
    agent = mock("[" WRITE_CALL ", \"Failed.\"]");
    REQUIRE(agent != NULL);
    CHECK_STATUS(zoo_agent_add_builtin_tools(agent, options, confirm, &broken, NULL, &err),
                 ZOO_OK, err);
    CHECK_STATUS(zoo_agent_chat(agent, "write it", NULL, NULL, &out, &err), ZOO_OK, err);
    CHECK(has_text(out, "tool_calls.0.error",
                   "tool `write_file` failed: the write_file call was refused: the "
                   "confirmation callback failed: no terminal"));
    th_free_string(&out);
    written = read_text(dir, "notes/a.txt");
    CHECK(written == NULL);
    free(written);
    zoo_agent_free(agent);

    /* Allowed: written, parent folder created; the record has the details. */
    asker yes = {.allow = true};
    agent = mock("[" WRITE_CALL ", \"Written.\"]");
    REQUIRE(agent != NULL);
    CHECK_STATUS(zoo_agent_add_builtin_tools(agent, options, confirm, &yes, NULL, &err), ZOO_OK,
                 err);
    CHECK_STATUS(zoo_agent_chat(agent, "write it", NULL, NULL, &out, &err), ZOO_OK, err);
    CHECK(has_text(out, "tool_calls.0.result.text", "wrote 5 bytes to notes/a.txt"));
    double bytes = 0;
    CHECK(jm_number(out, "tool_calls.0.result.details.bytes", &bytes) && bytes == 5);
    th_free_string(&out);
    written = read_text(dir, "notes/a.txt");
    CHECK_STR(written, "hello");
    free(written);
    zoo_agent_free(agent);
    free(options);
    remove_workspace(dir);
}

#define READ_CALL(path)                                                                      \
    "\"<tool_call>{\\\"name\\\": \\\"read_file\\\", \\\"arguments\\\": {\\\"path\\\": \\\"" \
    path "\\\"}}</tool_call>\""

void test_builtin_hostile_paths(void) {
    char dir[256], link[300];
    make_workspace(dir, sizeof dir, 3);
    write_text(dir, "inside.txt", "fine\n");
    snprintf(link, sizeof link, "%s/etc_link", dir);
    REQUIRE(symlink("/etc", link) == 0);
    zoo_agent *agent = mock("[" READ_CALL("../outside.txt") ", " READ_CALL(
        "/etc/passwd") ", " READ_CALL("etc_link/passwd") ", " READ_CALL("inside.txt") ", \"ok\"]");
    REQUIRE(agent != NULL);
    char *err = NULL, *out = NULL;
    char *options = options_json(dir, "[\"read_file\"]");
    CHECK_STATUS(zoo_agent_add_builtin_tools(agent, options, NULL, NULL, NULL, &err), ZOO_OK, err);
    free(options);
    CHECK_STATUS(zoo_agent_chat(agent, "read", NULL, NULL, &out, &err), ZOO_OK, err);
    CHECK(contains(out, "tool_calls.0.error", "'../outside.txt' is outside the workspace"));
    CHECK(contains(out, "tool_calls.1.error", "'/etc/passwd' is outside the workspace"));
    CHECK(contains(out, "tool_calls.2.error", "'etc_link/passwd' is outside the workspace"));
    CHECK(has_text(out, "tool_calls.3.result.text", "     1\tfine\n"));
    /* The model read the text alone: the history's tool message. */
    char *history = NULL;
    CHECK_STATUS(zoo_agent_history_json(agent, &history, &err), ZOO_OK, err);
    CHECK(has_text(history, "8.content", "     1\tfine\n"));
    th_free_string(&history);
    th_free_string(&out);
    zoo_agent_free(agent);
    remove_workspace(dir);
}

#define BASH_CALL(command, timeout)                                                          \
    "\"<tool_call>{\\\"name\\\": \\\"bash\\\", \\\"arguments\\\": {\\\"command\\\": \\\"" \
    command "\\\", \\\"timeout_ms\\\": " timeout "}}</tool_call>\""

void test_builtin_bash_timeout_and_cap(void) {
    char dir[256];
    make_workspace(dir, sizeof dir, 4);
    zoo_agent *agent = mock("[" BASH_CALL("sleep 30", "300") ", " BASH_CALL(
        "yes x | head -c 300000", "60000") ", " BASH_CALL("sudo ls",
                                                                             "1000") ", \"done\"]");
    REQUIRE(agent != NULL);
    char *err = NULL, *out = NULL;
    char *options = options_json(dir, "[\"bash\"]");
    CHECK_STATUS(zoo_agent_add_builtin_tools(agent, options, NULL, NULL, NULL, &err), ZOO_OK, err);
    free(options);
    int64_t start = th_now_ms();
    CHECK_STATUS(zoo_agent_chat(agent, "run", NULL, NULL, &out, &err), ZOO_OK, err);
    /* Killed at its 300 ms limit, not after 30 s. */
    CHECK(th_now_ms() - start < 20000 * th_timeout_scale());
    CHECK(jm_is(out, "tool_calls.0.result.details.timed_out", "true"));
    CHECK(jm_is(out, "tool_calls.0.result.details.exit_code", "null"));
    CHECK(contains(out, "tool_calls.0.result.text", "timed out after 300 ms and was killed"));
    double kept = 0, dropped = 0;
    CHECK(jm_number(out, "tool_calls.1.result.details.stdout_truncated_bytes", &dropped));
    CHECK(dropped == 300000 - 256 * 1024);
    char *stdout_text = jm_string(out, "tool_calls.1.result.details.stdout");
    kept = stdout_text ? (double)strlen(stdout_text) : 0;
    CHECK(kept == 256 * 1024);
    free(stdout_text);
    CHECK(contains(out, "tool_calls.1.result.text", "[stdout cut at 256 KB; 37856 more bytes"));
    CHECK(contains(out, "tool_calls.2.error", "not allowed here (it contains `sudo`)"));
    th_free_string(&out);
    zoo_agent_free(agent);
    remove_workspace(dir);
}

/* Stops the agent at the running command's first progress report. */
typedef struct {
    zoo_agent *agent;
    atomic_int stopped;
} stopper;

/* Whether `needle` occurs in the `len` bytes at `text` (event JSON is not
 * NUL-terminated, so strstr may not be used on it). */
static bool has_bytes(const char *text, size_t len, const char *needle) {
    size_t n = strlen(needle);
    for (size_t i = 0; n <= len && i <= len - n; i++) {
        if (memcmp(text + i, needle, n) == 0) return true;
    }
    return false;
}

static void stop_on_progress(void *user_data, const char *json, size_t len) {
    stopper *s = user_data;
    if (has_bytes(json, len, "\"type\":\"tool_call_progress\"") && atomic_load(&s->stopped) == 0) {
        atomic_store(&s->stopped, 1);
        zoo_agent_stop(s->agent);
    }
}

/* Whether process `pid` is gone (or a zombie) within a generous bound. */
static bool dies(long pid) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    int64_t deadline = th_now_ms() + 30000 * th_timeout_scale();
    while (th_now_ms() < deadline) {
        FILE *f = fopen(path, "r");
        if (!f) return true;
        char stat[512] = {0};
        size_t n = fread(stat, 1, sizeof stat - 1, f);
        fclose(f);
        const char *end = strrchr(stat, ')');
        if (n == 0 || (end && end[2] == 'Z')) return true;
        th_sleep_ms(10);
    }
    return false;
}

void test_builtin_stop_kills_bash(void) {
    char dir[256];
    make_workspace(dir, sizeof dir, 5);
    zoo_agent *agent =
        mock("[" BASH_CALL("sleep 300 & echo $! > sleeper.pid; wait", "600000") ", \"never\"]");
    REQUIRE(agent != NULL);
    char *err = NULL, *out = NULL;
    char *options = options_json(dir, "[\"bash\"]");
    CHECK_STATUS(zoo_agent_add_builtin_tools(agent, options, NULL, NULL, NULL, &err), ZOO_OK, err);
    free(options);
    stopper s = {.agent = agent};
    zoo_chat_callbacks callbacks = {.on_event = stop_on_progress, .user_data = &s};
    int64_t start = th_now_ms();
    CHECK_STATUS(zoo_agent_chat(agent, "run", NULL, &callbacks, &out, &err), ZOO_OK, err);
    CHECK(atomic_load(&s.stopped) == 1);
    CHECK(th_now_ms() - start < 60000 * th_timeout_scale());
    CHECK(has_text(out, "stop_reason", "cancelled"));
    th_free_string(&out);
    char *pid = read_text(dir, "sleeper.pid");
    CHECK(pid != NULL);
    if (pid) CHECK(dies(strtol(pid, NULL, 10)));
    free(pid);
    /* The agent answers afterwards (the script's next reply). */
    CHECK_STATUS(zoo_agent_chat(agent, "next", NULL, NULL, &out, &err), ZOO_OK, err);
    CHECK(has_text(out, "text", "never"));
    th_free_string(&out);
    zoo_agent_free(agent);
    remove_workspace(dir);
}
