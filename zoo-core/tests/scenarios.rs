//! The Rust runner of the shared scenario suite: every JSON file in
//! `tests/scenarios/` (format in `tests/scenarios/README.md`) runs here
//! against `zoo_core::Agent` on the mock provider, as it runs in the C,
//! Python and Node runners, and again on a host backend that replays the
//! mock's script (`Replay`, README: On a host backend). Each failure names
//! its scenario and step and shows what was expected beside what came back.

use std::collections::{HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, OnceLock, Weak};
use std::time::Duration;

use serde_json::{json, Value};
use zoo_core::tools::builtin::{BuiltinOptions, ConfirmFn};
use zoo_core::{
    Agent, CancelToken, ChatOptions, Config, ContextRequest, Error, Hooks, HostModel, HostOutput,
    HostRequest, HostSink, HostUsage, InputDecision, Message, MockBackend, Role, SubAgent, Tool,
    ToolCall, ToolCallDecision, ToolChoice, ToolContext, ToolOptions, TurnDecision,
};

/// How long `wait_cancelled` and `cancel_seen` wait at most: only a broken
/// engine waits it out.
const SCENARIO_WAIT: Duration = Duration::from_secs(60);

fn scenarios_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/scenarios")
}

/// Every scenario file, sorted by name.
fn scenario_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(scenarios_dir())
        .expect("tests/scenarios exists")
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files
}

/// Checks `got` against `want` as the README defines: objects as subsets,
/// arrays element by element with equal length, `{"$type": ...}` by type,
/// anything else by equality. Returns the first difference, with its path.
fn matches(want: &Value, got: &Value, path: &str) -> Result<(), String> {
    if let Some(kind) = want.as_object().and_then(|o| o.get("$type")) {
        let ok = match kind.as_str() {
            Some("number") => got.is_number(),
            Some("string") => got.is_string(),
            Some("boolean") => got.is_boolean(),
            Some("object") => got.is_object(),
            Some("array") => got.is_array(),
            Some("any") => true,
            _ => return Err(format!("{path}: unknown $type {kind}")),
        };
        return if ok {
            Ok(())
        } else {
            Err(format!("{path}: want a {kind}, got {got}"))
        };
    }
    match (want, got) {
        (Value::Object(w), Value::Object(g)) => {
            for (key, value) in w {
                let Some(actual) = g.get(key) else {
                    return Err(format!("{path}.{key}: missing (got {got})"));
                };
                matches(value, actual, &format!("{path}.{key}"))?;
            }
            Ok(())
        }
        (Value::Array(w), Value::Array(g)) => {
            if w.len() != g.len() {
                return Err(format!(
                    "{path}: want {} items, got {}: {got}",
                    w.len(),
                    g.len()
                ));
            }
            for (i, (a, b)) in w.iter().zip(g).enumerate() {
                matches(a, b, &format!("{path}.{i}"))?;
            }
            Ok(())
        }
        (Value::Number(a), Value::Number(b)) if a.as_f64() == b.as_f64() => Ok(()),
        _ if want == got => Ok(()),
        _ => Err(format!("{path}: want {want}, got {got}")),
    }
}

/// An expected event: a bare string is `{"type": string}`.
fn event_pattern(want: &Value) -> Value {
    match want {
        Value::String(kind) => json!({ "type": kind }),
        other => other.clone(),
    }
}

fn check_error(want: Option<&Value>, error: &Error, at: &str) -> Result<(), String> {
    let got = json!({"code": error.code().name(), "message": error.to_string()});
    match want {
        Some(want) => matches(want, &got, &format!("{at}.error")),
        None => Err(format!("{at}: unexpected error {got}")),
    }
}

/// What a scenario tool reaches while it runs: the cancel token of the
/// chat in flight, which a `stop` tool cancels (cancelling the chat's token
/// is what `stop()` does), the agent, which `steer` and `follow_up` tools
/// send messages to, and the tools that saw their call's token set.
#[derive(Default)]
struct Reach {
    token: Mutex<Option<CancelToken>>,
    agent: OnceLock<Weak<Agent>>,
    seen: (Mutex<HashSet<String>>, Condvar),
    /// What `on_error` hooks received during the chat in flight.
    hook_errors: Arc<Mutex<Vec<String>>>,
}

impl Reach {
    fn saw_cancel(&self, tool: &str) {
        self.seen.0.lock().unwrap().insert(tool.to_owned());
        self.seen.1.notify_all();
    }

