//! Property tests of what reads untrusted text: the tool-call parser (model
//! output), the MCP client's JSON-RPC reader (a server's stdout) and
//! `Config::from_json` (a host's settings). Each must answer every input
//! with a result or a typed error, never a panic or a hang, and must give
//! back exactly what a well-formed input holds.
//!
//! proptest stands in for a fuzzer, which would need nightly Rust. The
//! number of cases keeps this file under a minute in the debug profile on a
//! busy two-core machine; `ZOO_PROPTEST_SCALE=n` runs n times as many (the
//! full test run, scripts/test, sets it). A failing case is shrunk, printed,
//! and saved in `proptest-regressions/properties.txt`, which is committed so
//! that every later run replays it first.

use std::collections::BTreeSet;
use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use serde_json::{json, Map, Value};
use zoo_core::mcp::{McpClient, McpTool, McpTransport, PROTOCOL_VERSIONS};
use zoo_core::tools::parser::{parse, ParsedCall};
use zoo_core::{Config, ErrorCode};

/// `cases` cases, times `ZOO_PROPTEST_SCALE` when it is set.
fn config(cases: u32) -> ProptestConfig {
    let scale = std::env::var("ZOO_PROPTEST_SCALE")
        .ok()
        .and_then(|s| s.parse::<u32>().ok())
        .unwrap_or(1);
    ProptestConfig {
        cases: cases.saturating_mul(scale.max(1)),
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "proptest-regressions/properties.txt",
        ))),
        ..ProptestConfig::default()
    }
}

/// Any JSON value, with strings of any characters (control characters,
/// quotes, backslashes, markup, astral planes) and numbers of every kind.
/// Floats are quarters, which every float parser reads back exactly.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<i32>().prop_map(|q| Value::from(f64::from(q) / 4.0)),
        any::<String>().prop_map(Value::String),
        prop::sample::select(vec![
            "<tool_call>",
            "</tool_call>",
            "```",
            "[TOOL_CALLS]",
            "{\"name\": \"x\"}",
            "\\\"",
            "\u{0}",
            "\u{2028}",
            "🦀",
        ])
        .prop_map(|s| Value::String(s.to_string())),
    ];
    leaf.prop_recursive(4, 32, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((any::<String>(), inner), 0..5)
                .prop_map(|entries| Value::Object(entries.into_iter().collect())),
        ]
    })
}

/// A JSON object of any contents.
fn json_object() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::vec((any::<String>(), json_value()), 0..5)
        .prop_map(|entries| entries.into_iter().collect())
}

/// The JSON text of `value` with every non-ASCII character escaped as
/// `\uXXXX` (surrogate pairs beyond the BMP), as Python's `json` writes it.
/// Outside strings JSON text is ASCII, so only strings change.
fn ascii_json(value: &Value) -> String {
    let mut out = String::new();
    for c in value.to_string().chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------
// The tool-call parser
// ---------------------------------------------------------------------------

/// Markup, JSON and prose fragments glued at random.
fn markup() -> impl Strategy<Value = String> {
    const PIECES: &[&str] = &[
        "<tool_call>",
        "</tool_call>",
        "<|python_tag|>",
        "[TOOL_CALLS]",
        "[ARGS]",
        "[CALL_ID]",
        "```",
        "```json\n",
        "{",
        "}",
        "[",
        "]",
        "\"",
        "\\",
        ":",
        ",",
        ";",
        "\n",
        " ",
        "\"name\"",
        "\"arguments\"",
        "\"parameters\"",
        "\"function\"",
        "\"type\"",
        "\"x\"",
        "42",
        "-0.5e-3",
        "1e999",
        "null",
        "true",
        "{\"name\": \"t\", \"arguments\": {}}",
        "{\"a\": \"}\"}",
        "\"\\u00e9\"",
        "\"\\ud800\"",
        "\"\\\"",
        "\\n",
        "é",
        "日本",
        "🦀",
        "\u{0}",
        "\u{1b}",
        "prose",
    ];
    prop::collection::vec(
        prop_oneof![
            8 => prop::sample::select(PIECES).prop_map(str::to_string),
            1 => any::<String>(),
        ],
        0..64,
    )
    .prop_map(|pieces| pieces.concat())
}

/// What holds for any reply, whatever the text was.
fn check_reply_shape(text: &str) -> Result<(), TestCaseError> {
    let reply = parse(text);
    prop_assert_eq!(reply.content.trim(), reply.content.as_str());
    prop_assert!(reply.content.len() <= text.len());
    for call in &reply.calls {
        prop_assert!(!call.name.trim().is_empty(), "{:?}", call);
        prop_assert!(call.arguments.is_object(), "{:?}", call);
    }
    for failure in &reply.failures {
        prop_assert!(!failure.message.is_empty(), "{:?}", failure);
        prop_assert!(!failure.fragment.is_empty(), "{:?}", failure);
    }
    prop_assert_eq!(reply.has_calls(), !reply.calls.is_empty());
    Ok(())
}

/// How a call is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Format {
    Hermes,
    HermesSpaced,
    PythonTag,
    Llama3Bare,
    MistralList,
    MistralNamed,
    Fenced,
    OpenAiStringArguments,
}

