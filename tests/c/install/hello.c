/* hello.c: the smallest program against an installed libzoo (built by
 * test_install.sh with pkg-config and with CMake, and by scripts/package's
 * check of the libzoo tarball): a mock agent, a C tool, one chat. Prints the
 * reply and llama.cpp's CPU backend (zoo_backend_info_json, which loads it),
 * and exits 0 on success. */
#include <stdio.h>
#include <string.h>

#include <zoo.h>

static void add(void *user_data, const char *args, size_t len, zoo_tool_result *result) {
    (void)user_data;
    (void)len;
    /* The mock calls add with {"a":2,"b":3}. */
    zoo_tool_result_set_json(result, strcmp(args, "{\"a\":2,\"b\":3}") == 0 ? "5" : "null", NULL);
}

int main(void) {
    zoo_agent *agent = NULL;
    char *err = NULL, *out = NULL;
    const char *script = "[\"<tool_call>{\\\"name\\\":\\\"add\\\",\\\"arguments\\\":"
                         "{\\\"a\\\":2,\\\"b\\\":3}}</tool_call>\", \"2 + 3 = 5\"]";
    if (zoo_agent_create_mock(NULL, script, 0, &agent, &err) != ZOO_OK ||
        zoo_agent_register_tool(agent, "add", "Adds two integers",
                                "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":"
                                "\"integer\"},\"b\":{\"type\":\"integer\"}}}",
                                add, NULL, NULL, &err) != ZOO_OK ||
        zoo_agent_chat(agent, "What is 2 + 3?", NULL, NULL, &out, &err) != ZOO_OK) {
        fprintf(stderr, "libzoo error: %s\n", err ? err : "?");
        zoo_string_free(err);
        zoo_agent_free(agent);
        return 1;
    }
    int ok = strstr(out, "\"text\":\"2 + 3 = 5\"") != NULL && strstr(out, "\"result\":5") != NULL;
    printf("libzoo %s: %s\n", zoo_version(), out);
    zoo_string_free(out);
    zoo_agent_free(agent);
    char *backend = NULL;
    if (zoo_backend_info_json(&backend, &err) != ZOO_OK) {
        fprintf(stderr, "libzoo backend error: %s\n", err ? err : "?");
        zoo_string_free(err);
        return 1;
    }
    printf("backend: %s\n", backend);
    zoo_string_free(backend);
    return ok ? 0 : 1;
}
