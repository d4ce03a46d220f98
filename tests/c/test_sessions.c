/*
 * test_sessions.c: sessions from C: an agent with `session_store` and
 * `session` writes its conversation, a new agent continues it, and the
 * zoo_session_store_* functions list, load, rename, export, import and
 * delete.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "json_mini.h"

/* A fresh database path under /tmp for this process and test. */
static void db_path(char *buf, size_t len, const char *name) {
    snprintf(buf, len, "/tmp/zoo-c-sessions-%ld-%s.db", (long)getpid(), name);
    unlink(buf);
}

static void remove_db(const char *path) {
    char side[600];
    unlink(path);
    snprintf(side, sizeof side, "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", path);
    unlink(side);
}

static zoo_agent *session_agent(const char *db, const char *id) {
    char config[1024];
    snprintf(config, sizeof config,
             "{\"session_store\": \"%s\", \"session\": \"%s\", \"system_prompt\": \"Be brief.\","
             " \"provider\": {\"type\": \"mock\"}}",
             db, id);
    zoo_agent *agent = NULL;
    char *err = NULL;
    if (!CHECK_STATUS(zoo_agent_create(config, &agent, &err), ZOO_OK, err)) {
        th_free_string(&err);
        return NULL;
    }
    return agent;
}

static void chat(zoo_agent *agent, const char *message) {
    char *out = NULL, *err = NULL;
    CHECK_STATUS(zoo_agent_chat(agent, message, NULL, NULL, &out, &err), ZOO_OK, err);
    th_free_string(&err);
    th_free_string(&out);
}

void test_sessions_continue_in_a_new_agent(void) {
    char db[512];
    db_path(db, sizeof db, "continue");
    zoo_agent *first = session_agent(db, "kitchen");
    REQUIRE(first);
    chat(first, "hello");
    char *id = NULL, *err = NULL;
    CHECK_STATUS(zoo_agent_session_id(first, &id, &err), ZOO_OK, err);
    CHECK_STR(id, "kitchen");
    th_free_string(&id);
    char *before = NULL;
    CHECK_STATUS(zoo_agent_history_json(first, &before, &err), ZOO_OK, err);
    zoo_agent_free(first);

    zoo_agent *second = session_agent(db, "kitchen");
    REQUIRE(second);
    char *after = NULL;
    CHECK_STATUS(zoo_agent_history_json(second, &after, &err), ZOO_OK, err);
    CHECK_STR(after, before);
    chat(second, "again");
    zoo_agent_free(second);
    th_free_string(&before);
    th_free_string(&after);

    /* An agent without a store has no session id: NULL on success. */
    zoo_agent *plain = NULL;
    REQUIRE_STATUS(zoo_agent_create("{\"provider\": {\"type\": \"mock\"}}", &plain, &err),
                   ZOO_OK, err);
    id = (char *)"untouched";
    CHECK_STATUS(zoo_agent_session_id(plain, &id, &err), ZOO_OK, err);
    CHECK(id == NULL);
    zoo_agent_free(plain);

    zoo_session_store *store = NULL;
    REQUIRE_STATUS(zoo_session_store_open(db, &store, &err), ZOO_OK, err);
    char *list = NULL;
    CHECK_STATUS(zoo_session_store_list_json(store, &list, &err), ZOO_OK, err);
    char *listed_id = jm_string(list, "0.id");
    CHECK_STR(listed_id, "kitchen");
    free(listed_id);
    char *title = jm_string(list, "0.title");
    CHECK_STR(title, "hello");
    free(title);
    th_free_string(&list);
    char *loaded = NULL;
    CHECK_STATUS(zoo_session_store_load_json(store, "kitchen", &loaded, &err), ZOO_OK, err);
    char *content = jm_string(loaded, "messages.3.content");
    CHECK_STR(content, "echo: again");
    free(content);
    char *prompt = jm_string(loaded, "system_prompt");
    CHECK_STR(prompt, "Be brief.");
    free(prompt);
    th_free_string(&loaded);
    zoo_session_store_free(store);
    remove_db(db);
}