    /// Whether `tool` saw its token set, waiting for it a while.
    fn cancel_seen(&self, tool: &str) -> bool {
        let seen = self.seen.0.lock().unwrap();
        let (seen, _) = self
            .seen
            .1
            .wait_timeout_while(seen, SCENARIO_WAIT, |seen| !seen.contains(tool))
            .unwrap();
        seen.contains(tool)
    }
}

/// Hooks scripted by a scenario's `hooks` (README: Hooks): per point, the
/// first rule that matches decides.
struct ScriptedHooks {
    rules: Value,
    errors: Arc<Mutex<Vec<String>>>,
}

impl ScriptedHooks {
    /// The first rule of `point` that `matches`, or none.
    fn rule(&self, point: &str, matches: impl Fn(&Value) -> bool) -> Option<&Value> {
        self.rules
            .get(point)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|rule| matches(rule))
    }

    /// The rule's `throw`, as a failing hook.
    fn thrown(rule: &Value) -> Result<(), String> {
        match rule.get("throw").and_then(Value::as_str) {
            Some(message) => Err(message.to_string()),
            None => Ok(()),
        }
    }

    /// Whether a rule's `tool` (absent: any) names the call's tool.
    fn for_tool(rule: &Value, call: &ToolCall) -> bool {
        rule.get("tool")
            .is_none_or(|tool| tool.as_str() == Some(call.name.as_str()))
    }
}

fn text(rule: &Value, key: &str) -> String {
    rule[key].as_str().unwrap_or_default().to_string()
}

impl Hooks for ScriptedHooks {
    fn filter_input(&self, message: &str) -> Result<InputDecision, String> {
        let Some(rule) = self.rule("input_filter", |r| {
            r.get("contains")
                .is_none_or(|part| message.contains(part.as_str().unwrap_or_default()))
        }) else {
            return Ok(InputDecision::Pass);
        };
        Self::thrown(rule)?;
        Ok(if rule.get("reject").is_some() {
            InputDecision::Reject {
                reason: text(rule, "reject"),
            }
        } else {
            InputDecision::Warn {
                warning: text(rule, "warn"),
            }
        })
    }

    fn before_turn(&self, turn: u32) -> Result<TurnDecision, String> {
        let rule = self.rule("before_turn", |r| {
            r.get("turn")
                .is_none_or(|t| t.as_u64() == Some(turn.into()))
        });
        match rule {
            None => Ok(TurnDecision::Continue),
            Some(rule) => Self::thrown(rule).map(|()| TurnDecision::End),
        }
    }

    fn after_turn(&self, turn: u32, _text: &str) -> Result<(), String> {
        let rule = self.rule("after_turn", |r| {
            r.get("turn")
                .is_none_or(|t| t.as_u64() == Some(turn.into()))
        });
        rule.map_or(Ok(()), Self::thrown)
    }

    fn before_tool_call(&self, call: &ToolCall) -> Result<ToolCallDecision, String> {
        let Some(rule) = self.rule("before_tool_call", |r| Self::for_tool(r, call)) else {
            return Ok(ToolCallDecision::Allow);
        };
        Self::thrown(rule)?;
        Ok(match rule.get("rewrite") {
            Some(arguments) => ToolCallDecision::Rewrite {
                arguments: arguments.clone(),
            },
            None => ToolCallDecision::Deny {
                reason: text(rule, "deny"),
            },
        })
    }

    fn after_tool_call(
        &self,
        call: &ToolCall,
        _outcome: &Result<Value, String>,
    ) -> Result<Option<Value>, String> {
        let Some(rule) = self.rule("after_tool_call", |r| Self::for_tool(r, call)) else {
            return Ok(None);
        };
        Self::thrown(rule)?;
        Ok(rule.get("replace").cloned())
    }

    fn transform_context(&self, messages: Vec<Message>) -> Result<Vec<Message>, String> {
        let Some(rule) = self.rule("transform_context", |_| true) else {
            return Ok(messages);
        };
        Self::thrown(rule)?;
        let part = text(rule, "drop_containing");
        Ok(messages
            .into_iter()
            .filter(|m| !m.content.contains(&part))
            .collect())
    }

    fn context_strategy(&self, request: &ContextRequest) -> Result<Option<Vec<Message>>, String> {
        let Some(rule) = self.rule("context_strategy", |_| true) else {
            return Ok(None);
        };
        Self::thrown(rule)?;
        if rule.get("decline") == Some(&Value::Bool(true)) {
            return Ok(None);
        }
        if rule.get("keep_all") == Some(&Value::Bool(true)) {
            return Ok(Some(request.messages.clone()));
        }
        let last = rule["keep_last"].as_u64().unwrap_or(0) as usize;
        let start = request.current_turn.saturating_sub(last);
        let mut kept: Vec<Message> = rule
            .get("summary")
            .and_then(Value::as_str)
            .map(Message::assistant)
            .into_iter()
            .collect();
        kept.extend_from_slice(&request.messages[start..]);
        Ok(Some(kept))
    }