const FORMATS: [Format; 8] = [
    Format::Hermes,
    Format::HermesSpaced,
    Format::PythonTag,
    Format::Llama3Bare,
    Format::MistralList,
    Format::MistralNamed,
    Format::Fenced,
    Format::OpenAiStringArguments,
];

/// A well-formed call to `name` with `arguments`, written in `format`, with
/// non-ASCII characters escaped or not: the text before its JSON, the JSON,
/// and the text after.
fn write_call(
    name: &str,
    arguments: &Value,
    format: Format,
    ascii: bool,
) -> (String, String, &'static str) {
    let encode = |value: &Value| {
        if ascii {
            ascii_json(value)
        } else {
            value.to_string()
        }
    };
    let plain = || encode(&json!({"name": name, "arguments": arguments}));
    let llama = || encode(&json!({"name": name, "parameters": arguments}));
    match format {
        Format::Hermes => ("<tool_call>".into(), plain(), "</tool_call>"),
        Format::HermesSpaced => ("<tool_call>\n".into(), plain(), "\n</tool_call>"),
        Format::PythonTag => ("<|python_tag|>".into(), llama(), ""),
        Format::Llama3Bare => (String::new(), llama(), ""),
        Format::MistralList => ("[TOOL_CALLS]".into(), format!("[{}]", plain()), ""),
        Format::MistralNamed => (format!("[TOOL_CALLS]{name}[ARGS]"), encode(arguments), ""),
        Format::Fenced => ("```json\n".into(), plain(), "\n```"),
        Format::OpenAiStringArguments => (
            String::new(),
            encode(&json!({
                "type": "function",
                "function": {"name": name, "arguments": arguments.to_string()},
            })),
            "",
        ),
    }
}

/// A well-formed call written in some format, its parts (see
/// [`write_call`]), and the call it should parse to.
#[derive(Debug, Clone)]
struct Written {
    call: ParsedCall,
    format: Format,
    before: String,
    json: String,
    after: &'static str,
}

impl Written {
    fn text(&self) -> String {
        format!("{}{}{}", self.before, self.json, self.after)
    }
}

/// A call with a valid tool name, arguments from `arguments`, any format.
fn call_with(arguments: BoxedStrategy<Map<String, Value>>) -> impl Strategy<Value = Written> {
    (
        "[A-Za-z0-9_-]{1,64}",
        arguments,
        prop::sample::select(FORMATS.to_vec()),
        any::<bool>(),
    )
        .prop_map(|(name, arguments, format, ascii)| {
            let arguments = Value::Object(arguments);
            let (before, json, after) = write_call(&name, &arguments, format, ascii);
            Written {
                call: ParsedCall { name, arguments },
                format,
                before,
                json,
                after,
            }
        })
}

/// A call with any arguments.
fn call() -> impl Strategy<Value = Written> {
    call_with(json_object().boxed())
}