void test_sessions_store_functions(void) {
    char db[512];
    db_path(db, sizeof db, "store");
    zoo_agent *agent = session_agent(db, "a");
    REQUIRE(agent);
    chat(agent, "hi");
    zoo_agent_free(agent);

    char *err = NULL;
    zoo_session_store *store = NULL;
    REQUIRE_STATUS(zoo_session_store_open(db, &store, &err), ZOO_OK, err);
    CHECK_STATUS(zoo_session_store_rename(store, "a", "Greeting", &err), ZOO_OK, err);
    CHECK_STATUS(zoo_session_store_set_metadata_json(store, "a", "{\"user\": 7}", &err), ZOO_OK,
                 err);
    CHECK_STATUS(zoo_session_store_rename(store, "missing", "x", &err), ZOO_INVALID_ARGUMENT,
                 err);
    CHECK(err && strstr(err, "no session `missing`"));
    th_free_string(&err);
    CHECK_STATUS(zoo_session_store_set_metadata_json(store, "a", "{", &err), ZOO_INVALID_JSON,
                 err);
    CHECK_ERROR_MESSAGE(err);

    char *exported = NULL, *jsonl = NULL, *id = NULL;
    REQUIRE_STATUS(zoo_session_store_export_json(store, "a", &exported, &err), ZOO_OK, err);
    CHECK_STATUS(zoo_session_store_transcript_jsonl(store, "a", &jsonl, &err), ZOO_OK, err);
    CHECK(jsonl && strncmp(jsonl, "{\"role\":\"system\"", 16) == 0);
    th_free_string(&jsonl);
    CHECK_STATUS(zoo_session_store_import_json(store, exported, &id, &err), ZOO_INVALID_ARGUMENT,
                 err);
    CHECK(id == NULL);
    CHECK_ERROR_MESSAGE(err);
    bool deleted = false;
    CHECK_STATUS(zoo_session_store_delete(store, "a", &deleted, &err), ZOO_OK, err);
    CHECK(deleted);
    CHECK_STATUS(zoo_session_store_delete(store, "a", &deleted, &err), ZOO_OK, err);
    CHECK(!deleted);
    char *loaded = NULL;
    CHECK_STATUS(zoo_session_store_load_json(store, "a", &loaded, &err), ZOO_INVALID_ARGUMENT,
                 err);
    CHECK(loaded == NULL);
    CHECK_ERROR_MESSAGE(err);
    CHECK_STATUS(zoo_session_store_import_json(store, exported, &id, &err), ZOO_OK, err);
    CHECK_STR(id, "a");
    th_free_string(&id);
    CHECK_STATUS(zoo_session_store_load_json(store, "a", &loaded, &err), ZOO_OK, err);
    char *title = jm_string(loaded, "title");
    CHECK_STR(title, "Greeting");
    free(title);
    th_free_string(&loaded);
    CHECK_STATUS(zoo_session_store_import_json(store, "not json", &id, &err), ZOO_INVALID_JSON,
                 err);
    CHECK_ERROR_MESSAGE(err);
    th_free_string(&exported);

    /* NULL arguments are typed errors, never crashes. */
    CHECK_STATUS(zoo_session_store_list_json(NULL, &loaded, &err), ZOO_INVALID_ARGUMENT, err);
    CHECK_ERROR_MESSAGE(err);
    CHECK_STATUS(zoo_session_store_load_json(store, NULL, &loaded, &err), ZOO_INVALID_ARGUMENT,
                 err);
    CHECK_ERROR_MESSAGE(err);
    CHECK_STATUS(zoo_session_store_open("/nonexistent-dir/zoo/s.db", &store, &err), ZOO_IO, err);
    CHECK_ERROR_MESSAGE(err);
    zoo_session_store_free(store);
    zoo_session_store_free(NULL);
    remove_db(db);
}