    fn on_error(&self, error: &Error) {
        if self.rules.get("on_error") == Some(&Value::Bool(true)) {
            self.errors.lock().unwrap().push(error.to_string());
        }
    }
}

type Current = Arc<Reach>;

/// Makes the `report` list's reports, in order.
fn report(behavior: &Value, ctx: &ToolContext) {
    for report in behavior["report"].as_array().into_iter().flatten() {
        if let Some(text) = report.get("progress").and_then(Value::as_str) {
            ctx.progress(text);
        }
        if let Some(update) = report.get("update") {
            ctx.update(update.clone());
        }
    }
}

/// `wait_cancelled`: waits for the call's token, notes that it was seen,
/// and reports once more (dropped: the call has finished by then).
fn wait_cancelled(ctx: &ToolContext, current: &Reach) -> Result<Value, String> {
    if !ctx.wait_cancelled(Some(SCENARIO_WAIT)) {
        return Err("the cancel token was never set".into());
    }
    current.saw_cancel(ctx.tool_name());
    ctx.progress("cancelled");
    Ok(json!({"cancelled": true}))
}

/// The handler of a scenario tool, from its `behavior`.
fn handler(
    behavior: &Value,
    current: &Current,
) -> impl Fn(Value, &ToolContext) -> Result<Value, String> + Send + Sync + 'static {
    let behavior = behavior.clone();
    let current = Arc::clone(current);
    move |args: Value, ctx: &ToolContext| {
        if behavior.get("stop") == Some(&Value::Bool(true)) {
            if let Some(token) = current.token.lock().unwrap().as_ref() {
                token.cancel();
            }
        }
        let agent = current.agent.get().and_then(Weak::upgrade);
        if let (Some(text), Some(agent)) = (behavior.get("steer").and_then(Value::as_str), &agent) {
            agent.steer(text);
        }
        if let (Some(text), Some(agent)) =
            (behavior.get("follow_up").and_then(Value::as_str), &agent)
        {
            agent.follow_up(text);
        }
        report(&behavior, ctx);
        if let Some(ms) = behavior.get("sleep_ms").and_then(Value::as_u64) {
            std::thread::sleep(Duration::from_millis(ms));
        }
        if behavior.get("wait_cancelled") == Some(&Value::Bool(true)) {
            return wait_cancelled(ctx, &current);
        }
        if let Some(tool) = behavior.get("cancel_seen").and_then(Value::as_str) {
            return Ok(json!(current.cancel_seen(tool)));
        }
        if let Some(message) = behavior.get("fail").and_then(Value::as_str) {
            return Err(message.to_string());
        }
        if behavior.get("echo") == Some(&Value::Bool(true)) {
            return Ok(args);
        }
        Ok(behavior.get("return").cloned().unwrap_or(Value::Null))
    }
}

/// The chat's options; a tool choice the engine refuses is the chat's
/// error, as in the other languages, where the chat call reports it.
fn options(
    step: &Value,
    events: &Arc<Mutex<Vec<Value>>>,
    current: &Current,
) -> Result<ChatOptions, Error> {
    let sink = Arc::clone(events);
    let mut options = ChatOptions::new().on_event(move |event| {
        sink.lock()
            .unwrap()
            .push(serde_json::to_value(event).unwrap())
    });
    if let Some(o) = step.get("options") {
        if let Some(choice) = o.get("tool_choice").and_then(Value::as_str) {
            options = options.tool_choice(ToolChoice::parse(choice)?);
        }
        if let Some(max) = o.get("max_tokens").and_then(Value::as_u64) {
            options = options.max_tokens(max as u32);
        }
        if let Some(max) = o.get("max_turns").and_then(Value::as_u64) {
            options = options.max_turns(max as u32);
        }
        if let Some(max) = o.get("max_total_tokens").and_then(Value::as_u64) {
            options = options.max_total_tokens(max);
        }
        if let Some(max) = o.get("max_duration_ms").and_then(Value::as_u64) {
            options = options.max_duration_ms(max);
        }
        if let Some(rules) = o.get("hooks") {
            options = options.hooks(Arc::new(ScriptedHooks {
                rules: rules.clone(),
                errors: Arc::clone(&current.hook_errors),
            }));
        }
    }
    Ok(options)
}

