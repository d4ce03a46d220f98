//! Argument validation against a tool's JSON schema (the `jsonschema` crate).

use serde_json::Value;

use crate::error::{Error, Result};

/// A compiled JSON schema for one tool's arguments.
pub struct ArgumentValidator {
    tool: String,
    validator: jsonschema::Validator,
}

impl ArgumentValidator {
    /// Compiles `schema`; it must be a valid JSON schema whose top-level type
    /// (when given) is `object`, since arguments are always an object.
    pub fn new(tool: &str, schema: &Value) -> Result<Self> {
        let invalid = |message: String| Error::ToolValidationFailed {
            tool: tool.to_string(),
            message,
        };
        if !schema.is_object() {
            return Err(invalid(format!(
                "the parameters schema must be a JSON object, got {}",
                kind_of(schema)
            )));
        }
        if let Some(ty) = schema.get("type") {
            if ty != "object" {
                return Err(invalid(format!(
                    "the parameters schema must describe an object, got type {ty}"
                )));
            }
        }
        let validator = jsonschema::validator_for(schema).map_err(|e| {
            invalid(format!(
                "the parameters schema is not a valid JSON schema: {e}"
            ))
        })?;
        Ok(ArgumentValidator {
            tool: tool.to_string(),
            validator,
        })
    }

    /// Checks `arguments`. The error lists every violation with its path,
    /// worded for the model to correct its call. Besides the schema, a
    /// string argument may not be the tool's own name: small models fill
    /// a value they cannot find with the name they just wrote
    /// (`add_to_shopping_list(item="add_to_shopping_list")`), which no
    /// schema forbids and no user meant.
    pub fn validate(&self, arguments: &Value) -> Result<()> {
        let mut problems: Vec<String> = self
            .validator
            .iter_errors(arguments)
            .map(|e| {
                let path = e.instance_path().to_string();
                if path.is_empty() {
                    e.to_string()
                } else {
                    format!("at `{path}`: {e}")
                }
            })
            .collect();
        if let Value::Object(map) = arguments {
            let name = comparable(&self.tool);
            for (key, value) in map {
                if matches!(value, Value::String(s) if comparable(s) == name) {
                    problems.push(format!(
                        "at `/{key}`: the value repeats the tool's name `{}`; give the value \
                         the user asked for",
                        self.tool
                    ));
                }
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(Error::ToolValidationFailed {
                tool: self.tool.clone(),
                message: problems.join("; "),
            })
        }
    }
}

/// A name or value reduced to what tells names apart: lower case, without
/// separators (`get_weather`, `Get Weather` and `getweather` are alike).
fn comparable(text: &str) -> String {
    text.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// A word for a JSON value's kind, for messages.
pub fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_value_may_not_repeat_the_tool_name() {
        let list = ArgumentValidator::new(
            "add_to_shopping_list",
            &json!({"type": "object", "properties": {"item": {"type": "string"}}}),
        )
        .unwrap();
        assert!(list.validate(&json!({"item": "eggs"})).is_ok());
        for repeat in [
            "add_to_shopping_list",
            "Add to shopping list",
            " add-to-shopping-list ",
        ] {
            let e = list.validate(&json!({"item": repeat})).unwrap_err();
            assert!(
                e.to_string().contains(
                    "at `/item`: the value repeats the tool's name `add_to_shopping_list`"
                ),
                "{e}"
            );
        }
    }

    fn weather() -> ArgumentValidator {
        ArgumentValidator::new(
            "get_weather",
            &json!({
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                    "where": {"type": "object", "properties": {"lat": {"type": "number"}}, "required": ["lat"]}
                },
                "required": ["city"]
            }),
        )
        .unwrap()
    }

    #[test]
    fn reports_types_required_enums_and_nested_paths() {
        let v = weather();
        v.validate(&json!({"city": "Paris"})).unwrap();
        let e = v.validate(&json!({})).unwrap_err().to_string();
        assert!(e.contains("\"city\" is a required property"), "{e}");
        let e = v.validate(&json!({"city": 3})).unwrap_err().to_string();
        assert!(
            e.contains("at `/city`") && e.contains("not of type \"string\""),
            "{e}"
        );
        let e = v
            .validate(&json!({"city": "x", "unit": "kelvin"}))
            .unwrap_err()
            .to_string();
        assert!(e.contains("at `/unit`") && e.contains("kelvin"), "{e}");
        let e = v
            .validate(&json!({"city": "x", "where": {}}))
            .unwrap_err()
            .to_string();
        assert!(e.contains("\"lat\" is a required property"), "{e}");
    }

    #[test]
    fn rejects_schemas_that_are_not_object_schemas() {
        assert!(ArgumentValidator::new("t", &json!("x")).is_err());
        assert!(ArgumentValidator::new("t", &json!({"type": "string"})).is_err());
        let e = ArgumentValidator::new(
            "t",
            &json!({"type": "object", "properties": {"a": {"type": 5}}}),
        );
        assert!(e.is_err());
    }
}