/// A call whose arguments hold only letters and spaces in keys and strings.
/// Cut short, such a call cannot be completed by the text after it (its
/// open string, if any, ends at the next quote, which a letter follows).
fn plain_call() -> impl Strategy<Value = Written> {
    let value = prop_oneof![
        "[a-z é日本]{0,8}".prop_map(Value::String),
        any::<i32>().prop_map(Value::from),
        any::<bool>().prop_map(Value::Bool),
    ];
    call_with(
        prop::collection::btree_map("[a-z]{1,6}", value, 0..4)
            .prop_map(|m| m.into_iter().collect())
            .boxed(),
    )
}

/// A plain call written without its end: its JSON cut after the first byte
/// and before the last, so that it is begun but unreadable.
fn broken_call() -> impl Strategy<Value = Written> {
    (plain_call(), any::<prop::sample::Index>()).prop_map(|(mut written, cut)| {
        let mut at = 1 + cut.index(written.json.len() - 1);
        while !written.json.is_char_boundary(at) {
            at -= 1;
        }
        written.json.truncate(at);
        written.after = "";
        written
    })
}

/// Prose: words numbered `q{segment}n{word}z`, so each can be looked for,
/// between spaces, newlines and punctuation that is not markup.
fn prose(segment: usize) -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec![" ", "\n", ", ", ". ", " é ", " 日本 ", "! ", "\t"]),
        1..6,
    )
    .prop_map(move |gaps| {
        gaps.iter()
            .enumerate()
            .map(|(word, gap)| format!("q{segment}n{word}z{gap}"))
            .collect()
    })
}

fn words(text: &str) -> Vec<&str> {
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| w.starts_with('q') && w.ends_with('z'))
        .collect()
}

/// What the parser keeps of prose pieces separated by calls: each piece
/// trimmed, empty ones dropped, joined by a newline where the gap held one.
fn expected_content(pieces: &[String]) -> String {
    let mut content = String::new();
    let mut gap = String::new();
    for piece in pieces {
        let trimmed = piece.trim();
        if trimmed.is_empty() {
            gap.push_str(piece);
            continue;
        }
        if !content.is_empty() {
            gap.push_str(&piece[..piece.len() - piece.trim_start().len()]);
            content.push_str(if gap.contains('\n') { "\n" } else { " " });
        }
        content.push_str(trimmed);
        gap = piece[piece.trim_end().len()..].to_string();
    }
    content
}

/// The separators around calls: a call never touches a word, so a word is
/// never a fence's language tag.
fn gap() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![" ", "\n", " \n ", "\n\n"])
}