/// A `chat`, `continue_chat` or `regenerate` step.
fn run_chat(agent: &Agent, current: &Current, step: &Value, at: &str) -> Result<(), String> {
    let start = |options: ChatOptions| {
        if let Some(message) = step.get("chat") {
            let message = message.as_str().unwrap_or_default();
            agent.chat(message, options)
        } else if step.get("regenerate").is_some() {
            agent.regenerate(options)
        } else {
            agent.continue_chat(options)
        }
    };
    let expect = step.get("expect").cloned().unwrap_or(json!({}));
    let events = Arc::new(Mutex::new(Vec::new()));
    let token = CancelToken::new();
    *current.token.lock().unwrap() = Some(token.clone());
    current.hook_errors.lock().unwrap().clear();
    let result = match options(step, &events, current) {
        Ok(options) => start(options.cancel_token(token)).wait(),
        Err(error) => Err(error),
    };
    *current.token.lock().unwrap() = None;
    match result {
        Ok(response) => {
            if expect.get("error").is_some() {
                return Err(format!("{at}: want an error, got {}", response.to_json()));
            }
            if let Some(want) = expect.get("response") {
                let got = serde_json::to_value(&response).unwrap();
                matches(want, &got, &format!("{at}.response"))?;
            }
        }
        Err(error) => check_error(expect.get("error"), &error, at)?,
    }
    if let Some(want) = expect.get("events").and_then(Value::as_array) {
        let want = Value::Array(want.iter().map(event_pattern).collect());
        let got = Value::Array(events.lock().unwrap().clone());
        matches(&want, &got, &format!("{at}.events"))?;
    }
    if let Some(want) = expect.get("hook_errors") {
        let got = json!(*current.hook_errors.lock().unwrap());
        matches(want, &got, &format!("{at}.hook_errors"))?;
    }
    Ok(())
}

/// Rejects keys the format does not define, so that a misspelt key fails
/// here instead of being ignored by all four runners.
fn check_keys(value: &Value, allowed: &[&str], at: &str) -> Result<(), String> {
    let Some(object) = value.as_object() else {
        return Err(format!("{at}: not an object"));
    };
    match object.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(key) => Err(format!("{at}: unknown key `{key}`")),
        None => Ok(()),
    }
}

/// The shape of a scenario file, as tests/scenarios/README.md defines it.
fn check_format(scenario: &Value) -> Result<(), String> {
    check_keys(
        scenario,
        &[
            "name",
            "description",
            "config",
            "mock",
            "workspace",
            "tools",
            "builtin_tools",
            "subagents",
            "create_error",
            "steps",
            "hooks",
        ],
        "scenario",
    )?;
    if let Some(hooks) = scenario.get("hooks") {
        check_hooks(hooks, "hooks")?;
    }
    if let Some(workspace) = scenario.get("workspace") {
        check_keys(workspace, &["files", "symlinks"], "workspace")?;
    }
    if let Some(builtin) = scenario.get("builtin_tools") {
        check_keys(builtin, &["tools", "bash_deny", "confirm"], "builtin_tools")?;
        if scenario.get("workspace").is_none() {
            return Err("`builtin_tools` needs a `workspace`".into());
        }
    }
    for (i, sub) in scenario["subagents"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        check_keys(
            sub,
            &["name", "description", "tools", "config"],
            &format!("subagents.{i}"),
        )?;
    }
    if let Some(mock) = scenario.get("mock") {
        check_keys(mock, &["replies", "piece_delay_ms"], "mock")?;
        if scenario["config"].get("provider").is_some() {
            return Err("a scenario whose config names a provider has no `mock`".into());
        }
    }
    for tool in scenario["tools"].as_array().into_iter().flatten() {
        let at = format!("tool {}", tool["name"]);
        check_keys(
            tool,
            &[
                "name",
                "description",
                "parameters",
                "behavior",
                "register_error",
                "exclusive",
                "timeout_ms",
            ],
            &at,
        )?;
        check_keys(
            &tool["behavior"],
            &[
                "return",
                "echo",
                "fail",
                "sleep_ms",
                "stop",
                "steer",
                "follow_up",
                "report",
                "wait_cancelled",
                "cancel_seen",
            ],
            &format!("{at}.behavior"),
        )?;
        for (i, report) in tool["behavior"]["report"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            let at = format!("{at}.behavior.report.{i}");
            check_keys(report, &["progress", "update"], &at)?;
            if report.as_object().map_or(0, |r| r.len()) != 1 {
                return Err(format!(
                    "{at}: a report is {{\"progress\": text}} or {{\"update\": value}}"
                ));
            }
        }
    }
    for (i, step) in scenario["steps"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let at = format!("steps.{i}");
        check_keys(
            step,
            &[
                "chat",
                "continue_chat",
                "regenerate",
                "options",
                "expect",
                "set_history",
                "clear_history",
                "set_system_prompt",
                "unregister_tool",
                "expect_history",
                "steer",
                "follow_up",
                "clear_queues",
                "activate_skill",
                "deactivate_skill",
                "expect_tools",
                "expect_files",
            ],
            &at,
        )?;
        if let Some(options) = step.get("options") {
            check_keys(
                options,
                &[
                    "tool_choice",
                    "max_tokens",
                    "max_turns",
                    "max_total_tokens",
                    "max_duration_ms",
                    "hooks",
                ],
                &format!("{at}.options"),
            )?;
            if let Some(hooks) = options.get("hooks") {
                check_hooks(hooks, &format!("{at}.options.hooks"))?;
            }
        }
        if let Some(expect) = step.get("expect") {
            check_keys(
                expect,
                &[
                    "response",
                    "events",
                    "error",
                    "removed",
                    "hook_errors",
                    "result",
                ],
                &format!("{at}.expect"),
            )?;
        }
    }
    Ok(())
}

