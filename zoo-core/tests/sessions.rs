//! Sessions in SQLite: a conversation continues in a new agent, the store
//! lists, loads, renames, deletes, exports and imports, a failed turn is
//! never written, and a process killed mid-chat loses at most its turn.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde_json::json;
use zoo_core::logs::{self, targets, LogHandler, LogLevel, LogRecord};
use zoo_core::{
    Agent, ChatOptions, Config, ErrorCode, EventKind, Message, MockBackend, MockReply, Role,
    SessionStore, Tool,
};

/// A fresh folder under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let dir = std::env::temp_dir().join(format!("zoo-sessions-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn db(&self) -> String {
        self.0.join("sessions.db").to_string_lossy().into_owned()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn agent_on(backend: MockBackend, config: Config) -> Agent {
    Agent::with_backend(backend, config).unwrap()
}

fn weather_tool() -> Tool {
    Tool::new(
        "get_weather",
        "Current weather for a city",
        json!({"type": "object", "properties": {"city": {"type": "string"}}}),
        |args| Ok(json!({"city": args["city"], "temperature": 21})),
    )
    .unwrap()
}

fn chat(agent: &Agent, text: &str) -> String {
    agent.chat(text, ChatOptions::new()).wait().unwrap().text
}

#[test]
fn a_new_agent_on_the_session_continues_the_conversation() {
    let dir = TempDir::new();
    let config = Config::default()
        .session_store(dir.db())
        .session("kitchen")
        .system_prompt("Be brief.");
    let first = agent_on(
        MockBackend::with_script([
            MockReply::tool_call("get_weather", json!({"city": "Paris"})),
            MockReply::text("21 degrees."),
        ]),
        config.clone(),
    );
    first.register_tool(weather_tool());
    assert_eq!(chat(&first, "Weather in Paris?"), "21 degrees.");
    assert_eq!(chat(&first, "Thanks"), "echo: Thanks");
    assert_eq!(first.session_id().as_deref(), Some("kitchen"));
    let before = first.history();
    drop(first);

    let second = agent_on(MockBackend::new(), config);
    assert_eq!(second.history(), before, "the reopened session differs");
    assert_eq!(chat(&second, "More?"), "echo: More?");
    let store = SessionStore::open(dir.db()).unwrap();
    let data = store.load("kitchen").unwrap();
    assert_eq!(data.messages.len(), 8);
    assert_eq!(data.system_prompt.as_deref(), Some("Be brief."));
    assert_eq!(data.info.title.as_deref(), Some("Weather in Paris?"));
    assert_eq!(data.info.model, None);
}

#[test]
fn without_an_id_a_new_session_is_started_and_listed() {
    let dir = TempDir::new();
    let config = Config::default().session_store(dir.db());
    let a = agent_on(MockBackend::new(), config.clone());
    let b = agent_on(MockBackend::new(), config);
    chat(&a, "first agent");
    chat(&b, "second agent");
    let (ida, idb) = (a.session_id().unwrap(), b.session_id().unwrap());
    assert_ne!(ida, idb);
    assert_eq!(ida.len(), 32);
    let store = SessionStore::open(dir.db()).unwrap();
    let listed = store.sessions().unwrap();
    assert_eq!(listed.len(), 2);
    // The most recently updated first.
    assert_eq!(listed[0].id, idb);
    assert_eq!(listed[0].message_count, 2);
    assert_eq!(listed[1].title.as_deref(), Some("first agent"));
}

/// The sessions of every transaction a store of this process wrote, from
/// the store's `zoo::session` records.
#[derive(Default)]
struct Writes(Mutex<Vec<String>>);

impl LogHandler for Writes {
    fn log(&self, record: &LogRecord) {
        if record.target == targets::SESSION {
            let session = record.fields["session"].as_str().unwrap_or_default();
            self.0.lock().unwrap().push(session.to_owned());
        }
    }
}

/// The process's one handler, installed at the first call (the handler is
/// process-wide; the tests count their own sessions' writes).
fn writes() -> &'static Writes {
    static WRITES: OnceLock<Arc<Writes>> = OnceLock::new();
    WRITES.get_or_init(|| {
        let writes = Arc::new(Writes::default());
        logs::set_handler(LogLevel::Debug, Some(writes.clone())).unwrap();
        writes
    })
}

