//! Logs for Node: the engine's records (`zoo_core::logs`) handed to the
//! package's JS function, a batch (a JSON array) at a time.
//!
//! The library's `zoo-logs` thread calls the function through a weak
//! threadsafe function (logs never keep Node alive) and waits until the JS
//! thread has run it before sending the next batch: the engine never waits
//! for JavaScript, and a JS thread that falls behind makes the bounded
//! queue drop records (counted) instead of piling them up here.

use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use napi::bindgen_prelude::{AsyncTask, Function};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{Env, Status, Task};
use napi_derive::napi;
use zoo_core::logs::{self, LogHandler, LogLevel, LogRecord};

use crate::errors::{integer, IntoNapi};

/// The JS function, callable from the `zoo-logs` thread; at most two
/// batches wait for the JS thread.
type LogFunction = ThreadsafeFunction<String, (), String, Status, false, true, 2>;

/// How long a batch waits for the JS thread before the next is sent (a JS
/// thread blocked that long is not reading logs; the queue bound holds).
const BATCH_WAIT: Duration = Duration::from_secs(10);

struct NodeLogHandler {
    function: LogFunction,
}

impl LogHandler for NodeLogHandler {
    fn log(&self, record: &LogRecord) {
        self.log_batch(std::slice::from_ref(record));
    }

    fn log_batch(&self, records: &[LogRecord]) {
        let Ok(json) = serde_json::to_string(records) else {
            return;
        };
        let (ran, wait) = mpsc::sync_channel(1);
        let status = self.function.call_with_return_value(
            json,
            ThreadsafeFunctionCallMode::Blocking,
            move |_, _| {
                let _ = ran.send(());
                Ok(())
            },
        );
        if status == Status::Ok {
            let _ = wait.recv_timeout(BATCH_WAIT);
        }
    }
}

/// Sends the engine's records at `level` (`off`, `error`, `warn`, `info`,
/// `debug`, `trace`) and above to `receive(recordsJson)`, replacing any
/// earlier function; null removes it.
#[napi(ts_args_type = "receive: ((recordsJson: string) => void) | null, level: string")]
pub fn set_log_function(
    receive: Option<Function<'_, String, ()>>,
    level: String,
) -> napi::Result<()> {
    let level = LogLevel::parse(&level).napi_err()?;
    let handler = match receive {
        None => None,
        Some(receive) => {
            let function: LogFunction = receive
                .build_threadsafe_function::<String>()
                .weak::<true>()
                .callee_handled::<false>()
                .max_queue_size::<2>()
                .build()?;
            Some(Arc::new(NodeLogHandler { function }) as Arc<dyn LogHandler>)
        }
    };
    logs::set_handler(level, handler).napi_err()
}

/// Changes the level records are collected at.
#[napi]
pub fn set_log_level(level: String) -> napi::Result<()> {
    logs::set_level(LogLevel::parse(&level).napi_err()?);
    Ok(())
}

/// Records dropped because the function could not keep up.
#[napi]
pub fn dropped_logs() -> f64 {
    logs::dropped() as f64
}

/// Waits (off the JS thread) until every record emitted so far has been
/// handed to the function and the function has run.
pub struct FlushLogs {
    timeout: Duration,
}

impl Task for FlushLogs {
    type Output = bool;
    type JsValue = bool;

    fn compute(&mut self) -> napi::Result<bool> {
        Ok(logs::flush(self.timeout))
    }

    fn resolve(&mut self, _env: Env, done: bool) -> napi::Result<bool> {
        Ok(done)
    }
}

/// Resolves, within `timeoutMs`, to whether every record emitted so far
/// has reached the function.
#[napi(ts_return_type = "Promise<boolean>")]
pub fn flush_logs(timeout_ms: f64) -> napi::Result<AsyncTask<FlushLogs>> {
    let timeout = integer("timeoutMs", timeout_ms, 0, 86_400_000)?;
    Ok(AsyncTask::new(FlushLogs {
        timeout: Duration::from_millis(timeout as u64),
    }))
}
