//! The engine's cost per streamed token of a remote model, for each API:
//! a local server streams a 100,000-token reply as fast as it can (the
//! whole answer prebuilt, written in one go), and the reply is read three
//! ways in the same run:
//!
//! - **baseline**: the answer's raw bytes read over HTTP with `ureq`, no
//!   parsing at all (what any client must pay);
//! - **backend**: `RemoteBackend::generate`, the bytes read on its I/O
//!   thread, each server-sent event handed over, parsed as that API's JSON
//!   and its text given to a counting `on_piece` callback;
//! - **agent**: a whole `Agent::chat` on that backend, the text reaching
//!   the chat's `on_token` callback through the agentic loop.
//!
//! Each prints the time per token, the engine's overhead per token (its
//! time less the baseline's) and the ratio to the baseline; rounds are
//! interleaved and the medians reported.
//!
//! ```sh
//! cargo run --release -p zoo-core --no-default-features --example remote_bench -- [TOKENS] [ROUNDS]
//! ```

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use zoo_core::backend::{Backend, CacheHint, GenerateRequest};
use zoo_core::{
    Agent, AnthropicProvider, CancelToken, ChatOptions, Config, GeminiProvider, Message,
    OpenAiProvider, RemoteBackend, ToolChoice,
};

/// Pieces of text the streams are made of (about 5 bytes each, as BPE
/// tokens of English prose are).
const WORDS: &[&str] = &[
    "The", " quick", " brown", " fox", " jumps", " over", " the", " lazy", " dog", ".", " It",
    " was", " a", " sunny", " day", ",", " and", " every", "one", " smiled",
];

#[derive(Clone, Copy, Debug)]
enum Api {
    OpenAi,
    Anthropic,
    Gemini,
}

impl Api {
    fn name(self) -> &'static str {
        match self {
            Api::OpenAi => "openai",
            Api::Anthropic => "anthropic",
            Api::Gemini => "gemini",
        }
    }

    /// The whole streamed answer of `tokens` text events, shaped as the API sends it.
    fn stream(self, tokens: usize) -> Vec<u8> {
        let mut out = String::with_capacity(tokens * 160);
        let piece = |i: usize| serde_json::to_string(WORDS[i % WORDS.len()]).unwrap();
        match self {
            Api::OpenAi => {
                for i in 0..tokens {
                    out.push_str(&format!(
                        "data: {{\"id\":\"chatcmpl-B1\",\"object\":\"chat.completion.chunk\",\"created\":1736000000,\
                         \"model\":\"gpt-4o-mini\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":{}}},\
                         \"finish_reason\":null}}]}}\n\n",
                        piece(i)
                    ));
                }
                out.push_str("data: {\"id\":\"chatcmpl-B1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n");
                out.push_str(&format!("data: {{\"choices\":[],\"usage\":{{\"prompt_tokens\":10,\"completion_tokens\":{tokens}}}}}\n\n"));
                out.push_str("data: [DONE]\n\n");
            }
            Api::Anthropic => {
                out.push_str("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4-5\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n");
                out.push_str("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n");
                for i in 0..tokens {
                    out.push_str(&format!(
                        "event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\
                         \"delta\":{{\"type\":\"text_delta\",\"text\":{}}}}}\n\n",
                        piece(i)
                    ));
                }
                out.push_str("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n");
                out.push_str(&format!("event: message_delta\ndata: {{\"type\":\"message_delta\",\"delta\":{{\"stop_reason\":\"end_turn\",\"stop_sequence\":null}},\"usage\":{{\"output_tokens\":{tokens}}}}}\n\n"));
                out.push_str("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
            }
            Api::Gemini => {
                for i in 0..tokens {
                    let finish = if i + 1 == tokens {
                        ",\"finishReason\":\"STOP\""
                    } else {
                        ""
                    };
                    out.push_str(&format!(
                        "data: {{\"candidates\":[{{\"content\":{{\"parts\":[{{\"text\":{}}}],\"role\":\"model\"}},\
                         \"index\":0{finish}}}],\"usageMetadata\":{{\"promptTokenCount\":10,\
                         \"candidatesTokenCount\":{},\"totalTokenCount\":{}}},\"modelVersion\":\"gemini-2.5-flash\"}}\r\n\r\n",
                        piece(i),
                        i + 1,
                        i + 11
                    ));
                }
            }
        }
        out.into_bytes()
    }
}

/// Serves `body` as an event stream to every request, as fast as it can.
fn serve(body: Arc<Vec<u8>>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let root = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let body = body.clone();
            std::thread::spawn(move || answer(stream, &body));
        }
    });
    root
}

fn answer(stream: TcpStream, body: &[u8]) {
    let mut reader = BufReader::new(&stream);
    let mut length = 0;
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let lower = line.to_ascii_lowercase();
        if let Some(value) = lower.strip_prefix("content-length:") {
            length = value.trim().parse().unwrap_or(0);
        }
        if line == "\r\n" {
            break;
        }
    }
    let mut request = vec![0; length];
    if reader.read_exact(&mut request).is_err() {
        return;
    }
    let mut out = &stream;
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = out.write_all(head.as_bytes());
    let _ = out.write_all(body);
}

