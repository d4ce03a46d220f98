/*
 * test_mcp.c: MCP servers through the C ABI, on the mock backend: errors
 * (NULLs, bad descriptions and names, a server that fails to start), the
 * fake server's tools in a chat (results, isError, a crash), a server
 * that stopped reading its stdin (no SIGPIPE may kill the host), and the real
 * @modelcontextprotocol/server-everything over stdio (installed by
 * scripts/fetch-mcp-servers).
 */
#define _POSIX_C_SOURCE 200809L

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "json_mini.h"

#define FAKE_SERVER ZOO_REPO_ROOT "/tests/mcp/fake_server.py"
#define EVERYTHING                                                                      \
    ZOO_REPO_ROOT "/tests/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js"

static const char FAKE_JSON[] =
    "{\"type\":\"stdio\",\"command\":\"python3\",\"args\":[\"" FAKE_SERVER "\"],"
    "\"timeout_ms\":10000}";

static zoo_agent *mock_agent(const char *replies) {
    zoo_agent *agent = NULL;
    char *err = NULL;
    if (!CHECK_STATUS(zoo_agent_create_mock(NULL, replies, 0, &agent, &err), ZOO_OK, err)) {
        th_free_string(&err);
        return NULL;
    }
    return agent;
}

static bool contains(const char *text, const char *part) {
    bool ok = text != NULL && strstr(text, part) != NULL;
    if (!ok) th_note("`%s` not in: %s", part, text ? text : "(null)");
    return ok;
}

void test_mcp_errors(void) {
    zoo_agent *agent = mock_agent(NULL);
    REQUIRE(agent != NULL);
    char *err = NULL;
    CHECK_STATUS(zoo_agent_add_mcp_server(NULL, "s", FAKE_JSON, NULL, &err),
                 ZOO_INVALID_ARGUMENT, err);
    CHECK_ERROR_MESSAGE(err);
    CHECK_STATUS(zoo_agent_add_mcp_server(agent, NULL, FAKE_JSON, NULL, &err),
                 ZOO_INVALID_ARGUMENT, err);
    CHECK_ERROR_MESSAGE(err);
    CHECK_STATUS(zoo_agent_add_mcp_server(agent, "s", NULL, NULL, &err), ZOO_INVALID_ARGUMENT,
                 err);
    CHECK_ERROR_MESSAGE(err);
    /* A malformed description names the field. */
    CHECK_STATUS(zoo_agent_add_mcp_server(agent, "s", "{\"type\":\"stdio\",\"cmd\":\"x\"}", NULL,
                                          &err),
                 ZOO_INVALID_JSON, err);
    CHECK(contains(err, "cmd"));
    th_free_string(&err);
    CHECK_STATUS(zoo_agent_add_mcp_server(agent, "s", "not json", NULL, &err), ZOO_INVALID_JSON,
                 err);
    CHECK_ERROR_MESSAGE(err);
    CHECK_STATUS(zoo_agent_add_mcp_server(agent, "bad name", FAKE_JSON, NULL, &err),
                 ZOO_INVALID_ARGUMENT, err);
    CHECK_ERROR_MESSAGE(err);
    /* A server that exits at start: ZOO_MCP, naming the command and its stderr. */
    CHECK_STATUS(zoo_agent_add_mcp_server(agent, "db",
                                          "{\"type\":\"stdio\",\"command\":\"python3\",\"args\":[\"" FAKE_SERVER
                                          "\",\"--exit-early\"]}",
                                          NULL, &err),
                 ZOO_MCP, err);
    CHECK(contains(err, "fake_server.py --exit-early"));
    CHECK(contains(err, "cannot open database"));
    th_free_string(&err);
    CHECK_STATUS(zoo_agent_add_mcp_server(
                     agent, "nope", "{\"type\":\"stdio\",\"command\":\"/nonexistent/zoo-mcp\"}",
                     NULL, &err),
                 ZOO_MCP, err);
    CHECK(contains(err, "/nonexistent/zoo-mcp"));
    th_free_string(&err);
    /* Nothing was added by the failures. */
    char *servers = NULL;
    REQUIRE_STATUS(zoo_agent_mcp_servers_json(agent, &servers, &err), ZOO_OK, err);
    CHECK_STR(servers, "[]");
    th_free_string(&servers);
    CHECK_STATUS(zoo_agent_mcp_servers_json(agent, NULL, &err), ZOO_INVALID_ARGUMENT, err);
    CHECK_ERROR_MESSAGE(err);
    bool removed = true;
    CHECK_STATUS(zoo_agent_remove_mcp_server(agent, "never-added", &removed, &err), ZOO_OK, err);
    CHECK(!removed);
    CHECK_STATUS(zoo_agent_remove_mcp_server(agent, NULL, &removed, &err), ZOO_INVALID_ARGUMENT,
                 err);
    CHECK_ERROR_MESSAGE(err);
    zoo_agent_free(agent);
}

#define CALL(name, args)                                                                \
    "\"<tool_call>{\\\"name\\\":\\\"" name "\\\",\\\"arguments\\\":" args "}</tool_call>\""

