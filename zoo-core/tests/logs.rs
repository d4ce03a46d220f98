//! Logs for the host (`zoo_core::logs`): the records a chat on the mock
//! emits, their levels and fields, the debug prompt and raw output, and the
//! bounded queue in front of a slow handler. The handler is process-wide,
//! so the tests take turns (`TURN`) and read only their own agent's records.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{json, Value};
use zoo_core::logs::{self, targets, LogHandler, LogLevel, LogRecord};
use zoo_core::{
    Agent, ChatOptions, Config, Hooks, MockBackend, MockReply, Tool, ToolCall, ToolCallDecision,
};

/// Generous: the machine may be busy.
const FLUSH: Duration = Duration::from_secs(30);

static TURN: Mutex<()> = Mutex::new(());

fn take_turn() -> MutexGuard<'static, ()> {
    TURN.lock().unwrap_or_else(|e| e.into_inner())
}

/// A handler keeping every record.
#[derive(Default)]
struct Collect(Mutex<Vec<LogRecord>>);

impl LogHandler for Collect {
    fn log(&self, record: &LogRecord) {
        self.0.lock().unwrap().push(record.clone());
    }
}

impl Collect {
    /// The records of `agent`, after everything queued was delivered.
    fn of_agent(&self, agent: &Agent) -> Vec<LogRecord> {
        assert!(logs::flush(FLUSH), "the log queue did not drain");
        let id = json!(agent.id());
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r.fields.get("agent_id") == Some(&id))
            .cloned()
            .collect()
    }
}

fn collect(level: LogLevel) -> Arc<Collect> {
    let sink = Arc::new(Collect::default());
    logs::set_handler(level, Some(sink.clone())).unwrap();
    sink
}

fn adder() -> Tool {
    Tool::new(
        "add",
        "Adds two numbers",
        json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}),
        |args: Value| Ok(json!(args["a"].as_f64().unwrap() + args["b"].as_f64().unwrap())),
    )
    .unwrap()
}

fn agent_with(replies: Vec<MockReply>) -> Agent {
    let agent = Agent::with_backend(MockBackend::with_script(replies), Config::default()).unwrap();
    agent.register_tool(adder());
    agent
}

fn of_target<'a>(records: &'a [LogRecord], target: &str) -> Vec<&'a LogRecord> {
    records.iter().filter(|r| r.target == target).collect()
}

#[test]
fn a_tool_call_logs_its_chat_tool_and_latency() {
    let _turn = take_turn();
    let sink = collect(LogLevel::Info);
    let agent = agent_with(vec![
        MockReply::tool_call("add", json!({"a": 2, "b": 3})),
        MockReply::text("5"),
    ]);
    let response = agent.chat("2+3?", ChatOptions::new()).wait().unwrap();
    assert_eq!(response.text, "5");
    let records = sink.of_agent(&agent);
    logs::set_handler(LogLevel::Off, None).unwrap();

    let tools = of_target(&records, targets::TOOL);
    assert_eq!(tools.len(), 1, "{records:#?}");
    let tool = tools[0];
    assert_eq!(tool.level, LogLevel::Info);
    assert_eq!(tool.fields["tool"], "add");
    assert_eq!(tool.fields["call_id"], "call_1");
    assert_eq!(tool.fields["ok"], true);
    assert_eq!(tool.fields["chat_id"], 1);
    assert!(tool.fields["latency_ms"].as_f64().unwrap() >= 0.0);
    assert!(
        tool.message.starts_with("tool `add` (call_1) returned in "),
        "{}",
        tool.message
    );

    let turns = of_target(&records, targets::TURN);
    assert_eq!(turns.len(), 2, "{records:#?}");
    assert_eq!(turns[0].fields["turn"], 1);
    assert_eq!(turns[1].fields["turn"], 2);
    assert_eq!(turns[1].fields["finish"], "stop");
    assert_eq!(turns[1].fields["chat_id"], 1);
    assert!(turns[0].fields["latency_ms"].is_number());
    for name in ["prompt_tokens", "cached_tokens", "completion_tokens"] {
        assert!(turns[0].fields[name].is_u64(), "{name}: {:?}", turns[0]);
    }

    let chats = of_target(&records, targets::CHAT);
    assert_eq!(chats.len(), 1, "{records:#?}");
    assert_eq!(chats[0].fields["stop_reason"], "stop");
    assert_eq!(chats[0].fields["turns"], 2);
    assert_eq!(chats[0].fields["tool_calls"], 1);
    // Info hides the debug records.
    assert!(of_target(&records, targets::PROMPT).is_empty());
    assert!(of_target(&records, targets::RAW_OUTPUT).is_empty());
}