fn url(api: Api, root: &str) -> String {
    match api {
        Api::OpenAi => format!("{root}/v1/chat/completions"),
        Api::Anthropic => format!("{root}/v1/messages"),
        Api::Gemini => {
            format!("{root}/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse")
        }
    }
}

fn config(api: Api, root: &str) -> Config {
    let config = Config::default().max_tokens(1_000_000);
    match api {
        Api::OpenAi => config.provider(OpenAiProvider::new(format!("{root}/v1"))),
        Api::Anthropic => {
            config.provider(AnthropicProvider::new("claude-sonnet-4-5").base_url(root))
        }
        Api::Gemini => config.provider(GeminiProvider::new("gemini-2.5-flash").base_url(root)),
    }
}

/// The raw bytes of the answer, read with no parsing; returns the time.
fn baseline(api: Api, root: &str, expected: usize) -> Duration {
    let started = Instant::now();
    let response = ureq::post(&url(api, root))
        .header("Content-Type", "application/json")
        .send("{}")
        .unwrap();
    let mut reader = response.into_body().into_reader();
    let mut buffer = vec![0; 64 * 1024];
    let mut total = 0;
    loop {
        let n = reader.read(&mut buffer).unwrap();
        if n == 0 {
            break;
        }
        total += n;
    }
    let elapsed = started.elapsed();
    assert_eq!(total, expected, "the baseline read the whole answer");
    elapsed
}

/// One reply through `RemoteBackend::generate`; returns the time.
fn backend(api: Api, root: &str, tokens: usize) -> Duration {
    let config = config(api, root);
    let mut backend = match (api, config.provider.clone().unwrap()) {
        (Api::OpenAi, zoo_core::Provider::OpenAi(p)) => RemoteBackend::openai(&p, &config),
        (Api::Anthropic, zoo_core::Provider::Anthropic(p)) => RemoteBackend::anthropic(&p, &config),
        (Api::Gemini, zoo_core::Provider::Gemini(p)) => RemoteBackend::gemini(&p, &config),
        _ => unreachable!(),
    }
    .unwrap();
    let messages = [Message::user("Tell me a long story.")];
    let request = GenerateRequest {
        messages: &messages,
        tools: &[],
        tool_choice: &ToolChoice::Auto,
        max_tokens: None,
        max_calls: 1,
        stop: &[],
        cache_hint: CacheHint::default(),
        deadline: None,
    };
    let mut pieces = 0usize;
    let mut bytes = 0usize;
    let started = Instant::now();
    let generation = backend
        .generate(
            &request,
            &mut |piece| {
                pieces += 1;
                bytes += piece.len();
            },
            &CancelToken::new(),
        )
        .unwrap();
    let elapsed = started.elapsed();
    assert_eq!(pieces, tokens, "every token reached the callback");
    assert_eq!(generation.text.len(), bytes);
    elapsed
}

/// One whole chat on an agent; returns the time.
fn agent(api: Api, root: &str, tokens: usize) -> Duration {
    let agent = Agent::create(config(api, root)).unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<usize>();
    let mut pieces = 0usize;
    let started = Instant::now();
    let response = agent
        .chat(
            "Tell me a long story.",
            ChatOptions::new().on_token(move |_| {
                pieces += 1;
                if pieces == tokens {
                    let _ = tx.send(pieces);
                }
            }),
        )
        .wait()
        .unwrap();
    let elapsed = started.elapsed();
    assert_eq!(
        rx.try_recv().ok(),
        Some(tokens),
        "every token reached on_token"
    );
    assert!(!response.text.is_empty());
    elapsed
}

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values[values.len() / 2]
}

fn per_token(d: Duration, tokens: usize) -> f64 {
    d.as_secs_f64() * 1e6 / tokens as f64
}

fn main() {
    let mut args = std::env::args().skip(1);
    let tokens: usize = args.next().map_or(100_000, |a| a.parse().expect("TOKENS"));
    let rounds: usize = args.next().map_or(5, |a| a.parse().expect("ROUNDS"));
    println!(
        "{tokens} streamed tokens per reply, {rounds} interleaved rounds, medians (µs per token)"
    );
    println!(
        "| api | stream MB | baseline | backend | backend overhead | backend / baseline | agent | agent overhead | agent / baseline |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for api in [Api::OpenAi, Api::Anthropic, Api::Gemini] {
        let body = Arc::new(api.stream(tokens));
        let size = body.len();
        let root = serve(body);
        // One untimed round warms the connection code and the allocator.
        baseline(api, &root, size);
        backend(api, &root, tokens);
        let (mut base, mut ours, mut whole) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..rounds {
            base.push(baseline(api, &root, size));
            ours.push(backend(api, &root, tokens));
            whole.push(agent(api, &root, tokens));
        }
        let (b, o, w) = (
            per_token(median(base), tokens),
            per_token(median(ours), tokens),
            per_token(median(whole), tokens),
        );
        println!(
            "| {} | {:.1} | {b:.3} | {o:.3} | {:.3} | {:.1} | {w:.3} | {:.3} | {:.1} |",
            api.name(),
            size as f64 / 1e6,
            o - b,
            o / b,
            w - b,
            w / b
        );
    }
}
