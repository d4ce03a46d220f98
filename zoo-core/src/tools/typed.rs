//! Typed tools: a Rust closure becomes a tool whose JSON schema is generated
//! from its parameter types, so the schema can never disagree with the code.
//!
//! ```
//! use zoo_core::tools::typed::typed_tool;
//! let add = typed_tool("add", "Add two integers", &[("a", "first"), ("b", "second")],
//!     |a: i64, b: i64| a + b).unwrap();
//! assert_eq!(add.definition().parameters["properties"]["a"]["type"], "integer");
//! ```

use serde_json::{json, Map, Value};

use super::registry::Tool;
use super::validate::kind_of;
use crate::error::{Error, Result};

/// A type that can be a tool parameter: it has a JSON schema and reads itself
/// from the arguments object.
pub trait ToolParam: Sized {
    /// The JSON schema of the value.
    fn schema() -> Value;
    /// Whether the parameter must be present (false for `Option<T>`).
    fn required() -> bool {
        true
    }
    /// Reads the value; `None` when the key is absent.
    fn from_arg(value: Option<&Value>) -> std::result::Result<Self, String>;
}

fn expect<'a>(value: Option<&'a Value>, what: &str) -> std::result::Result<&'a Value, String> {
    value.ok_or_else(|| format!("missing required {what} argument"))
}

macro_rules! int_param {
    ($($ty:ty),*) => {$(
        impl ToolParam for $ty {
            fn schema() -> Value { json!({"type": "integer"}) }
            fn from_arg(value: Option<&Value>) -> std::result::Result<Self, String> {
                let v = expect(value, "integer")?;
                v.as_i64()
                    .and_then(|n| <$ty>::try_from(n).ok())
                    .or_else(|| v.as_u64().and_then(|n| <$ty>::try_from(n).ok()))
                    .ok_or_else(|| format!("expected an integer fitting {}, got {v}", stringify!($ty)))
            }
        }
    )*};
}
int_param!(i64, i32, u32, u64, usize);

impl ToolParam for f64 {
    fn schema() -> Value {
        json!({"type": "number"})
    }
    fn from_arg(value: Option<&Value>) -> std::result::Result<Self, String> {
        let v = expect(value, "number")?;
        v.as_f64()
            .ok_or_else(|| format!("expected a number, got {}", kind_of(v)))
    }
}

impl ToolParam for f32 {
    fn schema() -> Value {
        json!({"type": "number"})
    }
    fn from_arg(value: Option<&Value>) -> std::result::Result<Self, String> {
        f64::from_arg(value).map(|v| v as f32)
    }
}

impl ToolParam for bool {
    fn schema() -> Value {
        json!({"type": "boolean"})
    }
    fn from_arg(value: Option<&Value>) -> std::result::Result<Self, String> {
        let v = expect(value, "boolean")?;
        v.as_bool()
            .ok_or_else(|| format!("expected a boolean, got {}", kind_of(v)))
    }
}

impl ToolParam for String {
    fn schema() -> Value {
        json!({"type": "string"})
    }
    fn from_arg(value: Option<&Value>) -> std::result::Result<Self, String> {
        let v = expect(value, "string")?;
        v.as_str()
            .map(str::to_string)
            .ok_or_else(|| format!("expected a string, got {}", kind_of(v)))
    }
}

impl ToolParam for Value {
    fn schema() -> Value {
        json!({})
    }
    fn from_arg(value: Option<&Value>) -> std::result::Result<Self, String> {
        expect(value, "JSON").cloned()
    }
}

impl<T: ToolParam> ToolParam for Option<T> {
    fn schema() -> Value {
        T::schema()
    }
    fn required() -> bool {
        false
    }
    fn from_arg(value: Option<&Value>) -> std::result::Result<Self, String> {
        match value {
            None | Some(Value::Null) => Ok(None),
            Some(v) => T::from_arg(Some(v)).map(Some),
        }
    }
}

impl<T: ToolParam> ToolParam for Vec<T> {
    fn schema() -> Value {
        json!({"type": "array", "items": T::schema()})
    }
    fn from_arg(value: Option<&Value>) -> std::result::Result<Self, String> {
        let v = expect(value, "array")?;
        let items = v
            .as_array()
            .ok_or_else(|| format!("expected an array, got {}", kind_of(v)))?;
        items
            .iter()
            .enumerate()
            .map(|(i, item)| T::from_arg(Some(item)).map_err(|e| format!("item {i}: {e}")))
            .collect()
    }
}

