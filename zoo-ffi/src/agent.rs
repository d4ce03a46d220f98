//! `zoo_agent`: create and free agents, the system prompt, the history and
//! stopping a chat.

use std::ffi::c_char;

use zoo_core::{Agent, Config, Error, Message, MockProvider, MockReply};

use crate::boundary::{
    guard, guard_void, handle_arg, into_c_string, opt_str_arg, out_arg, str_arg,
};
use crate::model::zoo_model;
use crate::status::zoo_status;

/// An agent with its own inference thread, context and history. Every
/// function taking a `zoo_agent *` may be called from any thread.
pub struct zoo_agent {
    pub(crate) agent: Agent,
}

pub(crate) fn config_arg(config_json: *const c_char) -> Result<Config, Error> {
    match opt_str_arg(config_json, "config_json")? {
        None => Ok(Config::default()),
        Some(json) => Config::from_json(json),
    }
}

pub(crate) fn boxed(agent: Agent) -> *mut zoo_agent {
    Box::into_raw(Box::new(zoo_agent { agent }))
}

/// Creates an agent from a JSON config (the keys of the README, e.g.
/// `{"model_path": "model.gguf", "temperature": 0}`), loading its model.
/// With a `provider` instead of a `model_path` the agent runs on that: e.g.
/// `{"provider": {"type": "mock", "replies": ["Hello!"], "piece_delay_ms": 0}}`
/// is a scripted model for testing code that uses libzoo without a model
/// file (see `zoo_agent_create_mock` for what the replies may be).
///
/// Blocks while the model loads.
///
/// @param config_json The config, a JSON object.
/// @param out_agent On success, the new agent; free it with `zoo_agent_free`.
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return `ZOO_OK`, `ZOO_INVALID_JSON`, `ZOO_INVALID_CONFIG` (the message names the key, e.g.
/// `provider.piece_delay_ms`; a `model_path` and a `provider` together are refused),
/// `ZOO_MODEL_LOAD_FAILED`, or `ZOO_INVALID_ARGUMENT` for a NULL argument or text that is not
/// UTF-8.
#[no_mangle]
pub extern "C" fn zoo_agent_create(
    config_json: *const c_char,
    out_agent: *mut *mut zoo_agent,
    out_error: *mut *mut c_char,
) -> zoo_status {
    guard(out_error, || {
        let out = out_arg(out_agent, "out_agent")?;
        let config = Config::from_json(str_arg(config_json, "config_json")?)?;
        out.write(boxed(Agent::create(config)?));
        Ok(())
    })
}

/// Creates an agent on a model loaded with `zoo_model_load`; `config_json`
/// may be NULL for the defaults (its `model_path` is ignored; a `provider`
/// is `ZOO_INVALID_CONFIG`). The agent shares the model's weights and has
/// its own context.
///
/// @param model A model from `zoo_model_load`; the agent keeps its weights alive.
/// @param config_json The config, a JSON object, or NULL for the defaults.
/// @param out_agent On success, the new agent; free it with `zoo_agent_free`.
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return `ZOO_OK`, `ZOO_INVALID_JSON`, `ZOO_INVALID_CONFIG`, or `ZOO_INVALID_ARGUMENT` for a
/// NULL argument or text that is not UTF-8.
#[no_mangle]
pub extern "C" fn zoo_agent_create_with_model(
    model: *const zoo_model,
    config_json: *const c_char,
    out_agent: *mut *mut zoo_agent,
    out_error: *mut *mut c_char,
) -> zoo_status {
    guard(out_error, || {
        let out = out_arg(out_agent, "out_agent")?;
        let model = handle_arg(model, "model")?;
        let config = config_arg(config_json)?;
        out.write(boxed(Agent::with_model(model.model.clone(), config)?));
        Ok(())
    })
}

/// Creates an agent on a scripted mock model, for testing code that uses
/// libzoo without a model file: the same as `zoo_agent_create` with
/// `"provider": {"type": "mock", "replies": <replies_json>, "piece_delay_ms":
/// <piece_delay_ms>}` added to `config_json` (which may be NULL for the
/// defaults, and must have neither a `model_path` nor a `provider`).
/// `replies_json` (NULL for none) is a JSON array whose items are the
/// model's replies in order: a string is streamed word by word (write a tool
/// call as `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`);
/// `{"error": "message"}` makes that reply fail with `ZOO_INFERENCE_FAILED`.
/// After the script, the mock echoes `echo: <user message>`. Each streamed
/// word waits `piece_delay_ms` (at most 60000) first.
///
/// @param config_json The config, a JSON object, or NULL for the defaults.
/// @param replies_json The model's replies, a JSON array, or NULL for none.
/// @param piece_delay_ms Milliseconds waited before each streamed word (0 to 60000).
/// @param out_agent On success, the new agent; free it with `zoo_agent_free`.
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return `ZOO_OK`, `ZOO_INVALID_JSON` for a `replies_json` that is not such an array (the
/// message names the item), `ZOO_INVALID_CONFIG` or `ZOO_INVALID_ARGUMENT` as
/// `zoo_agent_create` does.
#[no_mangle]
pub extern "C" fn zoo_agent_create_mock(
    config_json: *const c_char,
    replies_json: *const c_char,
    piece_delay_ms: u32,
    out_agent: *mut *mut zoo_agent,
    out_error: *mut *mut c_char,
) -> zoo_status {
    guard(out_error, || {
        let out = out_arg(out_agent, "out_agent")?;
        let mut config = config_arg(config_json)?;
        let replies = match opt_str_arg(replies_json, "replies_json")? {
            None => Vec::new(),
            Some(json) => MockReply::script_from_json(json)?,
        };
        if let Some(provider) = &config.provider {
            return Err(Error::config(
                "provider",
                format!(
                    "zoo_agent_create_mock makes the mock provider, so the config may not \
                     name one (got `{}`); give it to zoo_agent_create instead",
                    provider.type_name()
                ),
            ));
        }
        config.provider = Some(
            MockProvider {
                replies,
                piece_delay_ms,
            }
            .into(),
        );
        out.write(boxed(Agent::create(config)?));
        Ok(())
    })
}

/// Frees an agent: cancels its running chat, fails its queued chats with
/// `ZOO_AGENT_NOT_RUNNING`, joins its thread and releases its tools (running
/// their `free_user_data`). Safe while a chat runs, and from inside one of
/// the agent's own callbacks (the thread then ends by itself right after).
/// NULL is ignored.
///
/// @param agent The agent to free, or NULL.
#[no_mangle]
pub extern "C" fn zoo_agent_free(agent: *mut zoo_agent) {
    guard_void(|| {
        if !agent.is_null() {
            // SAFETY: a handle from a zoo_agent_create* function, freed once.
            drop(unsafe { Box::from_raw(agent) });
        }
    });
}

/// Sets the system prompt; NULL removes it. Applies after the chats queued
/// before it (waits for them, unless called from a callback).
///
/// @param agent The agent.
/// @param prompt The new system prompt, or NULL to remove it.
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return `ZOO_OK`, `ZOO_AGENT_NOT_RUNNING`, or `ZOO_INVALID_ARGUMENT` for a NULL argument or
/// text that is not UTF-8.
#[no_mangle]
pub extern "C" fn zoo_agent_set_system_prompt(
    agent: *const zoo_agent,
    prompt: *const c_char,
    out_error: *mut *mut c_char,
) -> zoo_status {
    guard(out_error, || {
        let agent = handle_arg(agent, "agent")?;
        let prompt = opt_str_arg(prompt, "prompt")?.map(str::to_string);
        agent.agent.set_system_prompt(prompt)
    })
}

/// Cancels the chat in flight (queued chats still run); it ends as
/// `cancelled` within about 100 ms, also while a tool handler blocks (see
/// `zoo_tool_fn`). A chat stopped before the model said anything leaves no
/// trace in the history; after that, its partial reply is kept and every
/// tool call it made is answered, so the next chat always works.
///
/// @param agent The agent.
/// @return `ZOO_OK`, or `ZOO_INVALID_ARGUMENT` for a NULL agent.
#[no_mangle]
pub extern "C" fn zoo_agent_stop(agent: *const zoo_agent) -> zoo_status {
    guard(std::ptr::null_mut(), || {
        handle_arg(agent, "agent")?.agent.stop();
        Ok(())
    })
}

/// The conversation as a JSON array of messages (`role`, `content`, and
/// `tool_calls`, `tool_call_id`, `name`, `is_error` where present), system
/// prompt first. `*out_json` is freed with `zoo_string_free`.
///
/// @param agent The agent.
/// @param out_json On success, the messages; free it with `zoo_string_free`.
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return `ZOO_OK`, or `ZOO_INVALID_ARGUMENT` for a NULL argument.
#[no_mangle]
pub extern "C" fn zoo_agent_history_json(
    agent: *const zoo_agent,
    out_json: *mut *mut c_char,
    out_error: *mut *mut c_char,
) -> zoo_status {
    guard(out_error, || {
        let out = out_arg(out_json, "out_json")?;
        let agent = handle_arg(agent, "agent")?;
        let json = serde_json::to_string(&agent.agent.history())?;
        out.write(into_c_string(json));
        Ok(())
    })
}

/// Replaces the conversation with a JSON array of messages, as returned by
/// `zoo_agent_history_json` (to restore a saved chat). Role order is
/// checked (`ZOO_INVALID_MESSAGE_SEQUENCE`); on error nothing changes.
///
/// @param agent The agent.
/// @param history_json The messages, a JSON array.
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return `ZOO_OK`, `ZOO_INVALID_JSON`, `ZOO_INVALID_MESSAGE_SEQUENCE`,
/// `ZOO_AGENT_NOT_RUNNING`, or `ZOO_INVALID_ARGUMENT` for a NULL argument or text that is not
/// UTF-8.
#[no_mangle]
pub extern "C" fn zoo_agent_set_history_json(
    agent: *const zoo_agent,
    history_json: *const c_char,
    out_error: *mut *mut c_char,
) -> zoo_status {
    guard(out_error, || {
        let agent = handle_arg(agent, "agent")?;
        let messages: Vec<Message> =
            serde_json::from_str(str_arg(history_json, "history_json")?)
                .map_err(|e| Error::InvalidJson(format!("history_json: {e}")))?;
        agent.agent.set_history(messages)
    })
}

/// Forgets the conversation, keeping the system prompt.
///
/// @param agent The agent.
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return `ZOO_OK`, `ZOO_AGENT_NOT_RUNNING`, or `ZOO_INVALID_ARGUMENT` for a NULL agent.
#[no_mangle]
pub extern "C" fn zoo_agent_clear_history(
    agent: *const zoo_agent,
    out_error: *mut *mut c_char,
) -> zoo_status {
    guard(out_error, || {
        handle_arg(agent, "agent")?.agent.clear_history()
    })
}

/// Activates a skill of the config's `skills`, as the model's `load_skill`
/// does: `*out_body` receives its instructions (free with `zoo_string_free`)
/// and, when it names `allowed-tools`, only those (and `load_skill`) are
/// shown until `zoo_agent_deactivate_skill`.
///
/// @param agent The agent.
/// @param name The skill's name.
/// @param out_body On success, the skill's instructions; free it with `zoo_string_free`.
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return `ZOO_OK`, or `ZOO_INVALID_ARGUMENT` for an unknown name, a NULL argument or text
/// that is not UTF-8.
#[no_mangle]
pub extern "C" fn zoo_agent_activate_skill(
    agent: *const zoo_agent,
    name: *const c_char,
    out_body: *mut *mut c_char,
    out_error: *mut *mut c_char,
) -> zoo_status {
    guard(out_error, || {
        let out = out_arg(out_body, "out_body")?;
        let agent = handle_arg(agent, "agent")?;
        let body = agent.agent.activate_skill(str_arg(name, "name")?)?;
        out.write(into_c_string(body));
        Ok(())
    })
}

/// Shows every tool again after a skill restricted them.
///
/// @param agent The agent.
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return `ZOO_OK`, or `ZOO_INVALID_ARGUMENT` for a NULL agent.
#[no_mangle]
pub extern "C" fn zoo_agent_deactivate_skill(
    agent: *const zoo_agent,
    out_error: *mut *mut c_char,
) -> zoo_status {
    guard(out_error, || {
        handle_arg(agent, "agent")?.agent.deactivate_skill();
        Ok(())
    })
}

/// The config's skills as a JSON array of `name`, `description`,
/// `allowed_tools` (null or an array) and `path`.
///
/// @param agent The agent.
/// @param out_json On success, the skills; free it with `zoo_string_free`.
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return `ZOO_OK`, or `ZOO_INVALID_ARGUMENT` for a NULL argument.
#[no_mangle]
pub extern "C" fn zoo_agent_skills_json(
    agent: *const zoo_agent,
    out_json: *mut *mut c_char,
    out_error: *mut *mut c_char,
) -> zoo_status {
    guard(out_error, || {
        let out = out_arg(out_json, "out_json")?;
        let json = serde_json::to_string(&handle_arg(agent, "agent")?.agent.skills())?;
        out.write(into_c_string(json));
        Ok(())
    })
}

/// The tools the model is shown, as a JSON array of `name`, `description`
/// and `parameters`, in registration order (a skill's `allowed-tools`
/// narrow it while the skill is active).
///
/// @param agent The agent.
/// @param out_json On success, the tools; free it with `zoo_string_free`.
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return `ZOO_OK`, or `ZOO_INVALID_ARGUMENT` for a NULL argument.
#[no_mangle]
pub extern "C" fn zoo_agent_tools_json(
    agent: *const zoo_agent,
    out_json: *mut *mut c_char,
    out_error: *mut *mut c_char,
) -> zoo_status {
    guard(out_error, || {
        let out = out_arg(out_json, "out_json")?;
        let json = serde_json::to_string(&handle_arg(agent, "agent")?.agent.tools())?;
        out.write(into_c_string(json));
        Ok(())
    })
}

/// Offers a child agent to the model as a tool (see the README's
/// sub-agents): `spec_json` is `{"name", "description", "tools": [names of
/// this agent's tools the child may call], "config": {the child's config}}`.
/// Without a `provider` in its config the child shares this agent's loaded
/// model.
///
/// @param agent The agent.
/// @param spec_json The child agent's spec, a JSON object.
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return `ZOO_OK`, `ZOO_TOOL_NOT_FOUND` for an unknown tool, `ZOO_INVALID_ARGUMENT` for a bad
/// spec, or the config's own errors for `config`.
#[no_mangle]
pub extern "C" fn zoo_agent_add_subagent(
    agent: *const zoo_agent,
    spec_json: *const c_char,
    out_error: *mut *mut c_char,
) -> zoo_status {
    guard(out_error, || {
        let agent = handle_arg(agent, "agent")?;
        let spec = zoo_core::SubAgent::from_json(str_arg(spec_json, "spec_json")?)?;
        agent.agent.add_subagent(spec)
    })
}