#[test]
fn a_failed_call_and_a_second_chat_carry_their_own_ids() {
    let _turn = take_turn();
    let sink = collect(LogLevel::Info);
    let agent = agent_with(vec![
        MockReply::text("hello"),
        MockReply::tool_call("add", json!({"a": "x", "b": 3})),
        MockReply::text("sorry"),
    ]);
    agent.chat("hi", ChatOptions::new()).wait().unwrap();
    agent.chat("add x", ChatOptions::new()).wait().unwrap();
    let records = sink.of_agent(&agent);
    logs::set_handler(LogLevel::Off, None).unwrap();
    let tools = of_target(&records, targets::TOOL);
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0].fields["chat_id"], 2);
    assert_eq!(tools[0].fields["ok"], false);
    let error = tools[0].fields["error"].as_str().unwrap();
    assert!(error.contains("validation failed"), "{error}");
    let chats: Vec<_> = of_target(&records, targets::CHAT)
        .iter()
        .map(|r| r.fields["chat_id"].clone())
        .collect();
    assert_eq!(chats, [json!(1), json!(2)]);
}

#[test]
fn the_level_filters_records() {
    let _turn = take_turn();
    let sink = collect(LogLevel::Warn);
    let agent = agent_with(vec![
        MockReply::tool_call("add", json!({"a": 1, "b": 1})),
        MockReply::text("2"),
    ]);
    agent.chat("1+1?", ChatOptions::new()).wait().unwrap();
    assert!(sink.of_agent(&agent).is_empty());
    assert_eq!(logs::level(), LogLevel::Warn);

    // Raised without a new handler: the next chat's lines arrive.
    logs::set_level(LogLevel::Info);
    agent.chat("again", ChatOptions::new()).wait().unwrap();
    let records = sink.of_agent(&agent);
    logs::set_handler(LogLevel::Off, None).unwrap();
    assert!(!records.is_empty());
    assert!(records.iter().all(|r| r.level <= LogLevel::Info));
    assert!(records.iter().all(|r| r.fields["chat_id"] == 2));
    // Without a handler the level is off whatever was asked.
    logs::set_level(LogLevel::Trace);
    assert_eq!(logs::level(), LogLevel::Off);
}