/// How many transactions have written session `id` so far.
fn writes_of(id: &str) -> usize {
    // Generous: the machine may be busy.
    assert!(
        logs::flush(Duration::from_secs(30)),
        "the log queue did not drain"
    );
    let written = writes().0.lock().unwrap();
    written.iter().filter(|s| *s == id).count()
}

#[test]
fn a_chat_writes_once_per_round_and_nothing_when_nothing_changed() {
    writes();
    let dir = TempDir::new();
    let config = Config::default()
        .session_store(dir.db())
        .session("counted")
        .system_prompt("Be brief.");
    let agent = agent_on(
        MockBackend::with_script([
            MockReply::tool_call("get_weather", json!({"city": "Paris"})),
            MockReply::text("21 degrees."),
        ]),
        config.clone(),
    );
    agent.register_tool(weather_tool());
    let opened = writes_of("counted");
    // Two rounds: the call with its result, then the answer.
    assert_eq!(chat(&agent, "Weather in Paris?"), "21 degrees.");
    assert_eq!(writes_of("counted") - opened, 2);
    for n in 0..10 {
        chat(&agent, &format!("plain chat {n}"));
    }
    assert_eq!(
        writes_of("counted") - opened,
        12,
        "a plain chat is one round, one write (no empty closing write)"
    );
    drop(agent);
    // Reopened with the same system prompt: nothing to write.
    let before = writes_of("counted");
    let again = agent_on(MockBackend::new(), config.clone());
    assert_eq!(writes_of("counted"), before);
    drop(again);
    // With another one, the new prompt is written at once.
    let changed = agent_on(MockBackend::new(), config.system_prompt("Be long."));
    assert_eq!(writes_of("counted"), before + 1);
    drop(changed);
    let data = SessionStore::open(dir.db())
        .unwrap()
        .load("counted")
        .unwrap();
    assert_eq!(data.system_prompt.as_deref(), Some("Be long."));
    assert_eq!(data.messages.len(), 24);
}

#[test]
fn one_session_is_open_in_one_agent_at_a_time() {
    let dir = TempDir::new();
    let config = Config::default().session_store(dir.db()).session("s");
    let first = agent_on(MockBackend::new(), config.clone());
    let err = Agent::with_backend(MockBackend::new(), config.clone()).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument);
    assert!(err.to_string().contains("session `s`"), "{err}");
    drop(first);
    agent_on(MockBackend::new(), config);
}

#[test]
fn a_failed_or_cancelled_turn_is_not_written() {
    let dir = TempDir::new();
    let config = Config::default().session_store(dir.db()).session("s");
    let backend = MockBackend::with_script([
        MockReply::text("fine"),
        MockReply::Fail(zoo_core::Error::InferenceFailed("boom".into())),
    ]);
    let agent = agent_on(backend, config);
    chat(&agent, "one");
    let err = agent.chat("two", ChatOptions::new()).wait().unwrap_err();
    assert_eq!(err.code(), ErrorCode::InferenceFailed);
    let handle = agent.chat("three", ChatOptions::new());
    handle.abort("stopped by the test");
    let _ = handle.wait();
    let store = SessionStore::open(dir.db()).unwrap();
    let roles: Vec<Role> = store
        .load("s")
        .unwrap()
        .messages
        .iter()
        .map(|m| m.role)
        .collect();
    let history: Vec<Role> = agent.history().iter().map(|m| m.role).collect();
    assert_eq!(roles, history, "the store and the history disagree");
    assert!(roles.len() == 2 || roles.len() == 4, "{roles:?}");
}