proptest! {
    #![proptest_config(config(512))]

    /// Any string at all.
    #[test]
    fn parser_never_panics_on_any_string(text in any::<String>()) {
        check_reply_shape(&text)?;
    }

    /// Markup, JSON and prose glued at random, the text a broken model writes.
    #[test]
    fn parser_never_panics_on_markup(text in markup()) {
        check_reply_shape(&text)?;
    }

    /// A call in any format, with any arguments, among prose: found with its
    /// exact name and arguments, and the prose is the content.
    #[test]
    fn a_call_in_prose_is_found_exactly(
        before in prose(0),
        written in call(),
        gaps in (gap(), gap()),
        after in prose(1),
    ) {
        let text = format!("{before}{}{}{}{after}", gaps.0, written.text(), gaps.1);
        let reply = parse(&text);
        prop_assert_eq!(&reply.calls, &vec![written.call]);
        prop_assert!(reply.failures.is_empty(), "{:?}", reply.failures);
        let pieces = [format!("{before}{}", gaps.0), format!("{}{after}", gaps.1)];
        prop_assert_eq!(reply.content, expected_content(&pieces));
    }

    /// Several calls in several formats between prose: all found, in order,
    /// and the content is the prose.
    #[test]
    fn calls_and_prose_are_all_kept(
        segments in prop::collection::vec((call(), gap(), gap()), 0..5),
        last in prose(99),
    ) {
        let mut text = String::new();
        let mut pieces = vec![String::new()];
        let mut expected = Vec::new();
        for (i, (written, left, right)) in segments.into_iter().enumerate() {
            let words: String = (0..=i % 3).map(|w| format!("q{i}n{w}z ")).collect();
            text.push_str(&format!("{words}{left}{}{right}", written.text()));
            if let Some(piece) = pieces.last_mut() {
                piece.push_str(&format!("{words}{left}"));
            }
            pieces.push(right.to_string());
            expected.push(written.call);
        }
        text.push_str(&last);
        if let Some(piece) = pieces.last_mut() {
            piece.push_str(&last);
        }
        let reply = parse(&text);
        prop_assert_eq!(&reply.calls, &expected);
        prop_assert!(reply.failures.is_empty(), "{:?}", reply.failures);
        prop_assert_eq!(reply.content, expected_content(&pieces));
    }

    /// With broken calls among the good ones, no prose is lost: every word
    /// is in the content, or in the fragment of a failure (a broken call
    /// runs to the next marker), or inside a call that swallowed it. Every
    /// call begun after a marker and cut off is reported (outside fences).
    #[test]
    fn text_is_never_silently_dropped(
        segments in prop::collection::vec(
            prop_oneof![
                prose(0).prop_map(|p| (p, false)),
                plain_call().prop_map(|w| (w.text(), false)),
                broken_call().prop_map(|w| (w.text(), true)),
            ],
            1..8,
        ),
        gaps in prop::collection::vec(gap(), 8),
    ) {
        let mut text = String::new();
        let mut broken_after_marker = 0;
        for (i, (segment, broken)) in segments.iter().enumerate() {
            // Each prose segment gets its own numbers.
            let segment = segment.replace("q0n", &format!("q{i}n"));
            let marked = ["<tool_call>", "<|python_tag|>", "[TOOL_CALLS]"]
                .iter()
                .any(|m| segment.starts_with(m));
            if *broken && marked {
                broken_after_marker += 1;
            }
            text.push_str(&segment);
            text.push_str(gaps[i]);
        }
        let reply = parse(&text);
        for word in words(&text) {
            let kept = reply.content.contains(word)
                || reply.failures.iter().any(|f| f.fragment.contains(word))
                || reply.calls.iter().any(|c| {
                    c.name.contains(word) || c.arguments.to_string().contains(word)
                });
            prop_assert!(kept, "`{}` was dropped from {:?}: {:?}", word, text, reply);
        }
        // A marker inside a code fence that is no call is the fence's
        // content, not a call begun.
        prop_assert!(
            text.contains("```") || reply.failures.len() >= broken_after_marker,
            "{} broken calls after markers, {} failures: {:?}",
            broken_after_marker,
            reply.failures.len(),
            reply
        );
    }
}

// ---------------------------------------------------------------------------
// The MCP client's JSON-RPC reader, through a stdio server
// ---------------------------------------------------------------------------
//
// The reader is internal; what it serves is `McpClient`. A small POSIX
// shell server (quick to start, unlike Python) answers `initialize` and
// `tools/list` with results given in its environment, verbatim, and may
// write arbitrary bytes (octal escapes for printf) before its first
// `tools/list` answer. The id is cut from the request the client writes,
// `{"jsonrpc":"2.0","id":N,"method":...`.

const SERVER: &str = r#"
lists=0
while IFS= read -r line; do
  id=${line#*\"id\":}
  id=${id%%,*}
  case $line in
    *'"method":"initialize"'*) result=$ZOO_INIT ;;
    *'"method":"tools/list"'*)
      lists=$((lists + 1))
      if [ "$lists" = 1 ] && [ -n "$ZOO_GARBAGE" ]; then
        printf "$ZOO_GARBAGE"
        printf '\n'
      fi
      result=$ZOO_TOOLS ;;
    *) continue ;;
  esac
  printf '{"jsonrpc":"2.0","id":%s,"result":%s}\n' "$id" "$result"
done
"#;

/// What the server says about itself.
#[derive(Debug, Clone)]
struct ServerSays {
    version: &'static str,
    name: String,
    server_version: String,
    instructions: Option<String>,
    capabilities: Map<String, Value>,
    tools: Vec<McpTool>,
    ascii: bool,
}

