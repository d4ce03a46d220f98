/*
 * test_skills.c: skills and sub-agents from C: the config's `skills` folders, the model's
 * load_skill restricting the tools, zoo_agent_activate_skill,
 * zoo_agent_deactivate_skill, zoo_agent_skills_json and zoo_agent_tools_json.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "json_mini.h"

static void ok_tool(void *user_data, const char *args, size_t len, zoo_tool_result *result) {
    (void)user_data;
    (void)args;
    (void)len;
    zoo_tool_result_set_json(result, "\"ok\"", NULL);
}

void test_skills_load_restrict_restore(void) {
    char dir[256], folder[300], file[320];
    snprintf(dir, sizeof dir, "/tmp/zoo-c-skills-%ld", (long)getpid());
    snprintf(folder, sizeof folder, "%s/notes", dir);
    snprintf(file, sizeof file, "%s/SKILL.md", folder);
    mkdir(dir, 0700);
    mkdir(folder, 0700);
    FILE *f = fopen(file, "w");
    REQUIRE(f);
    fputs("---\nname: notes\ndescription: Takes notes\nallowed-tools: echo\n---\nWrite short notes.\n", f);
    fclose(f);

    char config[1024];
    snprintf(config, sizeof config,
             "{\"skills\": [\"%s\"], \"provider\": {\"type\": \"mock\", \"replies\": "
             "[\"<tool_call>{\\\"name\\\": \\\"load_skill\\\", \\\"arguments\\\": {\\\"name\\\": "
             "\\\"notes\\\"}}</tool_call>\", \"Loaded.\"]}}",
             dir);
    zoo_agent *agent = NULL;
    char *err = NULL;
    REQUIRE_STATUS(zoo_agent_create(config, &agent, &err), ZOO_OK, err);
    const char *schema = "{\"type\": \"object\", \"properties\": {}}";
    CHECK_STATUS(zoo_agent_register_tool(agent, "echo", "test", schema, ok_tool, NULL, NULL, &err),
                 ZOO_OK, err);
    CHECK_STATUS(zoo_agent_register_tool(agent, "other", "test", schema, ok_tool, NULL, NULL, &err),
                 ZOO_OK, err);
    char *skills = NULL;
    CHECK_STATUS(zoo_agent_skills_json(agent, &skills, &err), ZOO_OK, err);
    char *allowed = jm_string(skills, "0.allowed_tools.0");
    CHECK_STR(allowed, "echo");
    free(allowed);
    th_free_string(&skills);

    char *out = NULL;
    CHECK_STATUS(zoo_agent_chat(agent, "take a note", NULL, NULL, &out, &err), ZOO_OK, err);
    char *text = jm_string(out, "text");
    CHECK_STR(text, "Loaded.");
    free(text);
    th_free_string(&out);
    char *tools = NULL;
    CHECK_STATUS(zoo_agent_tools_json(agent, &tools, &err), ZOO_OK, err);
    char *second = jm_string(tools, "1.name");
    CHECK_STR(second, "echo");
    free(second);
    char *none = jm_string(tools, "2.name");
    CHECK(none == NULL);
    free(none);
    th_free_string(&tools);

    CHECK_STATUS(zoo_agent_deactivate_skill(agent, &err), ZOO_OK, err);
    CHECK_STATUS(zoo_agent_tools_json(agent, &tools, &err), ZOO_OK, err);
    char *third = jm_string(tools, "2.name");
    CHECK_STR(third, "other");
    free(third);
    th_free_string(&tools);

    char *body = NULL;
    CHECK_STATUS(zoo_agent_activate_skill(agent, "notes", &body, &err), ZOO_OK, err);
    CHECK_STR(body, "Write short notes.");
    th_free_string(&body);
    CHECK_STATUS(zoo_agent_activate_skill(agent, "nope", &body, &err), ZOO_INVALID_ARGUMENT, err);
    CHECK(body == NULL);
    CHECK_ERROR_MESSAGE(err);
    zoo_agent_free(agent);
    unlink(file);
    rmdir(folder);
    rmdir(dir);
}

void test_subagent_answers_the_task(void) {
    const char *parent_config =
        "{\"provider\": {\"type\": \"mock\", \"replies\": [\"<tool_call>{\\\"name\\\": "
        "\\\"researcher\\\", \\\"arguments\\\": {\\\"task\\\": \\\"Oslo\\\"}}</tool_call>\", "
        "\"Done.\"]}}";
    zoo_agent *parent = NULL;
    char *err = NULL;
    REQUIRE_STATUS(zoo_agent_create(parent_config, &parent, &err), ZOO_OK, err);
    const char *spec =
        "{\"name\": \"researcher\", \"description\": \"Looks things up\", \"config\": "
        "{\"provider\": {\"type\": \"mock\", \"replies\": [\"It is cold in Oslo.\"]}}}";
    CHECK_STATUS(zoo_agent_add_subagent(parent, spec, &err), ZOO_OK, err);
    char *out = NULL;
    CHECK_STATUS(zoo_agent_chat(parent, "Oslo?", NULL, NULL, &out, &err), ZOO_OK, err);
    char *answer = jm_string(out, "tool_calls.0.result.text");
    CHECK_STR(answer, "It is cold in Oslo.");
    free(answer);
    th_free_string(&out);
    CHECK_STATUS(zoo_agent_add_subagent(parent, "{\"name\": \"r\", \"description\": \"d\", "
                                                "\"tools\": [\"missing\"], \"config\": "
                                                "{\"provider\": {\"type\": \"mock\"}}}",
                                        &err),
                 ZOO_TOOL_NOT_FOUND, err);
    CHECK_ERROR_MESSAGE(err);
    CHECK_STATUS(zoo_agent_add_subagent(parent, "{\"name\": \"r\"}", &err), ZOO_INVALID_ARGUMENT,
                 err);
    CHECK_ERROR_MESSAGE(err);
    CHECK_STATUS(zoo_agent_add_subagent(parent, "not json", &err), ZOO_INVALID_JSON, err);
    CHECK_ERROR_MESSAGE(err);
    zoo_agent_free(parent);
}
