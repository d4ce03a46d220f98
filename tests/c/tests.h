/*
 * tests.h: every test, in run order, with its time limit in seconds
 * (multiplied by ZOO_TEST_TIMEOUT_SCALE). Names starting with real_ need
 * the model; all others run on the mock. The quick tier
 * (ZOO_TEST_QUICK=1, as `scripts/test --quick` runs) leaves out the
 * real_ tests and those that need the MCP servers from npm, listed in
 * ZOO_TESTS_NEEDING_NPM.
 */
#ifndef ZOO_TEST_TESTS_H
#define ZOO_TEST_TESTS_H

/* fnmatch patterns, comma-separated: the tests that need the MCP servers
 * installed from npm by scripts/fetch-mcp-servers. */
#define ZOO_TESTS_NEEDING_NPM "mcp_everything_*"

#define ZOO_TESTS(X)                         \
    /* test_errors.c */                      \
    X(version, 5)                            \
    X(status_str, 5)                         \
    X(json_string_member, 5)                 \
    X(null_arguments, 10)                    \
    X(invalid_utf8, 10)                      \
    X(config_errors, 10)                     \
    X(mock_script_errors, 5)                 \
    X(mock_provider_in_config, 10)           \
    X(model_load_errors, 10)                 \
    X(register_tool_errors, 10)              \
    X(tool_choice_errors, 10)                \
    X(inference_failure, 10)                 \
    X(history_errors, 10)                    \
    X(history_visible_on_return, 20)         \
    /* test_mock.c */                        \
    X(mock_chat_response, 10)                \
    X(mock_streaming, 10)                    \
    X(mock_thinking, 10)                     \
    X(mock_tool_call, 10)                    \
    X(mock_tool_errors, 10)                  \
    X(mock_tool_validation, 10)              \
    X(mock_tool_lifecycle, 10)               \
    X(mock_options, 10)                      \
    X(mock_history, 10)                      \
    X(mock_reentrant_callbacks, 10)          \
    X(mock_history_pruned_event, 10)         \
    /* test_async.c */                       \
    X(async_wait_poll, 10)                   \
    X(async_stop_from_thread, 15)            \
    X(async_cancel, 15)                      \
    X(async_free_handle_early, 10)           \
    X(free_agent_in_on_complete, 15)         \
    X(free_agent_in_on_token_and_tool, 15)   \
    X(free_agent_while_chat_runs, 15)        \
    X(free_agent_during_blocking_chat, 15)   \
    X(chat_callbacks_freed_once, 10)         \
    X(concurrent_chats, 20)                  \
    /* test_hostile.c */                     \
    X(hostile_stop_storm, 60)                \
    X(hostile_stop_during_blocked_tool, 30)  \
    X(hostile_huge_max_tokens, 10)           \
    X(hostile_restored_history, 10)          \
    X(hostile_call_ids_after_restore, 10)    \
    /* test_runtime.c */                     \
    X(runtime_steer_from_a_thread, 15)       \
    X(runtime_follow_up_and_limits, 15)      \
    X(runtime_ids_and_arguments, 10)         \
    /* test_tool_context.c */                \
    X(tool_context_reports_and_arguments, 10) \
    X(tool_context_timeout_sets_token, 20)   \
    /* test_builtin.c */                     \
    X(builtin_register_and_errors, 10)       \
    X(builtin_confirmation, 10)              \
    X(builtin_hostile_paths, 10)             \
    X(builtin_bash_timeout_and_cap, 30)      \
    X(builtin_stop_kills_bash, 60)           \
    /* test_hooks.c */                        \
    X(hooks_rejecting_filter, 10)            \
    X(hooks_deny_rewrite_replace, 10)        \
    X(hooks_fail_safe, 10)                   \
    X(hooks_argument_errors, 5)              \
    X(hooks_per_chat, 10)                    \
    X(hooks_context_strategy, 10)            \
    /* test_logs.c */                        \
    X(logs_tool_call_record, 20)             \
    X(logs_levels_and_debug_prompt, 20)      \
    X(logs_session_write_record, 20)         \
    /* test_remote.c */                      \
    X(remote_openai_chat, 30)                \
    X(remote_anthropic_chat, 30)             \
    X(remote_gemini_chat, 30)                \
    /* test_backend.c */                     \
    X(backend_streams_text_and_usage, 10)    \
    X(backend_native_tool_call, 10)          \
    X(backend_failure_is_provider_failed, 10) \
    X(backend_stop_reaches_the_backend, 15)  \
    X(backend_emits_from_threads, 15)        \
    X(backend_counts_tokens, 10)             \
    X(backend_argument_errors, 10)           \
    /* test_scenarios.c */                   \
    X(scenarios, 60)                         \
    X(scenarios_on_a_host_backend, 60)       \
    /* test_sessions.c */                    \
    X(sessions_continue_in_a_new_agent, 20)  \
    X(sessions_store_functions, 20)          \
    /* test_skills.c */                      \
    X(skills_load_restrict_restore, 20)      \
    X(subagent_answers_the_task, 20)         \
    /* test_mcp.c */                         \
    X(mcp_errors, 60)                        \
    X(mcp_fake_server_in_a_chat, 60)         \
    X(mcp_server_that_stopped_reading, 60)   \
    X(mcp_max_message_bytes, 60)             \
    X(mcp_everything_stdio, 90)              \
    /* test_real.c */                        \
    X(real_model_load_and_metadata, 60)      \
    X(real_backend_info, 60)                 \
    X(real_quick_chat, 30)                   \
    X(real_runaway_template, 60)             \
    X(real_streaming, 120)                   \
    X(real_two_agents_share_model, 120)      \
    X(real_tool_required, 180)               \
    X(real_stop_async, 120)                  \
    X(real_llama_server_chat, 360)

#endif /* ZOO_TEST_TESTS_H */