fn server_says() -> impl Strategy<Value = ServerSays> {
    let tool = (
        "[A-Za-z0-9_-]{1,64}",
        proptest::option::of(any::<String>()),
        any::<String>(),
        json_object(),
    )
        .prop_map(|(name, title, description, schema)| McpTool {
            name,
            title,
            description,
            input_schema: Value::Object(schema),
        });
    (
        prop::sample::select(PROTOCOL_VERSIONS.to_vec()),
        any::<String>(),
        any::<String>(),
        proptest::option::of(any::<String>()),
        json_object(),
        json_value(),
        prop::collection::vec(tool, 0..4),
        any::<bool>(),
    )
        .prop_map(
            |(
                version,
                name,
                server_version,
                instructions,
                mut capabilities,
                tools_cap,
                tools,
                ascii,
            )| {
                // list_tools asks only a server that offers tools.
                capabilities.insert("tools".into(), tools_cap);
                ServerSays {
                    version,
                    name,
                    server_version,
                    instructions,
                    capabilities,
                    tools,
                    ascii,
                }
            },
        )
}

/// Bytes a broken server may write: anything, or lines of JSON, some of them
/// shaped like JSON-RPC messages with members of the wrong kinds.
fn garbage() -> impl Strategy<Value = Vec<u8>> {
    let member = prop_oneof![
        json_value(),
        prop::sample::select(vec![
            json!(1),
            json!(2),
            json!("2"),
            json!(null),
            json!(-1),
            json!(1.5),
            json!(u64::MAX),
            json!("ping"),
            json!("notifications/tools/list_changed"),
            json!("notifications/message"),
            json!({"code": -32600, "message": "bad"}),
            json!({"code": "x"}),
        ]),
    ];
    let rpc = prop::collection::vec(
        (
            prop::sample::select(vec!["jsonrpc", "id", "method", "params", "result", "error"]),
            member,
        ),
        0..5,
    )
    .prop_map(|members| {
        Value::Object(
            members
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
        )
    });
    let line = prop_oneof![
        rpc.clone().prop_map(|v| v.to_string().into_bytes()),
        prop::collection::vec(rpc, 0..3)
            .prop_map(|batch| Value::Array(batch).to_string().into_bytes()),
        json_value().prop_map(|v| v.to_string().into_bytes()),
        prop::collection::vec(any::<u8>(), 0..200),
        prop::sample::select(vec![
            &b""[..],
            b"   ",
            b"\r",
            b"{",
            b"{\"jsonrpc\":\"2.0\",\"id\":",
            b"\xff\xfe",
            b"\x00",
            b"[]",
            b"null",
        ])
        .prop_map(<[u8]>::to_vec),
    ];
    prop::collection::vec(line, 1..6).prop_map(|lines| lines.join(&b'\n'))
}

/// `bytes` as a printf format that writes exactly them.
fn octal(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("\\{b:03o}")).collect()
}

fn encode(value: &Value, ascii: bool) -> String {
    if ascii {
        ascii_json(value)
    } else {
        value.to_string()
    }
}

/// Connects to the shell server saying `says`, writing `garbage` first.
fn connect(says: &ServerSays, garbage: &[u8]) -> zoo_core::Result<std::sync::Arc<McpClient>> {
    let mut server_info = Map::new();
    server_info.insert("name".into(), says.name.clone().into());
    server_info.insert("version".into(), says.server_version.clone().into());
    let mut init = Map::new();
    init.insert("protocolVersion".into(), says.version.into());
    init.insert(
        "capabilities".into(),
        Value::Object(says.capabilities.clone()),
    );
    init.insert("serverInfo".into(), Value::Object(server_info));
    if let Some(instructions) = &says.instructions {
        init.insert("instructions".into(), instructions.clone().into());
    }
    let tools = json!({"tools": serde_json::to_value(&says.tools).expect("tools serialize")});
    let transport = McpTransport::stdio("sh")
        .args(["-c", SERVER])
        .env("ZOO_INIT", encode(&Value::Object(init), says.ascii))
        .env("ZOO_TOOLS", encode(&tools, says.ascii))
        .env("ZOO_GARBAGE", octal(garbage))
        // Long enough for a loaded machine; a reader that died would show
        // as this timeout.
        .timeout(Duration::from_secs(30));
    McpClient::connect("prop", &McpTransport::Stdio(transport))
}