/// The shape of scripted hooks: each point's rules, a matcher and one action.
fn check_hooks(hooks: &Value, at: &str) -> Result<(), String> {
    const POINTS: [(&str, &[&str]); 7] = [
        ("input_filter", &["contains", "warn", "reject", "throw"]),
        ("before_turn", &["turn", "end", "throw"]),
        ("after_turn", &["turn", "throw"]),
        ("before_tool_call", &["tool", "deny", "rewrite", "throw"]),
        ("after_tool_call", &["tool", "replace", "throw"]),
        ("transform_context", &["drop_containing", "throw"]),
        (
            "context_strategy",
            &["keep_last", "summary", "keep_all", "decline", "throw"],
        ),
    ];
    let mut keys: Vec<&str> = POINTS.iter().map(|(point, _)| *point).collect();
    keys.push("on_error");
    check_keys(hooks, &keys, at)?;
    for (point, allowed) in POINTS {
        for (i, rule) in hooks
            .get(point)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            check_keys(rule, allowed, &format!("{at}.{point}.{i}"))?;
        }
    }
    Ok(())
}

/// The scenario's config as `Config::from_json` takes it: unless it names
/// a provider, the scenario's mock is added to it as
/// `"provider": {"type": "mock", "replies": [...], "piece_delay_ms": N}`
/// (on a host backend, the config is the scenario's own).
fn scenario_config(scenario: &Value, on: On) -> Value {
    let mut config = scenario.get("config").cloned().unwrap_or(json!({}));
    if let Some(object) = config.as_object_mut() {
        if on == On::Mock && !object.contains_key("provider") {
            let mock = scenario.get("mock");
            let field = |key: &str, default: Value| {
                mock.and_then(|m| m.get(key)).cloned().unwrap_or(default)
            };
            object.insert(
                "provider".into(),
                json!({
                    "type": "mock",
                    "replies": field("replies", json!([])),
                    "piece_delay_ms": field("piece_delay_ms", json!(0)),
                }),
            );
        }
    }
    config
}

/// A scenario's workspace: a fresh folder holding its `files` (text, or
/// `{"bytes": [...]}`) and `symlinks`, removed on drop.
struct Workspace(PathBuf);

