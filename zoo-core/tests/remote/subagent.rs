//! A sub-agent on a remote provider (the oracle pattern: a local parent
//! asks a model behind an OpenAI-compatible server): its request carries its
//! own system prompt, the task and the tools it was given; its answer is the
//! parent's tool result; a server error is a tool error the parent's model
//! reads; the parent's stop ends the child's stream.

use super::*;
use zoo_core::{MockBackend, MockReply, Role, SubAgent};

/// A parent on the mock that delegates `task` to `oracle`, then answers.
fn parent(task: &str) -> Agent {
    Agent::with_backend(
        MockBackend::with_script([
            MockReply::tool_call("oracle", json!({"task": task})),
            MockReply::text("Thanks, oracle."),
        ]),
        Config::default(),
    )
    .unwrap()
}

/// The oracle: a child on the fake server's OpenAI-compatible endpoint.
fn oracle(server: &FakeServer, tools: &[&str]) -> SubAgent {
    SubAgent {
        name: "oracle".into(),
        description: "A bigger model that knows things".into(),
        config: Config::default()
            .system_prompt("You are the oracle.")
            .provider(provider(server).max_retries(0)),
        tools: tools.iter().map(|t| t.to_string()).collect(),
    }
}

#[test]
fn a_remote_child_answers_with_the_tools_it_was_given() {
    let server = FakeServer::start(vec![
        Answer::Stream(call_stream("get_weather", &[r#"{"city":"#, r#" "Oslo"}"#])),
        Answer::Stream(text_stream(&["It is ", "17 C in Oslo."])),
    ]);
    let parent = parent("Weather in Oslo?");
    parent.register_tool(weather_tool());
    parent.register_tool(add_tool());
    parent
        .add_subagent(oracle(&server, &["get_weather"]))
        .unwrap();
    let response = parent.chat("Oslo?", ChatOptions::new()).wait().unwrap();
    assert_eq!(response.text, "Thanks, oracle.");
    let result = response.tool_calls[0].result.clone().unwrap();
    assert_eq!(result["text"], "It is 17 C in Oslo.");
    assert_eq!(result["details"]["stop_reason"], "stop");

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let first = &requests[0].body;
    assert_eq!(
        first["messages"],
        json!([
            {"role": "system", "content": "You are the oracle."},
            {"role": "user", "content": "Weather in Oslo?"}
        ])
    );
    // Only the tool it was given, not the parent's others.
    let tools: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["get_weather"]);
    // The child ran the parent's tool and sent its result back.
    let second = requests[1].body["messages"].as_array().unwrap();
    let tool_message = second.iter().find(|m| m["role"] == "tool").unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(tool_message["content"].as_str().unwrap()).unwrap(),
        json!({"city": "Oslo", "temperature_celsius": 17})
    );
    // The parent's model read the child's answer alone.
    let history = parent.history();
    let read = history.iter().find(|m| m.role == Role::Tool).unwrap();
    assert_eq!(read.content, "It is 17 C in Oslo.");
}

#[test]
fn a_remote_childs_server_error_is_a_tool_error_the_parent_reads() {
    let server = FakeServer::start(vec![Answer::status(404, r#"{"detail": "Not Found"}"#)]);
    let parent = parent("Weather in Oslo?");
    parent.add_subagent(oracle(&server, &[])).unwrap();
    let response = parent.chat("Oslo?", ChatOptions::new()).wait().unwrap();
    assert_eq!(response.text, "Thanks, oracle.");
    let why = format!(
        "the sub-agent `oracle` did not answer: provider openai ({}) failed with HTTP 404: Not Found",
        server.base_url
    );
    assert_eq!(
        response.tool_calls[0].error.as_deref(),
        Some(format!("tool `oracle` failed: {why}").as_str())
    );
    let history = parent.history();
    let read = history.iter().find(|m| m.role == Role::Tool).unwrap();
    assert_eq!(read.content, format!("Error: `oracle` failed: {why}"));
}

#[test]
fn the_parents_stop_ends_a_remote_childs_stream() {
    // The child's stream stalls after its first words; only the parent's
    // stop can end it.
    let server = FakeServer::start(vec![Answer::StreamThenHang(fixture("partial"))]);
    let parent = parent("Talk");
    parent.add_subagent(oracle(&server, &[])).unwrap();
    let handle = parent.chat("Go", ChatOptions::new());
    server.wait_for_answer(0);
    let stopped = Instant::now();
    handle.cancel();
    let response = handle.wait_timeout(HANG).expect("the chat ends").unwrap();
    assert_eq!(response.stop_reason, StopReason::Cancelled);
    // Dropping the parent waits for its running tool, the child, which
    // ends only if the stop reached it.
    let (done, ended) = mpsc::channel();
    std::thread::spawn(move || {
        drop(parent);
        let _ = done.send(());
    });
    ended
        .recv_timeout(HANG)
        .expect("the stop never reached the child");
    assert!(stopped.elapsed() < CANCEL_BOUND, "{:?}", stopped.elapsed());
}
