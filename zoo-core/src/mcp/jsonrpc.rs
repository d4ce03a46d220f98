//! JSON-RPC 2.0 messages: building requests, notifications and responses,
//! and sorting what a server sends into the kinds the client handles.

use serde_json::{json, Map, Value};

use super::router::clip;

/// How much of a server's error message (and of its `data`) is kept.
pub(crate) const ERROR_CHARS: usize = 2000;

/// JSON-RPC's "method not found": the answer to server requests this client
/// does not serve (sampling, roots, elicitation).
pub(crate) const METHOD_NOT_FOUND: i64 = -32601;

/// An error object from a response.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RpcError {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

impl RpcError {
    /// The message, with `data` appended when the server gave any (servers
    /// often put the useful detail there).
    /// Both are cut to [`ERROR_CHARS`]: the text reaches the model as a
    /// tool error, and a server may put megabytes there.
    pub(crate) fn describe(&self) -> String {
        let message = clip(&self.message, ERROR_CHARS);
        match &self.data {
            None | Some(Value::Null) => message,
            Some(Value::String(s)) => format!("{message}: {}", clip(s, ERROR_CHARS)),
            Some(other) => format!("{message}: {}", clip(&other.to_string(), ERROR_CHARS)),
        }
    }
}

/// One message from the server.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Incoming {
    /// The answer to one of our requests.
    Response {
        id: Value,
        outcome: Result<Value, RpcError>,
    },
    /// A request from the server, which must be answered.
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    /// A notification from the server.
    Notification { method: String, params: Value },
    /// Valid JSON that is no JSON-RPC message; says why. Carries the id if
    /// it had one, so the request it answers can fail with the reason.
    Invalid { id: Option<Value>, reason: String },
}

/// A request.
pub(crate) fn request(id: u64, method: &str, params: Option<Value>) -> Value {
    let mut m = Map::new();
    m.insert("jsonrpc".into(), json!("2.0"));
    m.insert("id".into(), json!(id));
    m.insert("method".into(), json!(method));
    if let Some(params) = params {
        m.insert("params".into(), params);
    }
    Value::Object(m)
}

/// A notification (no id, no answer).
pub(crate) fn notification(method: &str, params: Option<Value>) -> Value {
    let mut m = Map::new();
    m.insert("jsonrpc".into(), json!("2.0"));
    m.insert("method".into(), json!(method));
    if let Some(params) = params {
        m.insert("params".into(), params);
    }
    Value::Object(m)
}

/// A success response to a server request.
pub(crate) fn result_response(id: Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// An error response to a server request.
pub(crate) fn error_response(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// Sorts one message (not a batch) by its members.
pub(crate) fn classify(message: Value) -> Incoming {
    let Value::Object(mut m) = message else {
        return Incoming::Invalid {
            id: None,
            reason: format!(
                "expected a JSON-RPC object, got {}",
                crate::tools::validate::kind_of(&message)
            ),
        };
    };
    let id = m.remove("id").filter(|id| !id.is_null());
    let method = m.remove("method");
    match (id, method) {
        (id, Some(Value::String(method))) => {
            let params = m.remove("params").unwrap_or(Value::Null);
            match id {
                Some(id) => Incoming::Request { id, method, params },
                None => Incoming::Notification { method, params },
            }
        }
        (id, Some(other)) => Incoming::Invalid {
            id,
            reason: format!(
                "`method` must be a string, got {}",
                clip(&other.to_string(), 200)
            ),
        },
        (id, None) => match (m.remove("result"), m.remove("error")) {
            (Some(result), None) => match id {
                Some(id) => Incoming::Response {
                    id,
                    outcome: Ok(result),
                },
                None => Incoming::Invalid {
                    id: None,
                    reason: "a result without an id".into(),
                },
            },
            (None, Some(error)) => {
                let outcome = Err(parse_error(&error));
                match id {
                    Some(id) => Incoming::Response { id, outcome },
                    // An error without an id answers a request the server
                    // could not even read; it cannot be routed.
                    None => Incoming::Invalid {
                        id: None,
                        reason: format!("an error without an id: {}", error_text(&error)),
                    },
                }
            }
            _ => Incoming::Invalid {
                id,
                reason: "neither a request, a notification nor a response \
                         (it needs `method`, or exactly one of `result` and `error`)"
                    .into(),
            },
        },
    }
}

fn parse_error(error: &Value) -> RpcError {
    RpcError {
        code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
        message: error
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("(the server gave no message)")
            .to_string(),
        data: error.get("data").cloned(),
    }
}

fn error_text(error: &Value) -> String {
    parse_error(error).describe()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_messages() {
        assert_eq!(
            request(7, "tools/list", Some(json!({"cursor": "c"}))),
            json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"cursor": "c"}})
        );
        assert_eq!(
            notification("notifications/initialized", None),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
        );
        assert_eq!(
            error_response(json!("a"), METHOD_NOT_FOUND, "no"),
            json!({"jsonrpc": "2.0", "id": "a", "error": {"code": -32601, "message": "no"}})
        );
    }

    #[test]
    fn classifies_every_kind() {
        assert_eq!(
            classify(json!({"jsonrpc": "2.0", "id": 1, "result": {"x": 1}})),
            Incoming::Response {
                id: json!(1),
                outcome: Ok(json!({"x": 1}))
            }
        );
        let Incoming::Response {
            outcome: Err(e), ..
        } = classify(
            json!({"jsonrpc": "2.0", "id": 2, "error": {"code": -32602, "message": "bad", "data": "x is missing"}}),
        )
        else {
            panic!("not an error response")
        };
        assert_eq!(
            (e.code, e.describe().as_str()),
            (-32602, "bad: x is missing")
        );
        // A huge message or data is cut.
        let huge = "z".repeat(1_000_000);
        let Incoming::Response {
            outcome: Err(e), ..
        } = classify(json!({"id": 3, "error": {"code": 1, "message": huge, "data": huge}}))
        else {
            panic!("not an error response")
        };
        assert!(
            e.describe().len() < 3 * ERROR_CHARS,
            "{}",
            e.describe().len()
        );
        assert_eq!(
            classify(json!({"jsonrpc": "2.0", "id": "p", "method": "ping"})),
            Incoming::Request {
                id: json!("p"),
                method: "ping".into(),
                params: Value::Null
            }
        );
        assert_eq!(
            classify(json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})),
            Incoming::Notification {
                method: "notifications/tools/list_changed".into(),
                params: Value::Null
            }
        );
        assert!(matches!(
            classify(json!({"jsonrpc": "2.0", "id": 3})),
            Incoming::Invalid { id: Some(_), .. }
        ));
        assert!(matches!(
            classify(json!([1])),
            Incoming::Invalid { id: None, .. }
        ));
        assert!(matches!(
            classify(json!({"id": null, "error": {"code": -32700, "message": "Parse error"}})),
            Incoming::Invalid { id: None, reason } if reason.contains("Parse error")
        ));
    }
}