void test_mcp_fake_server_in_a_chat(void) {
    zoo_agent *agent = mock_agent(
        "[" CALL("fake__echo", "{\\\"text\\\":\\\"from C\\\"}") ", " CALL(
            "fake__fail", "{\\\"message\\\":\\\"disk full\\\"}") ", " CALL("fake__crash",
                                                                            "{}") ", \"Done.\"]");
    REQUIRE(agent != NULL);
    char *err = NULL, *info = NULL;
    REQUIRE_STATUS(zoo_agent_add_mcp_server(agent, "fake", FAKE_JSON, &info, &err), ZOO_OK, err);
    char *server_name = jm_string(info, "server_name");
    CHECK_STR(server_name, "fake-server");
    free(server_name);
    CHECK(jm_count(info, "tools") == 11);
    char *first = jm_string(info, "tools.0");
    CHECK_STR(first, "fake__echo");
    free(first);
    th_free_string(&info);

    char *out = NULL;
    REQUIRE_STATUS(zoo_agent_chat(agent, "go", NULL, NULL, &out, &err), ZOO_OK, err);
    char *text = jm_string(out, "text");
    CHECK_STR(text, "Done.");
    free(text);
    char *echo = jm_string(out, "tool_calls.0.result");
    CHECK_STR(echo, "echo: from C");
    free(echo);
    char *fail = jm_string(out, "tool_calls.1.error");
    CHECK_STR(fail, "tool `fake__fail` failed: disk full");
    free(fail);
    char *crash = jm_string(out, "tool_calls.2.error");
    CHECK(contains(crash, "exit status: 7"));
    CHECK(contains(crash, "segmentation fault (simulated)"));
    free(crash);
    th_free_string(&out);

    bool removed = false;
    CHECK_STATUS(zoo_agent_remove_mcp_server(agent, "fake", &removed, &err), ZOO_OK, err);
    CHECK(removed);
    CHECK_STATUS(zoo_agent_remove_mcp_server(agent, "fake", NULL, &err), ZOO_OK, err);
    zoo_agent_free(agent);
}

/* A C program usually keeps SIGPIPE's default action, which kills the
 * process on a write to a pipe nobody reads. libzoo must turn that write
 * into a tool error instead: the server's stdin is a socket written with
 * MSG_NOSIGNAL. */
void test_mcp_server_that_stopped_reading(void) {
    signal(SIGPIPE, SIG_DFL);
    zoo_agent *agent =
        mock_agent("[" CALL("quiet__echo", "{\\\"text\\\":\\\"anyone?\\\"}") ", \"Done.\"]");
    REQUIRE(agent != NULL);
    char *err = NULL;
    REQUIRE_STATUS(zoo_agent_add_mcp_server(agent, "quiet",
                                            "{\"type\":\"stdio\",\"command\":\"python3\","
                                            "\"args\":[\"" FAKE_SERVER "\",\"--close-stdin\"],"
                                            "\"timeout_ms\":10000}",
                                            NULL, &err),
                   ZOO_OK, err);
    char *out = NULL;
    REQUIRE_STATUS(zoo_agent_chat(agent, "go", NULL, NULL, &out, &err), ZOO_OK, err);
    char *text = jm_string(out, "text");
    CHECK_STR(text, "Done.");
    free(text);
    char *error = jm_string(out, "tool_calls.0.error");
    CHECK(contains(error, "cannot write to the server's stdin"));
    free(error);
    th_free_string(&out);
    zoo_agent_free(agent);
}

void test_mcp_everything_stdio(void) {
    if (!CHECKF(access(EVERYTHING, R_OK) == 0,
                "%s is missing: run scripts/fetch-mcp-servers to install the MCP test servers",
                EVERYTHING))
        return;
    zoo_agent *agent = mock_agent("[" CALL("everything__get-sum",
                                           "{\\\"a\\\":40,\\\"b\\\":2}") ", \"It is 42.\"]");
    REQUIRE(agent != NULL);
    char *err = NULL, *info = NULL;
    REQUIRE_STATUS(
        zoo_agent_add_mcp_server(agent, "everything",
                                 "{\"type\":\"stdio\",\"command\":\"node\",\"args\":[\"" EVERYTHING
                                 "\",\"stdio\"],\"timeout_ms\":30000}",
                                 &info, &err),
        ZOO_OK, err);
    CHECK(contains(info, "\"everything__echo\""));
    CHECK(contains(info, "\"everything__get-sum\""));
    th_free_string(&info);
    char *servers = NULL;
    REQUIRE_STATUS(zoo_agent_mcp_servers_json(agent, &servers, &err), ZOO_OK, err);
    char *name = jm_string(servers, "0.name");
    CHECK_STR(name, "everything");
    free(name);
    th_free_string(&servers);

    char *out = NULL;
    REQUIRE_STATUS(zoo_agent_chat(agent, "40 + 2?", NULL, NULL, &out, &err), ZOO_OK, err);
    char *sum = jm_string(out, "tool_calls.0.result");
    CHECK(contains(sum, "42"));
    free(sum);
    th_free_string(&out);
    zoo_agent_free(agent);
}