/// What a typed handler may return: a value that becomes JSON, or a
/// `Result` whose error becomes the tool error the model reads.
pub trait ToolOutput {
    /// The JSON result or the error message.
    fn into_result(self) -> std::result::Result<Value, String>;
}

macro_rules! json_output {
    ($($ty:ty),*) => {$(
        impl ToolOutput for $ty {
            fn into_result(self) -> std::result::Result<Value, String> { Ok(json!(self)) }
        }
    )*};
}
json_output!(
    i64,
    i32,
    u32,
    u64,
    usize,
    f64,
    f32,
    bool,
    String,
    &str,
    Value,
    ()
);

impl<T: serde::Serialize> ToolOutput for Vec<T> {
    fn into_result(self) -> std::result::Result<Value, String> {
        serde_json::to_value(self).map_err(|e| e.to_string())
    }
}

impl<T: serde::Serialize> ToolOutput for Option<T> {
    fn into_result(self) -> std::result::Result<Value, String> {
        serde_json::to_value(self).map_err(|e| e.to_string())
    }
}

impl<T: ToolOutput, E: std::fmt::Display> ToolOutput for std::result::Result<T, E> {
    fn into_result(self) -> std::result::Result<Value, String> {
        self.map_err(|e| e.to_string())
            .and_then(ToolOutput::into_result)
    }
}

/// A closure whose parameters are all [`ToolParam`]s. Implemented for
/// closures of zero to six parameters.
pub trait TypedHandler<Args>: Send + Sync + 'static {
    /// Schemas and required flags of the parameters, in order.
    fn parameters() -> Vec<(Value, bool)>;
    /// Reads the arguments by the given names and calls the closure.
    fn call(&self, names: &[String], args: &Value) -> std::result::Result<Value, String>;
}

macro_rules! typed_handler {
    ($($arg:ident),*) => {
        impl<F, R, $($arg),*> TypedHandler<($($arg,)*)> for F
        where
            F: Fn($($arg),*) -> R + Send + Sync + 'static,
            R: ToolOutput,
            $($arg: ToolParam,)*
        {
            fn parameters() -> Vec<(Value, bool)> {
                vec![$(($arg::schema(), $arg::required())),*]
            }
            #[allow(non_snake_case, unused_variables, unused_mut, unused_assignments)]
            fn call(&self, names: &[String], args: &Value) -> std::result::Result<Value, String> {
                let mut index = 0;
                $(
                    let name = &names[index];
                    let $arg = $arg::from_arg(args.get(name.as_str()))
                        .map_err(|e| format!("argument `{name}`: {e}"))?;
                    index += 1;
                )*
                (self)($($arg),*).into_result()
            }
        }
    };
}
typed_handler!();
typed_handler!(A);
typed_handler!(A, B);
typed_handler!(A, B, C);
typed_handler!(A, B, C, D);
typed_handler!(A, B, C, D, E);
typed_handler!(A, B, C, D, E, G);

/// Builds a [`Tool`] from a typed closure. `params` gives each parameter's
/// name and description, in the closure's order; the schema's types come
/// from the closure's signature.
pub fn typed_tool<Args, F: TypedHandler<Args>>(
    name: &str,
    description: &str,
    params: &[(&str, &str)],
    handler: F,
) -> Result<Tool> {
    let specs = F::parameters();
    if specs.len() != params.len() {
        return Err(Error::InvalidArgument(format!(
            "tool `{name}`: the handler takes {} parameters but {} names were given",
            specs.len(),
            params.len()
        )));
    }
    let mut properties = Map::new();
    let mut required = Vec::new();
    for ((param, description), (mut schema, is_required)) in params.iter().zip(specs) {
        if properties.contains_key(*param) {
            return Err(Error::InvalidArgument(format!(
                "tool `{name}`: parameter `{param}` is named twice"
            )));
        }
        if !description.is_empty() {
            schema["description"] = json!(description);
        }
        properties.insert(param.to_string(), schema);
        if is_required {
            required.push(json!(param));
        }
    }
    let schema = json!({"type": "object", "properties": properties, "required": required});
    let names: Vec<String> = params.iter().map(|(n, _)| n.to_string()).collect();
    Tool::new(name, description, schema, move |args| {
        handler.call(&names, &args)
    })
}
