//! ER-001 … ER-007: validation, self-correction and retry limits.

use serde_json::json;
use zoo_core::{ChatOptions, Config, ErrorCode, MockBackend, MockReply, Role, StopReason};

use super::{agent_on, weather_tool};

#[test]
fn er_001_valid_arguments_pass_and_the_tool_runs() {
    let mock = MockBackend::with_script([
        MockReply::tool_call("get_weather", json!({"city": "Paris"})),
        MockReply::text("ok"),
    ]);
    let agent = agent_on(&mock);
    agent.register_tool(weather_tool());
    let r = agent.chat("q", ChatOptions::new()).wait().unwrap();
    assert!(r.tool_errors.is_empty());
    assert_eq!(
        r.tool_calls[0].result,
        Some(json!({"city": "Paris", "temperature": 21}))
    );
}

#[test]
fn er_002_missing_required_argument_fails_validation() {
    let mock = MockBackend::with_script([
        MockReply::tool_call("get_weather", json!({"unit": "celsius"})),
        MockReply::text("sorry"),
    ]);
    let agent = agent_on(&mock);
    agent.register_tool(weather_tool());
    let r = agent.chat("q", ChatOptions::new()).wait().unwrap();
    assert_eq!(r.tool_errors.len(), 1);
    assert_eq!(r.tool_errors[0].kind, ErrorCode::ToolValidationFailed);
    assert!(
        r.tool_errors[0]
            .message
            .contains("\"city\" is a required property"),
        "{}",
        r.tool_errors[0].message
    );
    assert!(r.tool_calls[0].result.is_none() && r.tool_calls[0].error.is_some());
}

#[test]
fn er_003_wrong_argument_type_fails_validation() {
    let mock = MockBackend::with_script([
        MockReply::tool_call("get_weather", json!({"city": 42})),
        MockReply::text("sorry"),
    ]);
    let agent = agent_on(&mock);
    agent.register_tool(weather_tool());
    let r = agent.chat("q", ChatOptions::new()).wait().unwrap();
    assert_eq!(r.tool_errors[0].kind, ErrorCode::ToolValidationFailed);
    assert!(
        r.tool_errors[0]
            .message
            .contains("42 is not of type \"string\""),
        "{}",
        r.tool_errors[0].message
    );
}

/// Design note: validation errors could go back as a System message. We
/// inject them as the failed call's tool result, flagged as an error: it
/// keeps every call paired with a result (which chat templates and the role
/// rules require) and models are trained to read tool errors there. Calls
/// that cannot even be parsed have no id, and those go in as System messages
/// (see `unparseable_call_goes_back_as_a_system_message`).
#[test]
fn er_004_validation_failure_is_injected_for_the_model() {
    let mock = MockBackend::with_script([
        MockReply::tool_call("get_weather", json!({"city": 1})),
        MockReply::text("sorry"),
    ]);
    let agent = agent_on(&mock);
    agent.register_tool(weather_tool());
    agent.chat("q", ChatOptions::new()).wait().unwrap();
    let retry = &mock.calls()[1].messages;
    let injected = retry.last().unwrap();
    assert_eq!(injected.role, Role::Tool);
    assert!(injected.is_error);
    assert!(
        injected
            .content
            .starts_with("Error: invalid arguments for `get_weather`:")
            && injected.content.contains("1 is not of type \"string\""),
        "{}",
        injected.content
    );
}

#[test]
fn er_005_self_correction_succeeds_on_retry() {
    let mock = MockBackend::with_script([
        MockReply::tool_call("get_weather", json!({"town": "Paris"})),
        MockReply::tool_call("get_weather", json!({"city": "Paris"})),
        MockReply::text("21 degrees"),
    ]);
    let agent = agent_on(&mock);
    agent.register_tool(weather_tool());
    let r = agent.chat("q", ChatOptions::new()).wait().unwrap();
    assert_eq!(r.tool_calls.len(), 2);
    assert!(r.tool_calls[0].error.is_some());
    assert_eq!(
        r.tool_calls[1].result,
        Some(json!({"city": "Paris", "temperature": 21}))
    );
    assert_eq!(r.tool_errors.len(), 1);
    assert_eq!(r.tool_errors[0].attempt, 1);
    assert_eq!(r.text, "21 degrees");
    assert_eq!(r.stop_reason, StopReason::Stop);
}

