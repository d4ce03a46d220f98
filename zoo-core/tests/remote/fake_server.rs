//! A fake model server on 127.0.0.1 (OpenAI-compatible, Anthropic or
//! Gemini: it speaks whatever its script says): it plays scripted answers
//! in order (one per request), recording each request, and tells the test
//! when an answer was sent, so that tests wait on events, never on sleeps.
//!
//! Streams are sent with chunked transfer encoding, one SSE event per HTTP
//! chunk, so that each delta reaches the client on its own and a dropped
//! connection is a broken body, as with a real server.

use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

/// One scripted answer.
#[derive(Debug, Clone)]
pub enum Answer {
    /// A complete event stream (`text/event-stream`).
    Stream(Vec<String>),
    /// These events, then the connection is cut without ending the body.
    StreamThenDrop(Vec<String>),
    /// These events, then nothing more until the client goes away.
    StreamThenHang(Vec<String>),
    /// No answer at all until the client goes away.
    Hang,
    /// An answer with this status, extra headers and body.
    Status {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// A 200 answer with a whole JSON body (a server that does not stream).
    Json(String),
}

impl Answer {
    /// A status answer with a JSON body and no extra headers.
    pub fn status(status: u16, body: &str) -> Self {
        Answer::Status {
            status,
            headers: Vec::new(),
            body: body.to_string(),
        }
    }
}

/// What the server saw of one request.
#[derive(Debug, Clone)]
pub struct Request {
    pub path: String,
    /// Header names in lower case.
    pub headers: HashMap<String, String>,
    pub body: Value,
    pub at: Instant,
}

/// The server; it stops accepting when dropped (its threads end with
/// their connections).
pub struct FakeServer {
    /// `http://127.0.0.1:<port>/v1`, an OpenAI-compatible base URL.
    pub base_url: String,
    /// `http://127.0.0.1:<port>`, the root (Anthropic's and Gemini's base URL).
    pub root: String,
    requests: Arc<Mutex<Vec<Request>>>,
    /// The index (from 0) of each request whose answer was sent in full,
    /// or up to its hang.
    answered: Receiver<usize>,
}

impl FakeServer {
    /// Starts a server that plays `answers` in order; a request past the
    /// script gets a 599 that no test expects.
    pub fn start(answers: Vec<Answer>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let root = format!("http://{}", listener.local_addr().unwrap());
        let base_url = format!("{root}/v1");
        let script = Arc::new(Mutex::new(VecDeque::from(answers)));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let (tx, answered) = mpsc::channel();
        let recorded = requests.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let (script, recorded, tx) = (script.clone(), recorded.clone(), tx.clone());
                std::thread::spawn(move || serve(stream, &script, &recorded, &tx));
            }
        });
        FakeServer {
            base_url,
            root,
            requests,
            answered,
        }
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }

    /// Waits (up to a minute, a hang detector) until the answer to
    /// request `index` (from 0) was sent, up to its hang if it has one.
    pub fn wait_for_answer(&self, index: usize) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.answered.recv_timeout(left) {
                Ok(i) if i == index => return,
                Ok(_) => {}
                Err(_) => panic!("the fake server never answered request {index}"),
            }
        }
    }
}

fn serve(
    stream: TcpStream,
    script: &Mutex<VecDeque<Answer>>,
    recorded: &Mutex<Vec<Request>>,
    answered: &Sender<usize>,
) {
    let Some(request) = read_request(&stream) else {
        return;
    };
    let index = {
        let mut all = recorded.lock().unwrap();
        all.push(request);
        all.len() - 1
    };
    let answer = script
        .lock()
        .unwrap()
        .pop_front()
        .unwrap_or_else(|| Answer::status(599, r#"{"error": "no answer scripted"}"#));
    let mut out = &stream;
    match answer {
        Answer::Hang => {
            let _ = answered.send(index);
            let mut rest = Vec::new();
            let _ = (&stream).read_to_end(&mut rest);
        }
        Answer::Status {
            status,
            headers,
            body,
        } => {
            let mut head = format!(
                "HTTP/1.1 {status} Scripted\r\nContent-Type: application/json\r\n\
                 Content-Length: {}\r\nConnection: close\r\n",
                body.len()
            );
            for (name, value) in headers {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            let _ = out.write_all(format!("{head}\r\n{body}").as_bytes());
            let _ = out.flush();
            let _ = stream.shutdown(Shutdown::Write);
            let _ = answered.send(index);
        }
        Answer::Json(body) => {
            let _ = out.write_all(
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\
                     Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                )
                .as_bytes(),
            );
            let _ = stream.shutdown(Shutdown::Write);
            let _ = answered.send(index);
        }
        Answer::Stream(events) => {
            send_events(out, &events);
            let _ = out.write_all(b"0\r\n\r\n");
            let _ = stream.shutdown(Shutdown::Write);
            let _ = answered.send(index);
        }
        Answer::StreamThenDrop(events) => {
            send_events(out, &events);
            // Half a chunk, then the connection is gone.
            let _ = out.write_all(b"40\r\ndata: {\"choi");
            let _ = stream.shutdown(Shutdown::Both);
            let _ = answered.send(index);
        }
        Answer::StreamThenHang(events) => {
            send_events(out, &events);
            let _ = answered.send(index);
            // Until the client closes (a cancel shuts its socket down).
            let mut rest = Vec::new();
            let _ = (&stream).read_to_end(&mut rest);
        }
    }
}

fn send_events(mut out: &TcpStream, events: &[String]) {
    let _ = out.write_all(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\
          Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
    );
    for event in events {
        let event = format!("{event}\n\n");
        let _ = out.write_all(format!("{:x}\r\n{event}\r\n", event.len()).as_bytes());
        let _ = out.flush();
    }
}

fn read_request(stream: &TcpStream) -> Option<Request> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let path = line.split_whitespace().nth(1)?.to_string();
    let mut headers = HashMap::new();
    loop {
        line.clear();
        reader.read_line(&mut line).ok()?;
        let text = line.trim_end();
        if text.is_empty() {
            break;
        }
        let (name, value) = text.split_once(':')?;
        headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_string());
    }
    let length: usize = headers.get("content-length")?.parse().ok()?;
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Request {
        path,
        headers,
        body: serde_json::from_slice(&body).ok()?,
        at: Instant::now(),
    })
}

/// The events of a fixture file (`fixtures/<name>.sse`): blank-line
/// separated, as a server sends them.
pub fn fixture(name: &str) -> Vec<String> {
    let path = format!(
        "{}/tests/remote/fixtures/{name}.sse",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.split("\n\n")
        .map(str::trim)
        .filter(|event| !event.is_empty())
        .map(str::to_string)
        .collect()
}