impl Workspace {
    fn create(name: &str, spec: &Value) -> Result<Self, String> {
        let dir = std::env::temp_dir().join(format!("zoo-scenario-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| format!("workspace: {e}"))?;
        let workspace = Workspace(dir.canonicalize().map_err(|e| format!("workspace: {e}"))?);
        for (path, content) in spec["files"].as_object().into_iter().flatten() {
            let file = workspace.0.join(path);
            std::fs::create_dir_all(file.parent().unwrap()).map_err(|e| format!("{path}: {e}"))?;
            let bytes: Vec<u8> = match content {
                Value::String(text) => text.clone().into_bytes(),
                other => other["bytes"]
                    .as_array()
                    .ok_or(format!(
                        "workspace.files.{path}: text or {{\"bytes\": [...]}}"
                    ))?
                    .iter()
                    .map(|b| b.as_u64().unwrap_or(0) as u8)
                    .collect(),
            };
            std::fs::write(&file, bytes).map_err(|e| format!("{path}: {e}"))?;
        }
        for (path, target) in spec["symlinks"].as_object().into_iter().flatten() {
            let target = target.as_str().unwrap_or_default();
            std::os::unix::fs::symlink(target, workspace.0.join(path))
                .map_err(|e| format!("{path}: {e}"))?;
        }
        Ok(workspace)
    }
}

impl Drop for Workspace {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The `confirm` script of `builtin_tools`: per tool, `"allow"`,
/// `"refuse"` or `{"fail": message}`; a tool it does not name is allowed.
fn scripted_confirm(script: Value) -> ConfirmFn {
    Arc::new(move |tool: &str, _: &Value| match &script[tool] {
        Value::Null => Ok(true),
        Value::String(answer) => Ok(answer == "allow"),
        other => Err(other["fail"].as_str().unwrap_or_default().to_owned()),
    })
}

/// Registers the scenario's built-in tools on its workspace, through
/// `Agent::add_builtin_tools`.
fn add_builtin_tools(agent: &Agent, builtin: &Value, workspace: &Path) -> Result<(), String> {
    let texts = |key: &str| -> Vec<String> {
        builtin[key]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect()
    };
    let names = texts("tools");
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let options = BuiltinOptions {
        workspace: workspace.to_owned(),
        confirm: builtin.get("confirm").cloned().map(scripted_confirm),
        bash_deny: texts("bash_deny"),
    };
    agent
        .add_builtin_tools(&names, options)
        .map_err(|e| format!("builtin_tools: {e}"))
}

/// An `expect_files` step: each file's text, or `null` for one that must
/// not exist.
fn expect_files(want: &Value, workspace: Option<&Path>, at: &str) -> Result<(), String> {
    let workspace = workspace.ok_or(format!("{at}: expect_files needs a workspace"))?;
    for (path, content) in want.as_object().into_iter().flatten() {
        let got = std::fs::read_to_string(workspace.join(path)).ok();
        matches(content, &json!(got), &format!("{at}.files.{path}"))?;
    }
    Ok(())
}

fn run_scenario(scenario: &Value, workspace: Option<&Path>, on: On) -> Result<(), String> {
    check_format(scenario)?;
    let current = Current::default();
    let config = Config::from_json(&scenario_config(scenario, on).to_string());
    let created = match on {
        On::Mock => config.and_then(Agent::create),
        On::Host => config.and_then(|c| Agent::with_host_backend(Replay::of(scenario), c)),
    };
    let agent = match (created, scenario.get("create_error")) {
        (Ok(_), Some(want)) => return Err(format!("create: want the error {want}, got an agent")),
        (Err(error), want) => return check_error(want, &error, "create"),
        (Ok(agent), None) => Arc::new(agent),
    };
    let _ = current.agent.set(Arc::downgrade(&agent));
    if let Some(rules) = scenario.get("hooks") {
        agent.set_hooks(Some(Arc::new(ScriptedHooks {
            rules: rules.clone(),
            errors: Arc::clone(&current.hook_errors),
        })));
    }
    for tool in scenario
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let name = tool["name"].as_str().unwrap_or_default();
        // The tool's own keys, passed as the Python and Node front doors do.
        let mut given = serde_json::Map::new();
        for key in ["exclusive", "timeout_ms"] {
            if let Some(value) = tool.get(key) {
                given.insert(key.into(), value.clone());
            }
        }
        let registered = Tool::with_context(
            name,
            tool.get("description")
                .and_then(Value::as_str)
                .unwrap_or_default(),
            tool.get("parameters")
                .cloned()
                .unwrap_or(json!({"type": "object"})),
            handler(&tool["behavior"], &current),
        )
        .and_then(|registered| {
            let options = ToolOptions::from_json(name, &Value::Object(given).to_string())?;
            Ok(registered.with_options(options))
        });
        let at = format!("tool {}", tool["name"]);
        match (registered, tool.get("register_error")) {
            (Ok(registered), None) => agent.register_tool(registered),
            (Ok(_), Some(want)) => return Err(format!("{at}: want the error {want}, got none")),
            (Err(error), want) => check_error(want, &error, &at)?,
        }
    }
    if let (Some(builtin), Some(workspace)) = (scenario.get("builtin_tools"), workspace) {
        add_builtin_tools(&agent, builtin, workspace)?;
    }
    for (i, sub) in scenario["subagents"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        SubAgent::from_json(&sub.to_string())
            .and_then(|sub| agent.add_subagent(sub))
            .map_err(|e| format!("subagents.{i}: {e}"))?;
    }
    for (i, step) in scenario
        .get("steps")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let at = format!("steps.{i}");
        if ["chat", "continue_chat", "regenerate"]
            .iter()
            .any(|k| step.get(k).is_some())
        {
            run_chat(&agent, &current, step, &at)?;
        } else if let Some(messages) = step.get("set_history") {
            let messages: Vec<Message> =
                serde_json::from_value(messages.clone()).map_err(|e| format!("{at}: {e}"))?;
            let expect = step.get("expect").and_then(|e| e.get("error"));
            match agent.set_history(messages) {
                Ok(()) if expect.is_some() => return Err(format!("{at}: want an error, got none")),
                Ok(()) => {}
                Err(error) => check_error(expect, &error, &at)?,
            }
        } else if let Some(name) = step.get("unregister_tool").and_then(Value::as_str) {
            let removed = agent.unregister_tool(name);
            let want = step.get("expect").and_then(|e| e.get("removed"));
            if let Some(want) = want {
                matches(want, &json!(removed), &format!("{at}.removed"))?;
            }
        } else if let Some(prompt) = step.get("set_system_prompt") {
            let prompt = prompt.as_str().map(str::to_string);
            agent
                .set_system_prompt(prompt)
                .map_err(|e| format!("{at}: {e}"))?;
        } else if let Some(text) = step.get("steer").and_then(Value::as_str) {
            agent.steer(text);
        } else if let Some(text) = step.get("follow_up").and_then(Value::as_str) {
            agent.follow_up(text);
        } else if step.get("clear_queues").is_some() {
            agent.clear_queues();
        } else if step.get("clear_history").is_some() {
            agent.clear_history().map_err(|e| format!("{at}: {e}"))?;
        } else if let Some(want) = step.get("expect_history") {
            let got = serde_json::to_value(agent.history()).unwrap();
            matches(want, &got, &format!("{at}.history"))?;
        } else if let Some(name) = step.get("activate_skill").and_then(Value::as_str) {
            let expect = step.get("expect").cloned().unwrap_or(json!({}));
            match agent.activate_skill(name) {
                Ok(_) if expect.get("error").is_some() => {
                    return Err(format!("{at}: want an error, got none"))
                }
                Ok(body) => {
                    if let Some(want) = expect.get("result") {
                        matches(want, &json!(body), &format!("{at}.result"))?;
                    }
                }
                Err(error) => check_error(expect.get("error"), &error, &at)?,
            }
        } else if step.get("deactivate_skill").is_some() {
            agent.deactivate_skill();
        } else if let Some(want) = step.get("expect_tools") {
            let names: Vec<String> = agent.tools().into_iter().map(|t| t.name).collect();
            matches(want, &json!(names), &format!("{at}.tools"))?;
        } else if let Some(want) = step.get("expect_files") {
            expect_files(want, workspace, &at)?;
        } else {
            return Err(format!("{at}: unknown step {step}"));
        }
    }
    Ok(())
}

/// What the scenarios run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum On {
    /// The mock provider, by config.
    Mock,
    /// A host backend replaying the mock's script.
    Host,
}