#[test]
fn er_006_two_failed_retries_exhaust_the_tool() {
    let bad = || MockReply::tool_call("get_weather", json!({"city": false}));
    let mock = MockBackend::with_script([
        bad(),
        bad(),
        bad(),
        MockReply::text("I could not get the weather."),
    ]);
    let agent = agent_on(&mock); // max_tool_retries defaults to 2
    agent.register_tool(weather_tool());
    let r = agent.chat("q", ChatOptions::new()).wait().unwrap();
    let kinds: Vec<ErrorCode> = r.tool_errors.iter().map(|e| e.kind).collect();
    assert_eq!(
        kinds,
        [
            ErrorCode::ToolValidationFailed,
            ErrorCode::ToolValidationFailed,
            ErrorCode::ToolValidationFailed,
            ErrorCode::ToolRetriesExhausted
        ]
    );
    assert_eq!(
        r.tool_errors.iter().map(|e| e.attempt).collect::<Vec<_>>(),
        [1, 2, 3, 3]
    );
    // After exhaustion the model answers without tools.
    let last = mock.calls().last().unwrap().clone();
    assert!(last.tools.is_empty());
    assert_eq!(r.text, "I could not get the weather.");
    let limit = Config::default().max_tool_retries(0);
    let mock = MockBackend::with_script([bad(), MockReply::text("gave up")]);
    let agent = zoo_core::Agent::with_backend(mock, limit).unwrap();
    agent.register_tool(weather_tool());
    let r = agent.chat("q", ChatOptions::new()).wait().unwrap();
    assert_eq!(
        r.tool_errors.last().unwrap().kind,
        ErrorCode::ToolRetriesExhausted
    );
}

#[test]
fn er_007_every_tool_error_is_in_the_response() {
    let mock = MockBackend::with_script([
        MockReply::tool_calls(&[("no_such_tool", json!({})), ("get_weather", json!({}))]),
        MockReply::tool_call("failing", json!({})),
        MockReply::text("done"),
    ]);
    let agent = agent_on(&mock);
    agent.register_tool(weather_tool());
    agent
        .register_fn(
            "failing",
            "Always fails",
            &[],
            || -> Result<String, String> { Err("disk full".into()) },
        )
        .unwrap();
    let r = agent.chat("q", ChatOptions::new()).wait().unwrap();
    let got: Vec<(&str, ErrorCode)> = r
        .tool_errors
        .iter()
        .map(|e| (e.tool.as_str(), e.kind))
        .collect();
    assert_eq!(
        got,
        [
            ("no_such_tool", ErrorCode::ToolNotFound),
            ("get_weather", ErrorCode::ToolValidationFailed),
            ("failing", ErrorCode::ToolHandlerFailed),
        ]
    );
    assert!(r.tool_errors[0]
        .message
        .contains("Available tools: get_weather, failing"));
    assert!(r.tool_errors[2].message.contains("disk full"));
    assert_eq!(r.text, "done");
}

#[test]
fn unparseable_call_goes_back_as_a_system_message() {
    let mock = MockBackend::with_script([
        MockReply::text(
            "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": }</tool_call>",
        ),
        MockReply::tool_call("get_weather", json!({"city": "Bern"})),
        MockReply::text("Bern: 21"),
    ]);
    let agent = agent_on(&mock);
    agent.register_tool(weather_tool());
    let r = agent.chat("q", ChatOptions::new()).wait().unwrap();
    assert_eq!(r.tool_errors[0].kind, ErrorCode::InvalidJson);
    assert_eq!(r.tool_errors[0].tool, "get_weather");
    let injected = mock.calls()[1].messages.last().unwrap().clone();
    assert_eq!(injected.role, Role::System);
    assert!(
        injected.content.contains("could not be read"),
        "{}",
        injected.content
    );
    // The malformed text is kept in the history, not silently dropped.
    assert!(agent
        .history()
        .iter()
        .any(|m| m.content.contains("\"city\": }")));
    assert_eq!(r.text, "Bern: 21");
}