#[test]
fn debug_logs_the_prompt_and_the_raw_output() {
    let _turn = take_turn();
    let sink = collect(LogLevel::Debug);
    let raw = "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 2, \"b\": 2}}\n</tool_call>";
    let agent = agent_with(vec![MockReply::text(raw), MockReply::text("4")]);
    agent.set_system_prompt(Some("Be brief.".into())).unwrap();
    agent.chat("2+2?", ChatOptions::new()).wait().unwrap();
    let records = sink.of_agent(&agent);
    logs::set_handler(LogLevel::Off, None).unwrap();

    let prompts = of_target(&records, targets::PROMPT);
    assert_eq!(prompts.len(), 2, "{records:#?}");
    assert_eq!(prompts[0].level, LogLevel::Debug);
    assert_eq!(prompts[0].fields["form"], "messages");
    assert_eq!(prompts[0].fields["turn"], 1);
    assert_eq!(prompts[1].fields["turn"], 2);
    // The mock renders nothing: the record is what it received.
    let first: Value = serde_json::from_str(&prompts[0].message).unwrap();
    assert_eq!(
        first,
        json!([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+2?"}])
    );
    let second: Value = serde_json::from_str(&prompts[1].message).unwrap();
    assert_eq!(second[3]["role"], "tool");
    assert_eq!(second[3]["content"], "4.0");

    let outputs = of_target(&records, targets::RAW_OUTPUT);
    assert_eq!(outputs.len(), 2);
    assert_eq!(
        outputs[0].message, raw,
        "the reply before parsing, markup included"
    );
    assert_eq!(outputs[0].fields["turn"], 1);
    assert_eq!(outputs[1].message, "4");
}

struct FailingHooks;

impl Hooks for FailingHooks {
    fn before_tool_call(&self, _call: &ToolCall) -> Result<ToolCallDecision, String> {
        Err("boom".into())
    }
}

#[test]
fn a_failing_hook_is_a_warning() {
    let _turn = take_turn();
    let sink = collect(LogLevel::Warn);
    let agent = agent_with(vec![
        MockReply::tool_call("add", json!({"a": 1, "b": 1})),
        MockReply::text("denied"),
    ]);
    let options = ChatOptions::new().hooks(Arc::new(FailingHooks));
    agent.chat("1+1?", options).wait().unwrap();
    let records = sink.of_agent(&agent);
    logs::set_handler(LogLevel::Off, None).unwrap();
    assert_eq!(records.len(), 1, "{records:#?}");
    let hook = &records[0];
    assert_eq!(
        (hook.level, hook.target.as_str()),
        (LogLevel::Warn, targets::HOOK)
    );
    assert_eq!(hook.fields["hook"], "before_tool_call");
    assert_eq!(hook.fields["error"], "boom");
    assert_eq!(hook.message, "the before_tool_call hook failed: boom");
}

/// A handler that blocks on a gate until it is opened.
struct Gated {
    open: Mutex<bool>,
    opened: Condvar,
    seen: Mutex<Vec<LogRecord>>,
}

impl LogHandler for Gated {
    fn log(&self, record: &LogRecord) {
        let mut open = self.open.lock().unwrap();
        while !*open {
            open = self.opened.wait(open).unwrap();
        }
        self.seen.lock().unwrap().push(record.clone());
    }
}

#[test]
fn a_slow_handler_costs_dropped_records_not_memory() {
    let _turn = take_turn();
    let gated = Arc::new(Gated {
        open: Mutex::new(false),
        opened: Condvar::new(),
        seen: Mutex::new(Vec::new()),
    });
    logs::set_handler(LogLevel::Info, Some(gated.clone())).unwrap();
    let before = logs::dropped();
    // The handler is stuck on the first record; the rest fill the queue.
    let sent = logs::QUEUE_RECORDS * 3;
    for i in 0..sent {
        tracing::info!(target: "zoo::test", i, "record {i}");
    }
    // At most one batch is in the handler's hands and one queue full waits.
    let dropped = logs::dropped() - before;
    assert!(
        dropped >= (sent - 2 * logs::QUEUE_RECORDS) as u64,
        "dropped {dropped} of {sent}"
    );
    *gated.open.lock().unwrap() = true;
    gated.opened.notify_all();
    assert!(logs::flush(FLUSH));
    let seen = std::mem::take(&mut *gated.seen.lock().unwrap());
    logs::set_handler(LogLevel::Off, None).unwrap();
    let ours: Vec<&LogRecord> = seen.iter().filter(|r| r.target == "zoo::test").collect();
    assert!(
        ours.len() <= 2 * logs::QUEUE_RECORDS,
        "{} delivered",
        ours.len()
    );
    assert_eq!(ours.len() as u64 + dropped, sent as u64);
    // One warning per batch that follows drops: two when the logging thread
    // took its first batch only after the queue had filled once (a busy
    // machine). Together they count every record dropped.
    let warnings: Vec<&LogRecord> = seen.iter().filter(|r| r.target == targets::LOGS).collect();
    assert!(
        !warnings.is_empty(),
        "the handler is told records were dropped"
    );
    assert!(warnings.iter().all(|w| w.level == LogLevel::Warn));
    let told: u64 = warnings
        .iter()
        .map(|w| w.fields["dropped"].as_u64().unwrap())
        .sum();
    assert_eq!(told, dropped);
}

/// Counts its own drops.
struct Counted(Arc<AtomicUsize>);

impl LogHandler for Counted {
    fn log(&self, _: &LogRecord) {}
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn a_replaced_handler_is_released_once() {
    let _turn = take_turn();
    let drops = Arc::new(AtomicUsize::new(0));
    logs::set_handler(LogLevel::Info, Some(Arc::new(Counted(drops.clone())))).unwrap();
    tracing::info!(target: "zoo::test", "one");
    assert!(logs::flush(FLUSH));
    logs::set_handler(LogLevel::Info, Some(Arc::new(Collect::default()))).unwrap();
    assert!(logs::flush(FLUSH));
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    logs::set_handler(LogLevel::Off, None).unwrap();
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}