proptest! {
    #![proptest_config(config(64))]

    /// Whatever the server says, in whatever characters and escapes, the
    /// client reads exactly that.
    #[test]
    fn json_rpc_messages_round_trip(says in server_says()) {
        let client = connect(&says, b"").map_err(|e| TestCaseError::fail(e.to_string()))?;
        let handshake = client.handshake().expect("connected clients have a handshake");
        prop_assert_eq!(handshake.protocol_version.as_str(), says.version);
        prop_assert_eq!(&handshake.server_name, &says.name);
        prop_assert_eq!(&handshake.server_version, &says.server_version);
        prop_assert_eq!(&handshake.instructions, &says.instructions);
        prop_assert_eq!(&handshake.capabilities, &Value::Object(says.capabilities.clone()));
        let tools = client.list_tools().map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(tools, says.tools.clone());
        client.close();
    }

    /// Arbitrary bytes and malformed messages on the server's stdout fail
    /// at most the request in flight, with a typed error, and the reader
    /// goes on: once it is past them, requests are answered again. Each
    /// message can spoil at most one request (the one in flight when it is
    /// read; a batch is as many messages), so as many tries as messages,
    /// and two more, must see the answer.
    #[test]
    fn json_rpc_reader_survives_any_bytes(says in server_says(), garbage in garbage()) {
        let client = connect(&says, &garbage).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let messages: usize = garbage
            .split(|&b| b == b'\n')
            .map(|line| match serde_json::from_slice::<Value>(line) {
                Ok(Value::Array(batch)) => batch.len().max(1),
                _ => 1,
            })
            .sum();
        let tries = messages + 2;
        let mut answered = false;
        for _ in 0..tries {
            match client.list_tools() {
                Ok(tools) if tools == says.tools => {
                    answered = true;
                    break;
                }
                // A line of the garbage answered with the right id.
                Ok(_) => {}
                Err(error) => prop_assert_eq!(error.code(), ErrorCode::Mcp, "{}", error),
            }
        }
        prop_assert!(answered, "no answer after {} tries", tries);
        client.close();
    }
}

// ---------------------------------------------------------------------------
// Config::from_json
// ---------------------------------------------------------------------------

/// Every key a config has.
const CONFIG_KEYS: &[&str] = &[
    "model_path",
    "context_size",
    "batch_size",
    "threads",
    "gpu_layers",
    "seed",
    "temperature",
    "top_p",
    "top_k",
    "min_p",
    "repeat_penalty",
    "max_tokens",
    "stop",
    "system_prompt",
    "template",
    "tool_choice",
    "max_tool_iterations",
    "max_tool_retries",
];

/// JSON text of a value for a config key: every JSON type, numbers at and
/// past every bound, the words Python's `json` writes for non-finite floats
/// (not JSON), and strings that look like numbers or choices.
fn config_value() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(vec![
            "0", "1", "-1", "64", "63", "1024", "1025", "4096", "2147483647", "2147483648",
            "-2147483648", "-2147483649", "4294967295", "4294967296", "18446744073709551615",
            "18446744073709551616", "-9223372036854775809", "123456789012345678901234567890",
            "1e400", "-1e400", "1e-400", "0.0", "-0.0", "0.5", "0.7", "1.0", "1.5", "2.0",
            "100.0", "1e38", "3.5e38", "-3.5e38", "1e-46", "64.5", "NaN", "Infinity",
            "-Infinity", "nan", "null", "true", "false", "\"\"", "\"NaN\"", "\"Infinity\"",
            "\"inf\"", "\"1\"", "\"auto\"", "\"required\"", "\"none\"", "\"chatml\"",
            "\"llama3\"", "\"get_weather\"", "\"bad name!\"", "\"model.gguf\"", "[]",
            "[\"</s>\"]", "[\"\", \"\\u0000\"]", "[1]", "{}", "{\"a\": 1}",
        ])
        .prop_map(str::to_string),
        2 => json_value().prop_map(|v| v.to_string()),
        1 => any::<i64>().prop_map(|n| n.to_string()),
        1 => any::<f64>().prop_map(|f| format!("{f:e}")),
        1 => any::<String>().prop_map(|s| Value::String(s).to_string()),
    ]
}

