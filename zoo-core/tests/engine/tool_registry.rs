//! TR-001 … TR-012: the tool registry and typed tools.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};
use zoo_core::tools::typed::typed_tool;
use zoo_core::{Error, ErrorCode, Tool, ToolRegistry};

fn schema_of(tool: &Tool) -> &Value {
    &tool.definition().parameters
}

#[test]
fn tr_001_primitive_parameters_generate_a_schema() {
    let tool = typed_tool(
        "mix",
        "Mixes primitives",
        &[
            ("n", "a count"),
            ("x", "a ratio"),
            ("flag", "a switch"),
            ("s", "a label"),
        ],
        |n: i64, x: f64, flag: bool, s: String| format!("{n}{x}{flag}{s}"),
    )
    .unwrap();
    assert_eq!(
        *schema_of(&tool),
        json!({
            "type": "object",
            "properties": {
                "n": {"type": "integer", "description": "a count"},
                "x": {"type": "number", "description": "a ratio"},
                "flag": {"type": "boolean", "description": "a switch"},
                "s": {"type": "string", "description": "a label"}
            },
            "required": ["n", "x", "flag", "s"]
        })
    );
}

#[test]
fn tr_002_int_parameter_is_integer() {
    let tool = typed_tool("t", "", &[("a", "")], |a: i64| a).unwrap();
    assert_eq!(schema_of(&tool)["properties"]["a"]["type"], "integer");
}

#[test]
fn tr_003_float_parameter_is_number() {
    let tool = typed_tool("t", "", &[("a", "")], |a: f64| a).unwrap();
    assert_eq!(schema_of(&tool)["properties"]["a"]["type"], "number");
}

#[test]
fn tr_004_bool_parameter_is_boolean() {
    let tool = typed_tool("t", "", &[("a", "")], |a: bool| a).unwrap();
    assert_eq!(schema_of(&tool)["properties"]["a"]["type"], "boolean");
}

#[test]
fn tr_005_string_parameter_is_string() {
    let tool = typed_tool("t", "", &[("a", "")], |a: String| a).unwrap();
    assert_eq!(schema_of(&tool)["properties"]["a"]["type"], "string");
}

#[test]
fn tr_006_multiple_parameters_all_in_schema_with_optional_and_arrays() {
    let tool = typed_tool(
        "search",
        "Search",
        &[
            ("query", "what"),
            ("limit", "how many"),
            ("tags", "filters"),
        ],
        |query: String, limit: Option<i64>, tags: Vec<String>| {
            format!("{query}:{}:{}", limit.unwrap_or(10), tags.join(","))
        },
    )
    .unwrap();
    let schema = schema_of(&tool);
    assert_eq!(schema["properties"]["query"]["type"], "string");
    assert_eq!(schema["properties"]["limit"]["type"], "integer");
    assert_eq!(
        schema["properties"]["tags"],
        json!({"type": "array", "items": {"type": "string"}, "description": "filters"})
    );
    assert_eq!(
        schema["required"],
        json!(["query", "tags"]),
        "Option<T> is optional"
    );
    assert_eq!(
        tool.invoke(json!({"query": "rust", "tags": ["a", "b"]}))
            .unwrap(),
        json!("rust:10:a,b")
    );
    assert_eq!(
        tool.invoke(json!({"query": "rust", "limit": 3, "tags": []}))
            .unwrap(),
        json!("rust:3:")
    );
}

#[test]
fn tr_007_generated_schema_is_a_valid_json_schema() {
    let tool = typed_tool("t", "", &[("a", ""), ("b", "")], |a: i64, b: Vec<f64>| {
        a as f64 + b.iter().sum::<f64>()
    })
    .unwrap();
    // Compiling it as a validator proves it is a valid schema; it also
    // accepts a good instance and rejects a bad one.
    let validator = jsonschema::validator_for(schema_of(&tool)).unwrap();
    assert!(validator.is_valid(&json!({"a": 1, "b": [1.5]})));
    assert!(!validator.is_valid(&json!({"a": "1", "b": [1.5]})));
    // An explicit schema that is not a valid JSON schema is refused.
    let e = Tool::new(
        "bad",
        "",
        json!({"type": "object", "properties": {"a": {"type": 7}}}),
        |_| Ok(json!(1)),
    )
    .unwrap_err();
    assert_eq!(e.code(), ErrorCode::ToolValidationFailed);
}

#[test]
fn tr_008_schema_includes_descriptions() {
    let tool = typed_tool(
        "weather",
        "Current weather for a city",
        &[("city", "City name")],
        |c: String| c,
    )
    .unwrap();
    assert_eq!(tool.definition().description, "Current weather for a city");
    assert_eq!(
        schema_of(&tool)["properties"]["city"]["description"],
        "City name"
    );
}

#[test]
fn tr_009_valid_arguments_call_the_handler() {
    let registry = ToolRegistry::new();
    registry.register(
        typed_tool("add", "Add", &[("a", ""), ("b", "")], |a: i64, b: i64| {
            a + b
        })
        .unwrap(),
    );
    assert_eq!(
        registry.invoke("add", json!({"a": 2, "b": 40})).unwrap(),
        json!(42)
    );
}

#[test]
fn tr_010_wrong_argument_types_error_without_calling_the_handler() {
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = calls.clone();
    let registry = ToolRegistry::new();
    registry.register(
        Tool::new(
            "add",
            "Add",
            json!({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}),
            move |_| {
                seen.fetch_add(1, Ordering::SeqCst);
                Ok(json!(0))
            },
        )
        .unwrap(),
    );
    let e = registry.invoke("add", json!({"a": "two"})).unwrap_err();
    assert!(
        matches!(&e, Error::ToolValidationFailed { tool, message } if tool == "add" && message.contains("\"two\" is not of type \"integer\"")),
        "{e}"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

#[test]
fn tr_011_unregistered_tool_is_not_found() {
    let registry = ToolRegistry::new();
    let e = registry.invoke("nope", json!({})).unwrap_err();
    assert_eq!(e, Error::ToolNotFound("nope".into()));
}

#[test]
fn tr_012_reregistering_a_name_replaces_the_tool() {
    let registry = ToolRegistry::new();
    registry.register(typed_tool("v", "first", &[], || 1).unwrap());
    registry.register(typed_tool("w", "other", &[], || 0).unwrap());
    registry.register(typed_tool("v", "second", &[], || 2).unwrap());
    assert_eq!(registry.len(), 2);
    assert_eq!(registry.invoke("v", json!({})).unwrap(), json!(2));
    let names: Vec<String> = registry.definitions().into_iter().map(|d| d.name).collect();
    assert_eq!(names, ["v", "w"], "replaced in place, order kept");
    assert!(registry.unregister("v"));
    assert!(!registry.unregister("v"));
    assert!(registry.get("v").is_none());
}

#[test]
fn tool_names_and_arity_are_checked() {
    for bad in ["", "has space", "dot.name", &"x".repeat(65)] {
        let e = typed_tool(bad, "", &[], || 1).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidArgument, "{bad:?}");
    }
    let e = typed_tool("t", "", &[("a", "")], |a: i64, b: i64| a + b).unwrap_err();
    assert!(
        e.to_string().contains("takes 2 parameters but 1 names"),
        "{e}"
    );
    // A panicking handler is an error, not a crash.
    let boom = typed_tool("boom", "", &[], || -> i64 { panic!("kaboom") }).unwrap();
    let e = boom.invoke(json!({})).unwrap_err();
    assert!(e.to_string().contains("kaboom"), "{e}");
}
