//! Backends written in JavaScript: the package's wrapper of the user's
//! `generate` called on the JS thread through a weak threadsafe function,
//! while the agent's host thread waits for the Promise it returns; the
//! reply's items reach the engine through `NativeBackendSink`.
//!
//! As for tools, the package wraps `generate` (and `countTokens`) in an
//! `async` function that never rejects: it resolves to `{"ok":true,...}` or
//! `{"ok":false,"error":"TypeError: ..."}` (`wrapBackend` in
//! `node/lib/zoo-keeper.js`), so a throw or a rejection fails the reply
//! with its message, never an exception in Node.

use std::sync::mpsc;

use napi::bindgen_prelude::{FnArgs, Function, Promise};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::Status;
use napi_derive::napi;
use serde_json::Value;
use zoo_core::{HostModel, HostOutput, HostRequest, HostSink, Message};

use crate::errors::to_napi;
use crate::tools::{self, ToolFunction};

/// The wrapper's arguments: the request's JSON and the reply's sink.
type GenerateArgs = FnArgs<(String, NativeBackendSink)>;

/// The wrapped `generate`, callable from any thread. Weak: an agent does
/// not keep the Node process alive (a running chat does).
pub type GenerateFunction =
    ThreadsafeFunction<GenerateArgs, Promise<String>, GenerateArgs, Status, false, true>;

/// Makes the threadsafe function for the wrapped `generate`.
pub fn generate_function(
    generate: Function<'_, GenerateArgs, Promise<String>>,
) -> napi::Result<GenerateFunction> {
    generate
        .build_threadsafe_function::<GenerateArgs>()
        .weak::<true>()
        .callee_handled::<false>()
        .build()
}

/// A backend whose calls run JavaScript.
pub struct NodeBackend {
    pub generate: GenerateFunction,
    /// The wrapped `countTokens`, if the backend has one.
    pub count: Option<ToolFunction>,
}

impl HostModel for NodeBackend {
    fn generate(&mut self, request: &HostRequest, sink: &HostSink) -> Result<(), String> {
        let sink = NativeBackendSink { sink: sink.clone() };
        let (sender, receiver) = mpsc::sync_channel(1);
        let status = self.generate.call_with_return_value(
            FnArgs::from((request.to_json(), sink)),
            ThreadsafeFunctionCallMode::Blocking,
            move |returned, _env| {
                // The receiver only goes away if the host thread did.
                let _ = sender.send(returned);
                Ok(())
            },
        );
        tools::settle(status, &receiver).map(drop)
    }

    fn counts_tokens(&self) -> bool {
        self.count.is_some()
    }

    fn count_tokens(&mut self, message: &Message) -> Result<u32, String> {
        let count = self.count.as_ref().ok_or("this backend counts no tokens")?;
        let message = serde_json::to_value(message).map_err(|e| e.to_string())?;
        match tools::call(count, &message)? {
            Value::Number(n) if n.as_u64().is_some_and(|n| n <= u64::from(u32::MAX)) => {
                Ok(n.as_u64().unwrap_or_default() as u32)
            }
            other => Err(format!(
                "countTokens must return a whole number from 0 to 4294967295, got {other}"
            )),
        }
    }
}

/// A weak function `onCancel` calls when the reply is no longer wanted.
type CancelFunction = ThreadsafeFunction<(), (), (), Status, false, true>;

/// Where a JavaScript backend puts one reply (the package's wrapper emits
/// into it). Once the reply has ended, emits are dropped and return false.
#[napi]
pub struct NativeBackendSink {
    sink: HostSink,
}

#[napi]
impl NativeBackendSink {
    /// Emits a piece of the reply's text; whether it was taken.
    #[napi]
    pub fn text(&self, text: String) -> bool {
        self.sink.text(text)
    }

    /// Emits one item in its JSON form (`{"type": "tool_call", ...}`, keys
    /// in snake_case); whether it was taken. Throws code 3 for another shape.
    #[napi]
    pub fn emit_json(&self, json: String) -> napi::Result<bool> {
        let item = HostOutput::from_json(&json).map_err(to_napi)?;
        Ok(self.sink.emit(item))
    }

    /// Whether the reply is no longer wanted (a stop, the chat's time
    /// limit, a stop string, an error item).
    #[napi(getter)]
    pub fn cancelled(&self) -> bool {
        self.sink.is_cancelled()
    }

    /// Calls `callback` on the JS thread once the reply is no longer wanted
    /// (at once if it already is). Dropped unrun when the reply completes.
    #[napi(ts_args_type = "callback: () => void")]
    pub fn on_cancel(&self, callback: Function<'_, (), ()>) -> napi::Result<()> {
        let function: CancelFunction = callback
            .build_threadsafe_function::<()>()
            .weak::<true>()
            .callee_handled::<false>()
            .build()?;
        self.sink.cancel_token().on_cancel(move || {
            // Fails only while Node shuts down, when no signal matters.
            function.call((), ThreadsafeFunctionCallMode::NonBlocking);
        });
        Ok(())
    }
}
