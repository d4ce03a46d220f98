/*
 * test_mcp.c: MCP servers through the C ABI, on the mock backend: errors
 * (NULLs, bad descriptions and names, a server that fails to start), the
 * fake server's tools in a chat (results, isError, a crash that leaves the
 * server listed as dead), a server that stopped reading its stdin (no
 * SIGPIPE may kill the host), max_message_bytes, and the real
 * @modelcontextprotocol/server-everything over stdio (installed by
 * scripts/fetch-mcp-servers).
 *
 * Servers get a 60 s timeout; what must fail "at once" is bounded at 30 s,
 * far from both, so a loaded machine cannot turn either into the other.
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
    "\"timeout_ms\":60000}";

/* How many tools the fake server lists. */
#define FAKE_TOOLS 15
/* The bound on failures that must not wait for the 60 s timeout. */
#define AT_ONCE_MS 30000

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
                 ZOO_INVALID_ARGUMENT, err);
    CHECK_STR(err, "invalid argument: MCP transport: unknown key `cmd` for a stdio server (expected `command`, "
                   "`args`, `env`, `cwd`, `timeout_ms`, `max_message_bytes`)");
    th_free_string(&err);
    CHECK_STATUS(zoo_agent_add_mcp_server(agent, "s", "{}", NULL, &err), ZOO_INVALID_ARGUMENT, err);
    CHECK_STR(err, "invalid argument: MCP transport: the transport needs exactly one of `command` (stdio) or `url` "
                   "(Streamable HTTP)");
    th_free_string(&err);
    CHECK_STATUS(zoo_agent_add_mcp_server(agent, "s", "not json", NULL, &err), ZOO_INVALID_JSON,
                 err);
    CHECK_ERROR_MESSAGE(err);
    CHECK_STATUS(zoo_agent_add_mcp_server(
                     agent, "s",
                     "{\"type\":\"stdio\",\"command\":\"x\",\"max_message_bytes\":0}",
                     NULL, &err),
                 ZOO_INVALID_ARGUMENT, err);
    CHECK(contains(err, "max_message_bytes"));
    th_free_string(&err);
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
    CHECK(jm_count(info, "tools") == FAKE_TOOLS);
    char *state = jm_string(info, "state");
    CHECK_STR(state, "running");
    free(state);
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

    /* The crashed server is listed as dead, with the reason; its tools
     * were withdrawn. */
    char *servers = NULL;
    REQUIRE_STATUS(zoo_agent_mcp_servers_json(agent, &servers, &err), ZOO_OK, err);
    char *dead = jm_string(servers, "0.state");
    CHECK_STR(dead, "dead");
    free(dead);
    char *reason = jm_string(servers, "0.state_reason");
    CHECK(contains(reason, "exit status: 7"));
    free(reason);
    CHECK(jm_count(servers, "0.tools") == 0);
    th_free_string(&servers);

    bool removed = false;
    CHECK_STATUS(zoo_agent_remove_mcp_server(agent, "fake", &removed, &err), ZOO_OK, err);
    CHECK(removed);
    CHECK_STATUS(zoo_agent_remove_mcp_server(agent, "fake", NULL, &err), ZOO_OK, err);
    zoo_agent_free(agent);
}

/* A C program usually keeps SIGPIPE's default action, which kills the
 * process on a write to a pipe nobody reads. libzoo must turn that write
 * into a tool error instead: the server's stdin is a socket written with
 * MSG_NOSIGNAL. The fake server shuts down the reading side of its stdin
 * before it answers the last tools/list page, so the call's write is sure
 * to find no reader: no race with the server, whatever the load. */
void test_mcp_server_that_stopped_reading(void) {
    signal(SIGPIPE, SIG_DFL);
    zoo_agent *agent =
        mock_agent("[" CALL("quiet__echo", "{\\\"text\\\":\\\"anyone?\\\"}") ", \"Done.\"]");
    REQUIRE(agent != NULL);
    char *err = NULL;
    REQUIRE_STATUS(zoo_agent_add_mcp_server(agent, "quiet",
                                            "{\"type\":\"stdio\",\"command\":\"python3\","
                                            "\"args\":[\"" FAKE_SERVER "\",\"--close-stdin\"],"
                                            "\"timeout_ms\":60000}",
                                            NULL, &err),
                   ZOO_OK, err);
    char *out = NULL;
    int64_t started = th_now_ms();
    REQUIRE_STATUS(zoo_agent_chat(agent, "go", NULL, NULL, &out, &err), ZOO_OK, err);
    CHECKF(th_now_ms() - started < AT_ONCE_MS, "the call waited for its timeout");
    char *text = jm_string(out, "text");
    CHECK_STR(text, "Done.");
    free(text);
    char *error = jm_string(out, "tool_calls.0.error");
    CHECK(contains(error, "closed its stdin"));
    free(error);
    th_free_string(&out);
    /* Listed as dead, its tools withdrawn. */
    char *servers = NULL;
    REQUIRE_STATUS(zoo_agent_mcp_servers_json(agent, &servers, &err), ZOO_OK, err);
    char *state = jm_string(servers, "0.state");
    CHECK_STR(state, "dead");
    free(state);
    th_free_string(&servers);
    zoo_agent_free(agent);
}

/* A message larger than max_message_bytes fails the call that waited for
 * it, with an error that names the option; the server goes on serving. */
void test_mcp_max_message_bytes(void) {
    zoo_agent *agent = mock_agent(
        "[" CALL("big__flood", "{\\\"stream\\\":\\\"stdout\\\",\\\"mb\\\":2}") ", " CALL(
            "big__echo", "{\\\"text\\\":\\\"small\\\"}") ", \"Done.\"]");
    REQUIRE(agent != NULL);
    char *err = NULL;
    REQUIRE_STATUS(zoo_agent_add_mcp_server(agent, "big",
                                            "{\"type\":\"stdio\",\"command\":\"python3\","
                                            "\"args\":[\"" FAKE_SERVER "\"],\"timeout_ms\":60000,"
                                            "\"max_message_bytes\":65536}",
                                            NULL, &err),
                   ZOO_OK, err);
    char *out = NULL;
    int64_t started = th_now_ms();
    REQUIRE_STATUS(zoo_agent_chat(agent, "go", NULL, NULL, &out, &err), ZOO_OK, err);
    CHECKF(th_now_ms() - started < AT_ONCE_MS, "the call waited for its timeout");
    char *error = jm_string(out, "tool_calls.0.error");
    CHECK(contains(error, "larger than 64 KiB (the transport's max_message_bytes)"));
    free(error);
    char *echo = jm_string(out, "tool_calls.1.result");
    CHECK_STR(echo, "echo: small");
    free(echo);
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