/// A config object's text: real keys (sometimes twice), keys that are
/// nearly right, and any keys, with any values.
fn config_text() -> impl Strategy<Value = String> {
    let key = prop_oneof![
        6 => prop::sample::select(CONFIG_KEYS.to_vec()).prop_map(str::to_string),
        1 => prop::sample::select(vec!["Temperature", "context-size", "modelPath", "", " top_k"])
            .prop_map(str::to_string),
        1 => any::<String>(),
    ];
    prop::collection::vec((key, config_value()), 0..8).prop_map(|entries| {
        let entries: Vec<String> = entries
            .into_iter()
            .map(|(k, v)| format!("{}: {v}", Value::String(k)))
            .collect();
        format!("{{{}}}", entries.join(", "))
    })
}

fn check_config(text: &str) -> Result<(), TestCaseError> {
    match Config::from_json(text) {
        Ok(config) => {
            prop_assert!(config.validate().is_ok(), "{:?} from {}", config, text);
            // What was accepted is written back and read again unchanged.
            let written = serde_json::to_string(&config).expect("configs serialize");
            let again = Config::from_json(&written);
            prop_assert_eq!(
                again.as_ref().ok(),
                Some(&config),
                "{} from {}: {:?}",
                written,
                text,
                again
            );
        }
        Err(error) => {
            prop_assert!(
                matches!(
                    error.code(),
                    ErrorCode::InvalidConfig | ErrorCode::InvalidJson
                ),
                "{:?} for {}",
                error,
                text
            );
            prop_assert!(!error.to_string().is_empty());
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(512))]

    /// Objects of config keys with any values.
    #[test]
    fn config_from_json_answers_every_object(text in config_text()) {
        check_config(&text)?;
    }

    /// Any JSON value at all, and any text at all.
    #[test]
    fn config_from_json_answers_any_text(
        text in prop_oneof![json_value().prop_map(|v| v.to_string()), any::<String>()]
    ) {
        check_config(&text)?;
    }

    /// Each key alone, with each kind of value: the error, when there is one,
    /// is about that key.
    #[test]
    fn config_errors_name_the_key(key in prop::sample::select(CONFIG_KEYS.to_vec()), value in config_value()) {
        let text = format!("{{\"{key}\": {value}}}");
        check_config(&text)?;
        if let Err(error) = Config::from_json(&text) {
            if error.code() == ErrorCode::InvalidConfig {
                prop_assert!(error.to_string().contains(key), "{} for {}", error, text);
            }
        }
    }
}

/// The generators above make what they promise: calls in every format, and
/// garbage that is sometimes JSON-RPC-shaped. A generator that silently made
/// only trivial inputs would let every property pass.
#[test]
fn generators_reach_every_format() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let mut seen = BTreeSet::new();
    for _ in 0..400 {
        let written = call().new_tree(&mut runner).expect("a call").current();
        assert_eq!(
            parse(&written.text()).calls,
            vec![written.call.clone()],
            "{}",
            written.text()
        );
        seen.insert(written.format);
    }
    assert_eq!(seen.len(), FORMATS.len(), "formats seen: {seen:?}");
    for _ in 0..100 {
        let broken = broken_call()
            .new_tree(&mut runner)
            .expect("a call")
            .current();
        let reply = parse(&broken.text());
        assert!(reply.calls.is_empty(), "{}: {reply:?}", broken.text());
    }
    let mut rpc_like = 0;
    for _ in 0..200 {
        let bytes = garbage().new_tree(&mut runner).expect("garbage").current();
        if bytes.windows(9).any(|w| w == b"\"jsonrpc\"") {
            rpc_like += 1;
        }
    }
    assert!(
        rpc_like > 20,
        "{rpc_like} of 200 garbage samples look like JSON-RPC"
    );
}