/// A chat that fails after a round was written takes that round out of
/// the store again: the store holds what the history holds.
#[test]
fn a_chat_failing_after_a_written_round_is_taken_out_of_the_store() {
    let dir = TempDir::new();
    let config = Config::default().session_store(dir.db()).session("s");
    let backend = MockBackend::with_script([
        MockReply::text("fine"),
        MockReply::tool_call("get_weather", json!({"city": "Oslo"})),
        MockReply::Fail(zoo_core::Error::InferenceFailed("boom".into())),
    ]);
    let agent = agent_on(backend, config);
    agent.register_tool(weather_tool());
    chat(&agent, "one");
    let store = SessionStore::open(dir.db()).unwrap();
    let written = std::sync::Arc::new(std::sync::Mutex::new(0));
    let seen = written.clone();
    let db = dir.db();
    // When the second reply starts, the first round is in the store.
    let options = ChatOptions::new().on_event(move |event| {
        if let EventKind::TurnStarted { turn: 2 } = event.kind {
            let store = SessionStore::open(&db).unwrap();
            *seen.lock().unwrap() = store.info("s").unwrap().message_count;
        }
    });
    let err = agent.chat("two", options).wait().unwrap_err();
    assert_eq!(err.code(), ErrorCode::InferenceFailed);
    assert_eq!(*written.lock().unwrap(), 5, "the round was not written");
    assert_eq!(store.load("s").unwrap().messages, agent.history());
    assert_eq!(store.info("s").unwrap().message_count, 2);
}

#[test]
fn regenerate_clear_and_set_history_rewrite_the_session() {
    let dir = TempDir::new();
    let config = Config::default().session_store(dir.db()).session("s");
    let backend = MockBackend::with_script([MockReply::text("first"), MockReply::text("second")]);
    let agent = agent_on(backend, config);
    let store = SessionStore::open(dir.db()).unwrap();
    let last = |store: &SessionStore| store.load("s").unwrap().messages.last().cloned();
    chat(&agent, "hello");
    assert_eq!(last(&store).unwrap().content, "first");
    agent.regenerate(ChatOptions::new()).wait().unwrap();
    assert_eq!(last(&store).unwrap().content, "second");
    assert_eq!(store.load("s").unwrap().messages.len(), 2);
    agent
        .set_history(vec![Message::user("restored"), Message::assistant("yes")])
        .unwrap();
    assert_eq!(store.load("s").unwrap().messages, agent.history());
    agent.clear_history().unwrap();
    assert_eq!(store.load("s").unwrap().messages, Vec::new());
    chat(&agent, "again");
    assert_eq!(store.info("s").unwrap().message_count, 2);
}

#[test]
fn the_store_keeps_the_whole_transcript_while_the_window_prunes() {
    let dir = TempDir::new();
    let backend = MockBackend::new();
    backend.set_context_size(60);
    let config = Config::default().session_store(dir.db()).session("long");
    let agent = agent_on(backend, config.clone());
    for turn in 0..30 {
        chat(&agent, &format!("message number {turn} with a few words"));
    }
    assert!(agent.history().len() < 60, "the window never pruned");
    let store = SessionStore::open(dir.db()).unwrap();
    let messages = store.load("long").unwrap().messages;
    assert_eq!(messages.len(), 60);
    assert_eq!(messages[0].content, "message number 0 with a few words");
    assert_eq!(
        messages[59].content,
        "echo: message number 29 with a few words"
    );
    // Reopened, the agent holds what fits, and the store still everything.
    drop(agent);
    let backend = MockBackend::new();
    backend.set_context_size(60);
    let again = agent_on(backend, config);
    chat(&again, "after the reopen");
    assert_eq!(store.info("long").unwrap().message_count, 62);
}

#[test]
fn rename_delete_export_import_and_transcript() {
    let dir = TempDir::new();
    let config = Config::default()
        .session_store(dir.db())
        .session("a")
        .system_prompt("sys");
    drop({
        let agent = agent_on(MockBackend::new(), config);
        chat(&agent, "hi");
        agent
    });
    let store = SessionStore::open(dir.db()).unwrap();
    store.rename("a", "Greeting").unwrap();
    store.set_metadata("a", &json!({"user": 7})).unwrap();
    let exported = store.export_json("a").unwrap();
    let jsonl = store.transcript_jsonl("a").unwrap();
    let lines: Vec<Message> = jsonl
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0], Message::system("sys"));
    assert_eq!(lines.len(), 3);

    let err = store.import_json(&exported).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument);
    assert!(store.delete("a").unwrap());
    assert!(!store.delete("a").unwrap());
    assert_eq!(
        store.load("a").unwrap_err().code(),
        ErrorCode::InvalidArgument
    );
    assert_eq!(store.import_json(&exported).unwrap(), "a");
    let back = store.load("a").unwrap();
    assert_eq!(back.info.title.as_deref(), Some("Greeting"));
    assert_eq!(back.info.metadata, json!({"user": 7}));
    assert_eq!(back.messages.len(), 2);
    let not_json = store.import_json("{").unwrap_err();
    assert_eq!(not_json.code(), ErrorCode::InvalidJson);
    let err = store.rename("missing", "x").unwrap_err();
    assert!(err.to_string().contains("no session `missing`"), "{err}");
}

