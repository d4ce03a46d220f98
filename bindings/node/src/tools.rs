//! JavaScript tools: the handler runs on the JS thread through a weak
//! threadsafe function, and the agent's tool thread waits for its result.
//!
//! The package wraps every user handler in an `async` function that never
//! rejects: it resolves to `{"ok":true,"value":...}` or
//! `{"ok":false,"error":"TypeError: ..."}` (`wrapTool` in
//! `node/lib/zoo-keeper.js`). So a sync
//! or async handler, one that throws and one that rejects all come back the
//! same way, as a Promise of a JSON string; a failure becomes a tool error
//! the model reads, never an exception in Node.

use std::future::Future;
use std::pin::pin;
use std::sync::mpsc;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::Thread;

use napi::bindgen_prelude::{Function, Promise};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::Status;
use serde_json::Value;

/// A tool handler callable from any thread. Weak: a registered tool does
/// not keep the Node process alive.
pub type ToolFunction = ThreadsafeFunction<String, Promise<String>, String, Status, false, true>;

/// Makes the threadsafe function for a wrapped handler.
pub fn tool_function(handler: Function<'_, String, Promise<String>>) -> napi::Result<ToolFunction> {
    handler
        .build_threadsafe_function::<String>()
        .weak::<true>()
        .callee_handled::<false>()
        .build()
}

/// Calls the JS handler with the arguments and waits for its result. Runs
/// on the agent's tool thread, which is never the JS thread.
pub fn call(function: &ToolFunction, arguments: &Value) -> Result<Value, String> {
    let (sender, receiver) = mpsc::sync_channel(1);
    let status = function.call_with_return_value(
        arguments.to_string(),
        ThreadsafeFunctionCallMode::Blocking,
        move |returned, _env| {
            // The receiver only goes away if the tool thread did.
            let _ = sender.send(returned);
            Ok(())
        },
    );
    if status != Status::Ok {
        return Err(format!(
            "the JavaScript handler could not be called ({status}): Node is shutting down"
        ));
    }
    // A dropped sender means Node tore the function down before calling it.
    let promise = receiver
        .recv()
        .map_err(|_| "Node shut down before the JavaScript handler ran".to_string())?
        .map_err(|error| format!("the JavaScript handler failed: {}", error.reason))?;
    let envelope = block_on(promise)
        .map_err(|error| format!("the JavaScript handler failed: {}", error.reason))?;
    unwrap_envelope(&envelope)
}

/// Reads the wrapper's `{"ok": ..., "value" | "error": ...}`.
fn unwrap_envelope(text: &str) -> Result<Value, String> {
    let mut envelope: Value = serde_json::from_str(text)
        .map_err(|e| format!("the tool wrapper returned invalid JSON: {e}"))?;
    if envelope["ok"] == Value::Bool(true) {
        Ok(envelope["value"].take())
    } else {
        Err(envelope["error"]
            .as_str()
            .unwrap_or("the tool failed without a message")
            .to_string())
    }
}

/// Wakes the parked tool thread when the Promise settles.
struct ThreadWaker(Thread);

impl Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// Runs a future to completion on this thread (the Promise is settled by
/// the JS thread; this one only parks until it is woken).
fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let waker = Waker::from(Arc::new(ThreadWaker(std::thread::current())));
    let mut context = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut context) {
            return output;
        }
        std::thread::park();
    }
}
