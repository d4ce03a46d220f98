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
//!
//! A tool's wrapper is also given the call's context, a `NativeToolContext`
//! (the package makes it the handler's second argument, with an
//! `AbortSignal` that `onCancel` aborts).

use std::future::Future;
use std::pin::pin;
use std::sync::mpsc;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::Thread;

use napi::bindgen_prelude::{FnArgs, Function, Promise};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::Status;
use napi_derive::napi;
use serde_json::{json, Value};
use zoo_core::tools::builtin::ConfirmFn;
use zoo_core::{Error, ToolContext};

use crate::errors::to_napi;

/// A tool handler callable from any thread. Weak: a registered tool does
/// not keep the Node process alive.
pub type ToolFunction = ThreadsafeFunction<String, Promise<String>, String, Status, false, true>;

/// A tool's wrapper, called with the arguments' JSON and the call's context.
type ToolArgs = FnArgs<(String, NativeToolContext)>;

/// A tool wrapper that takes the call's context, callable from any thread.
/// Weak, like [`ToolFunction`].
pub type ContextToolFunction =
    ThreadsafeFunction<ToolArgs, Promise<String>, ToolArgs, Status, false, true>;

/// What the JS thread hands back: the Promise the wrapper returned.
pub type Returned = napi::Result<Promise<String>>;

/// Makes the threadsafe function for a wrapped handler.
pub fn tool_function(handler: Function<'_, String, Promise<String>>) -> napi::Result<ToolFunction> {
    handler
        .build_threadsafe_function::<String>()
        .weak::<true>()
        .callee_handled::<false>()
        .build()
}

/// Makes the threadsafe function for a wrapped tool handler.
pub fn context_tool_function(
    handler: Function<'_, ToolArgs, Promise<String>>,
) -> napi::Result<ContextToolFunction> {
    handler
        .build_threadsafe_function::<ToolArgs>()
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
    settle(status, &receiver)
}

/// Calls a tool's JS wrapper with the arguments and the call's context and
/// waits for its result, on the agent's tool thread.
pub fn call_tool(
    function: &ContextToolFunction,
    arguments: &Value,
    context: &ToolContext,
) -> Result<Value, String> {
    let context = NativeToolContext {
        context: context.clone(),
    };
    let (sender, receiver) = mpsc::sync_channel(1);
    let status = function.call_with_return_value(
        FnArgs::from((arguments.to_string(), context)),
        ThreadsafeFunctionCallMode::Blocking,
        move |returned, _env| {
            let _ = sender.send(returned);
            Ok(())
        },
    );
    settle(status, &receiver)
}

/// The host's confirmation as the built-in tools take it: the wrapper is
/// called with `{"tool", "arguments"}` on the JS thread and its envelope
/// holds a boolean; a callback that threw refuses, with its message.
pub fn confirm_fn(function: ToolFunction) -> ConfirmFn {
    Arc::new(move |tool: &str, arguments: &Value| {
        let answer = call(&function, &json!({"tool": tool, "arguments": arguments}))?;
        answer
            .as_bool()
            .ok_or_else(|| format!("the confirm callback's answer must be a boolean, got {answer}"))
    })
}

/// Waits for the Promise a wrapper returned, then reads its envelope.
pub fn settle(status: Status, receiver: &mpsc::Receiver<Returned>) -> Result<Value, String> {
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

/// A weak function `onCancel` calls when the call's token is set.
type CancelFunction = ThreadsafeFunction<(), (), (), Status, false, true>;

/// The context of one tool call, the second argument of a tool's wrapper
/// (the package's `ToolContext` wraps it). Once the call has finished,
/// reports are dropped and return false.
#[napi]
pub struct NativeToolContext {
    context: ToolContext,
}

#[napi]
impl NativeToolContext {
    /// The call's id (`call_1`, ...).
    #[napi(getter)]
    pub fn call_id(&self) -> String {
        self.context.call_id().to_owned()
    }

    /// Whether the call is cancelled (the chat's stop, the tool's timeout).
    #[napi(getter)]
    pub fn cancelled(&self) -> bool {
        self.context.is_cancelled()
    }

    /// Reports a partial result (JSON text) as a `tool_call_update` event;
    /// whether it was taken.
    #[napi]
    pub fn update(&self, json: String) -> napi::Result<bool> {
        let update: Value = serde_json::from_str(&json)
            .map_err(|e| to_napi(Error::InvalidJson(format!("tool update: {e}"))))?;
        Ok(self.context.update(update))
    }

    /// Reports progress in words as a `tool_call_progress` event; whether
    /// it was taken.
    #[napi]
    pub fn progress(&self, text: String) -> bool {
        self.context.progress(text)
    }

    /// Calls `callback` on the JS thread once the call's token is set (at
    /// once if it already is). Dropped unrun when the call finishes first.
    #[napi(ts_args_type = "callback: () => void")]
    pub fn on_cancel(&self, callback: Function<'_, (), ()>) -> napi::Result<()> {
        let function: CancelFunction = callback
            .build_threadsafe_function::<()>()
            .weak::<true>()
            .callee_handled::<false>()
            .build()?;
        self.context.cancel_token().on_cancel(move || {
            // Fails only while Node shuts down, when no signal matters.
            function.call((), ThreadsafeFunctionCallMode::NonBlocking);
        });
        Ok(())
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