/// Several connections creating one new store at the same moment all
/// open it: switching a new file to WAL takes a lock SQLite's busy
/// handler does not wait for, so the store waits for it itself.
#[test]
fn many_openers_of_one_new_store_all_open_it() {
    const OPENERS: usize = 6;
    for _ in 0..10 {
        let dir = TempDir::new();
        let start = std::sync::Barrier::new(OPENERS);
        std::thread::scope(|scope| {
            let openers: Vec<_> = (0..OPENERS)
                .map(|_| {
                    scope.spawn(|| {
                        start.wait();
                        SessionStore::open(dir.db()).map(|store| store.sessions().unwrap().len())
                    })
                })
                .collect();
            for opener in openers {
                assert_eq!(opener.join().unwrap().unwrap(), 0);
            }
        });
    }
}

#[test]
fn bad_ids_and_paths_are_typed_errors() {
    let dir = TempDir::new();
    let long = "x".repeat(200);
    for id in ["", "tab\there", long.as_str()] {
        let config = Config::default().session_store(dir.db()).session(id);
        let err = Agent::with_backend(MockBackend::new(), config).unwrap_err();
        assert!(
            matches!(
                err.code(),
                ErrorCode::InvalidArgument | ErrorCode::InvalidConfig
            ),
            "{id:?}: {err}"
        );
    }
    let config = Config::default().session_store("/nonexistent-dir/zoo/sessions.db");
    let err = Agent::with_backend(MockBackend::new(), config).unwrap_err();
    assert_eq!(err.code(), ErrorCode::Io, "{err}");
    assert!(
        err.to_string().contains("/nonexistent-dir/zoo/sessions.db"),
        "{err}"
    );
    let err = Config::from_json(r#"{"session": "x"}"#).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidConfig);
    std::fs::write(dir.0.join("text.db"), "not a database at all, just text").unwrap();
    let err = SessionStore::open(dir.0.join("text.db")).unwrap_err();
    assert_eq!(err.code(), ErrorCode::Io, "{err}");
}

/// Tool rounds per chat in the crash tests: each chat is a question,
/// this many calls each answered by its result, and a final answer.
const ROUNDS: usize = 3;

/// The crash children's mock: `chats` chats of [`ROUNDS`] calls and an answer.
fn multi_round_backend(chats: usize) -> MockBackend {
    let mut script = Vec::new();
    for _ in 0..chats {
        for round in 0..ROUNDS {
            script.push(MockReply::tool_call(
                "get_weather",
                json!({"city": format!("Oslo {round}")}),
            ));
        }
        script.push(MockReply::text("It is cold in Oslo today, as usual."));
    }
    MockBackend::with_script(script)
}

/// The child of the random crash test: chats on the session forever, each
/// chat [`ROUNDS`] tool rounds long, printing how many messages are
/// committed each time a round is: at the start of each reply after the
/// first (the previous round's results are in by then) and after each chat.
fn crash_child(db: &str) {
    let config = Config::default().session_store(db).session("crash");
    let agent = agent_on(multi_round_backend(1_000), config);
    agent.register_tool(weather_tool());
    loop {
        let base = agent.history().len();
        let options = ChatOptions::new().on_event(move |event| {
            if let EventKind::TurnStarted { turn } = event.kind {
                if turn > 1 {
                    // The question, then a call and its result per round.
                    println!("committed {}", base + 1 + 2 * (turn as usize - 1));
                }
            }
        });
        agent
            .chat(format!("after {base} messages: weather in Oslo?"), options)
            .wait()
            .unwrap();
        println!("committed {}", agent.history().len());
    }
}

/// Whether `messages` is what the crash children write: chats of a
/// question, up to [`ROUNDS`] calls each followed by its result, and after
/// the last round a final answer. A chat a kill cut short ends after one
/// of its rounds (the next process starts a new chat after it).
fn check_rounds(messages: &[Message]) {
    let mut index = 0;
    while index < messages.len() {
        assert_eq!(messages[index].role, Role::User, "message {index}");
        index += 1;
        let mut rounds = 0;
        while messages
            .get(index)
            .is_some_and(|m| !m.tool_calls.is_empty())
        {
            let call = &messages[index].tool_calls[0];
            let result = messages
                .get(index + 1)
                .unwrap_or_else(|| panic!("call `{}` was stored without its result", call.id));
            assert_eq!(
                result.tool_call_id.as_ref(),
                Some(&call.id),
                "message {}",
                index + 1
            );
            (index, rounds) = (index + 2, rounds + 1);
        }
        assert!(rounds <= ROUNDS, "a chat of {rounds} rounds");
        let answered = messages
            .get(index)
            .is_some_and(|m| m.role == Role::Assistant);
        if answered {
            assert_eq!(rounds, ROUNDS, "an answer after {rounds} rounds");
            index += 1;
        } else {
            assert!(rounds > 0, "a question was stored without a reply");
        }
    }
}

/// Checks the store after a kill: intact, everything stored before still
/// there, at least `committed` messages, only whole rounds, and an agent
/// opens on it. Returns the stored messages.
fn check_after_kill(db: &str, committed: usize, before: &[Message]) -> Vec<Message> {
    let store = SessionStore::open(db).unwrap();
    assert_eq!(store.integrity_check().unwrap(), "ok");
    let messages = store.load("crash").unwrap().messages;
    assert!(
        messages.len() >= committed,
        "{} messages stored, {committed} were committed",
        messages.len()
    );
    assert_eq!(
        &messages[..before.len()],
        before,
        "a stored message changed"
    );
    check_rounds(&messages);
    let agent = agent_on(
        MockBackend::new(),
        Config::default().session_store(db).session("crash"),
    );
    assert_eq!(agent.history(), messages);
    messages
}

/// Spawns this test binary as a child process running `test` on `db`.
fn spawn_child(test: &str, db: &str) -> ChildProcess {
    spawn_child_on(test, db, "")
}

/// A child process killed when the test lets go of it, so that a failing
/// test never leaves a child behind (a writer waiting for its dead sibling
/// would wait forever).
struct ChildProcess(Child);

impl std::ops::Deref for ChildProcess {
    type Target = Child;
    fn deref(&self) -> &Child {
        &self.0
    }
}

impl std::ops::DerefMut for ChildProcess {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.0
    }
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        // Both fail harmlessly once the child has been waited for.
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Spawns this test binary as a child process running `test` on `db`
/// and `session`, its stdin and stdout piped.
fn spawn_child_on(test: &str, db: &str, session: &str) -> ChildProcess {
    let child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env("ZOO_CRASH_CHILD_DB", db)
        .env("ZOO_CHILD_SESSION", session)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    ChildProcess(child)
}

/// Reads the child's output until a line ends with `text` (libtest prints
/// the test's name and its first output on one line); false if it ends.
fn wait_for_line(lines: &mut impl Iterator<Item = std::io::Result<String>>, text: &str) -> bool {
    lines.any(|line| line.unwrap().ends_with(text))
}

/// Chats in one child of the two-process test.
const CHATS_PER_PROCESS: usize = 150;

/// A child of the two-process test: opens its session, says `ready`, waits
/// for a line on stdin (so that both children write at once), then runs
/// its chats, each a tool call and an answer.
fn writer_child(db: &str, session: &str) {
    let script = (0..CHATS_PER_PROCESS).flat_map(|_| {
        [
            MockReply::tool_call("get_weather", json!({"city": "Oslo"})),
            MockReply::text("Cold."),
        ]
    });
    let config = Config::default().session_store(db).session(session);
    let agent = agent_on(MockBackend::with_script(script), config);
    agent.register_tool(weather_tool());
    println!("ready");
    std::io::stdin().read_line(&mut String::new()).unwrap();
    // Every ten chats, wait for the other process to catch up, reading
    // the store: the two processes' writes interleave however the OS
    // schedules them.
    let other = if session == "a" { "b" } else { "a" };
    let store = SessionStore::open(db).unwrap();
    for n in 0..CHATS_PER_PROCESS {
        chat(&agent, &format!("{session} {n}"));
        if n % 10 == 9 {
            let wanted = 4 * (n as u64 + 1);
            while store.info(other).map_or(0, |info| info.message_count) < wanted {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }
    println!("done");
}

/// Two processes write two sessions of one database file at the same
/// time (in lockstep every ten chats, so their writes interleave): SQLite's
/// locks serialize their transactions, and each session ends whole and in
/// order.
#[test]
fn two_processes_write_their_own_sessions_at_once() {
    let test = "two_processes_write_their_own_sessions_at_once";
    if let Ok(db) = std::env::var("ZOO_CRASH_CHILD_DB") {
        return writer_child(&db, &std::env::var("ZOO_CHILD_SESSION").unwrap());
    }
    let dir = TempDir::new();
    let mut children: Vec<_> = ["a", "b"]
        .iter()
        .map(|session| spawn_child_on(test, &dir.db(), session))
        .collect();
    let mut outputs: Vec<_> = children
        .iter_mut()
        .map(|child| BufReader::new(child.stdout.take().unwrap()).lines())
        .collect();
    for lines in &mut outputs {
        assert!(wait_for_line(lines, "ready"), "a child did not start");
    }
    // Both are open: start them together.
    for child in &mut children {
        std::io::Write::write_all(child.stdin.as_mut().unwrap(), b"go\n").unwrap();
    }
    for (child, lines) in children.iter_mut().zip(&mut outputs) {
        assert!(wait_for_line(lines, "done"), "a child failed");
        assert!(child.wait().unwrap().success());
    }
    let store = SessionStore::open(dir.db()).unwrap();
    assert_eq!(store.integrity_check().unwrap(), "ok");
    for session in ["a", "b"] {
        let messages = store.load(session).unwrap().messages;
        assert_eq!(messages.len(), 4 * CHATS_PER_PROCESS, "session {session}");
        for (n, turn) in messages.chunks(4).enumerate() {
            assert_eq!(turn[0], Message::user(format!("{session} {n}")));
            assert_eq!(turn[1].tool_calls[0].id, format!("call_{}", n + 1));
            assert_eq!(turn[2].tool_call_id, Some(format!("call_{}", n + 1)));
            assert_eq!(turn[3].content, "Cold.");
        }
    }
}

/// A child that opens session `shared`, says so, and waits to be killed.
fn holder_child(db: &str) {
    let config = Config::default().session_store(db).session("shared");
    let agent = agent_on(MockBackend::new(), config);
    chat(&agent, "mine");
    println!("holding");
    loop {
        std::thread::park();
    }
}

/// A session open in another process is refused with a typed error that
/// says so (while the store itself stays readable); once that process is
/// gone, killed without closing anything, the session opens.
#[test]
fn a_session_open_in_another_process_is_refused_until_it_ends() {
    let test = "a_session_open_in_another_process_is_refused_until_it_ends";
    if let Ok(db) = std::env::var("ZOO_CRASH_CHILD_DB") {
        return holder_child(&db);
    }
    let dir = TempDir::new();
    let mut child = spawn_child(test, &dir.db());
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    assert!(wait_for_line(&mut lines, "holding"), "the child failed");
    let config = Config::default().session_store(dir.db()).session("shared");
    let err = Agent::with_backend(MockBackend::new(), config.clone()).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument);
    assert!(
        err.to_string().contains("session `shared`")
            && err
                .to_string()
                .contains("open in another agent (of this process or another)"),
        "{err}"
    );
    let store = SessionStore::open(dir.db()).unwrap();
    assert_eq!(store.load("shared").unwrap().messages.len(), 2);
    // Another session of the same file opens meanwhile.
    let other = agent_on(
        MockBackend::new(),
        Config::default().session_store(dir.db()).session("other"),
    );
    chat(&other, "hello");
    child.kill().unwrap();
    child.wait().unwrap();
    let agent = agent_on(MockBackend::new(), config);
    assert_eq!(agent.history().len(), 2);
    assert_eq!(chat(&agent, "now mine"), "echo: now mine");
}

/// SIGKILL at random moments of chats with several tool rounds, many
/// times: what was committed is there, every stored call has its result,
/// the file is intact, and the session reopens.
#[test]
fn a_killed_process_loses_at_most_the_round_in_flight() {
    if let Ok(db) = std::env::var("ZOO_CRASH_CHILD_DB") {
        return crash_child(&db);
    }
    let dir = TempDir::new();
    let db = dir.db();
    let mut stored = Vec::new();
    for kill in 0..60 {
        let mut child = spawn_child("a_killed_process_loses_at_most_the_round_in_flight", &db);
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        // Wait for a few commits (a different number each time), then kill
        // after a random pause: the kill lands somewhere in the following
        // rounds, their tool calls or their writes.
        let wanted = 1 + kill % 7;
        let mut committed = 0;
        let mut seen = 0;
        for line in lines.by_ref() {
            // libtest prints the test's name and its first output on one line.
            if let Some((_, n)) = line.unwrap().rsplit_once("committed ") {
                committed = n.parse().unwrap();
                seen += 1;
                if seen == wanted {
                    break;
                }
            }
        }
        assert_eq!(seen, wanted, "the child stopped early");
        std::thread::sleep(Duration::from_micros(fastrand::u64(0..3_000)));
        child.kill().unwrap();
        child.wait().unwrap();
        stored = check_after_kill(&db, committed, &stored);
    }
    assert!(
        stored.len() > 60,
        "only {} messages after 60 kills",
        stored.len()
    );
}

/// The child of the round test: one chat of five tool rounds whose fourth
/// call never returns; it says so, and waits to be killed.
fn stuck_child(db: &str) {
    let config = Config::default().session_store(db).session("rounds");
    let script = (0..5).map(|n| MockReply::tool_call("step", json!({"n": n})));
    let agent = agent_on(MockBackend::with_script(script), config);
    agent.register_tool(
        Tool::new(
            "step",
            "One step",
            json!({"type": "object", "properties": {"n": {"type": "integer"}}}),
            |args| {
                if args["n"] == 3 {
                    println!("in round 4");
                    loop {
                        std::thread::park();
                    }
                }
                Ok(json!({"done": args["n"]}))
            },
        )
        .unwrap(),
    );
    agent
        .chat("take five steps", ChatOptions::new())
        .wait()
        .unwrap();
}

/// A chat killed in its fourth tool round keeps its question and its
/// first three rounds, each call with its result; the fourth call, which
/// has no result, is not stored.
#[test]
fn a_chat_killed_after_its_third_round_keeps_the_first_three() {
    if let Ok(db) = std::env::var("ZOO_CRASH_CHILD_DB") {
        return stuck_child(&db);
    }
    let dir = TempDir::new();
    let mut child = spawn_child(
        "a_chat_killed_after_its_third_round_keeps_the_first_three",
        &dir.db(),
    );
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    // libtest prints the test's name and its first output on one line.
    assert!(
        lines.any(|line| line.unwrap().ends_with("in round 4")),
        "the child never reached round 4"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    let store = SessionStore::open(dir.db()).unwrap();
    assert_eq!(store.integrity_check().unwrap(), "ok");
    let messages = store.load("rounds").unwrap().messages;
    assert_eq!(messages.len(), 7, "{messages:#?}");
    assert_eq!(messages[0], Message::user("take five steps"));
    for round in 0..3 {
        let (call, result) = (&messages[1 + 2 * round], &messages[2 + 2 * round]);
        assert_eq!(call.tool_calls[0].arguments, json!({"n": round}));
        assert_eq!(result.tool_call_id.as_ref(), Some(&call.tool_calls[0].id));
        assert_eq!(result.content, json!({"done": round}).to_string());
    }
    // The session reopens as it was left, and a new chat follows the
    // third result.
    let agent = agent_on(
        MockBackend::new(),
        Config::default().session_store(dir.db()).session("rounds"),
    );
    assert_eq!(agent.history(), messages);
    assert_eq!(chat(&agent, "go on"), "echo: go on");
    assert_eq!(store.info("rounds").unwrap().message_count, 9);
}