/// Why a scenario cannot run on a host backend (README: On a host
/// backend), or `None` when it can.
fn host_blocker(scenario: &Value) -> Option<&'static str> {
    if scenario["config"].get("provider").is_some() {
        return Some("it checks the provider config itself");
    }
    let replies = scenario["mock"]["replies"].as_array();
    if replies.into_iter().flatten().any(Value::is_object) {
        return Some("a scripted failure is inference_failed; a host's is provider_failed");
    }
    None
}

/// The mock's script replayed by a host backend, as a user's test double
/// would: each reply streamed word by word (after `piece_delay_ms`), cut
/// at `max_tokens`, then `echo: <message>`; usage and token counts by the
/// mock's rule, so that the scenarios' figures hold.
struct Replay {
    replies: VecDeque<String>,
    delay: Duration,
}

impl Replay {
    fn of(scenario: &Value) -> Self {
        let mock = &scenario["mock"];
        Replay {
            replies: mock["replies"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|r| r.as_str().map(str::to_owned))
                .collect(),
            delay: Duration::from_millis(mock["piece_delay_ms"].as_u64().unwrap_or(0)),
        }
    }
}

/// Words with the whitespace before each, as the mock streams them.
fn words(text: &str) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut start = 0;
    let mut in_word = false;
    for (i, ch) in text.char_indices() {
        if ch.is_whitespace() && in_word {
            pieces.push(&text[start..i]);
            (start, in_word) = (i, false);
        } else if !ch.is_whitespace() {
            in_word = true;
        }
    }
    if start < text.len() {
        pieces.push(&text[start..]);
    }
    pieces
}

/// A scripted reply's leading `<think>...</think>`, split into the
/// reasoning and the answer after it.
fn reasoning(text: &str) -> Option<(&str, &str)> {
    let (thinking, answer) = text.strip_prefix("<think>")?.split_once("</think>")?;
    Some((thinking, answer.trim_start()))
}

impl HostModel for Replay {
    fn generate(&mut self, request: &HostRequest, sink: &HostSink) -> Result<(), String> {
        let text = self.replies.pop_front().unwrap_or_else(|| {
            let last_user = request.messages.iter().rev().find(|m| m.role == Role::User);
            format!("echo: {}", last_user.map_or("", |m| m.content.as_str()))
        });
        // A reasoning model behind a host gives its reasoning apart.
        let text = match reasoning(&text) {
            Some((thinking, answer)) => {
                sink.emit(HostOutput::Thinking {
                    text: thinking.to_owned(),
                });
                answer.to_owned()
            }
            None => text,
        };
        let pieces = words(&text);
        let max = request.max_tokens.map_or(usize::MAX, |m| m as usize);
        let sent: String = pieces.iter().take(max).copied().collect();
        let kept = match request
            .stop
            .iter()
            .filter_map(|s| sent.find(s.as_str()))
            .min()
        {
            Some(at) => &sent[..at],
            None => &sent,
        };
        let count = |messages: &[Message]| messages.iter().map(MockBackend::tokens_of).sum();
        let stable = request.stable_prefix.min(request.messages.len());
        // Before the text: a stop string ends the reply where it is seen.
        sink.emit(HostOutput::Usage(HostUsage {
            prompt_tokens: count(&request.messages),
            cached_tokens: count(&request.messages[..stable]),
            completion_tokens: words(kept).len() as u32,
        }));
        for piece in pieces.iter().take(max) {
            if sink.wait_cancelled(Some(self.delay)) || !sink.text(*piece) {
                return Ok(());
            }
        }
        if pieces.len() > max {
            sink.emit(HostOutput::from_json(r#"{"type": "finish", "reason": "length"}"#).unwrap());
        }
        Ok(())
    }

    fn counts_tokens(&self) -> bool {
        true
    }

    fn count_tokens(&mut self, message: &Message) -> Result<u32, String> {
        Ok(MockBackend::tokens_of(message))
    }
}

/// Runs every scenario file on `on`, skipping on a host backend those
/// that cannot run there; fails with every scenario that failed.
fn run_every_scenario(on: On) {
    let files = scenario_files();
    assert!(files.len() >= 25, "only {} scenarios", files.len());
    let mut failures = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let parse = |text: &str| -> Value {
            serde_json::from_str(text)
                .unwrap_or_else(|e| panic!("{}: not JSON: {e}", file.display()))
        };
        let scenario = parse(&text);
        let name = scenario["name"].as_str().unwrap_or("?").to_string();
        let stem = file.file_stem().unwrap().to_string_lossy();
        assert_eq!(
            name,
            stem,
            "{}: the name is the file's name",
            file.display()
        );
        if let Some(reason) = host_blocker(&scenario).filter(|_| on == On::Host) {
            println!("scenario {name}: not on a host backend: {reason}");
            continue;
        }
        // A scenario with a workspace reads with `$WORKSPACE` as its path.
        let workspace = scenario
            .get("workspace")
            .map(|spec| Workspace::create(&format!("{name}-{on:?}"), spec));
        let outcome = match &workspace {
            None => run_scenario(&scenario, None, on),
            Some(Err(e)) => Err(e.clone()),
            Some(Ok(ws)) => {
                let text = text.replace("$WORKSPACE", ws.0.to_str().unwrap());
                run_scenario(&parse(&text), Some(&ws.0), on)
            }
        };
        match outcome {
            Ok(()) => println!("scenario {name} on {on:?}: ok"),
            Err(diff) => {
                println!("scenario {name} on {on:?}: FAILED: {diff}");
                failures.push(format!("{name}: {diff}"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} scenarios failed on {on:?}:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}

#[test]
fn every_scenario_passes() {
    run_every_scenario(On::Mock);
}

#[test]
fn every_scenario_passes_on_a_host_backend() {
    run_every_scenario(On::Host);
}
