//! Tool schemas as Gemini takes them. A function declaration's
//! `parameters` is a subset of OpenAPI 3.0's schema, not JSON Schema: the
//! API refuses a request whose schema holds a keyword it does not know
//! (`additionalProperties`, `$schema`, `$ref`, `const`, `oneOf`, ...).
//! Our tools' JSON schemas are mapped onto that subset:
//!
//! - kept: `type`, `description`, `title`, `enum` (of strings), `items`,
//!   `properties`, `required`, `nullable`, `anyOf`, `minItems`,
//!   `maxItems`, `minLength`, `maxLength`, `pattern`, `minimum`,
//!   `maximum`, `minProperties`, `maxProperties`, `default`, `example`,
//!   `propertyOrdering`, and `format` where Gemini knows it (`date-time`
//!   and `enum` for strings, `float` and `double` for numbers, `int32` and
//!   `int64` for integers);
//! - mapped: a type list with `"null"` becomes the type and `nullable`
//!   (several types become `anyOf`); `const` becomes a one-value `enum`;
//!   `oneOf` becomes `anyOf`; an `anyOf` branch `{"type": "null"}` becomes
//!   `nullable`; `allOf` is merged into its schema; a local `$ref`
//!   (`#/$defs/...`, `#/definitions/...`) is replaced by what it names;
//! - dropped: every other keyword (`additionalProperties`, `$schema`,
//!   `$id`, `$defs`, `definitions`, `examples`, `exclusiveMinimum`,
//!   `exclusiveMaximum`, `multipleOf`, `patternProperties`, `not`,
//!   `if`/`then`/`else`, `uniqueItems`, ...). The engine still validates
//!   every call against the full schema, so a model that breaks a dropped
//!   rule is told and corrects itself.

use serde_json::{json, Map, Value as Json};

/// Keywords Gemini takes as they are.
const KEPT: &[&str] = &[
    "type",
    "description",
    "title",
    "nullable",
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
    "pattern",
    "minimum",
    "maximum",
    "minProperties",
    "maxProperties",
    "default",
    "example",
    "propertyOrdering",
    "required",
];
/// How deep `$ref`s and nesting are followed (a recursive schema stops here).
const MAX_DEPTH: usize = 16;
/// Schemas converted at most for one tool: `$ref`s may repeat a part many
/// times over, and a tool's schema is outside input.
const MAX_NODES: usize = 10_000;

/// `schema` in Gemini's subset.
pub(crate) fn to_gemini(schema: &Json) -> Json {
    let mut converter = Converter {
        root: schema,
        left: MAX_NODES,
    };
    converter.convert(schema, 0)
}

struct Converter<'a> {
    root: &'a Json,
    /// Nodes that may still be converted.
    left: usize,
}

impl Converter<'_> {
    fn convert(&mut self, node: &Json, depth: usize) -> Json {
        let Json::Object(object) = node else {
            return json!({});
        };
        if depth > MAX_DEPTH || self.left == 0 {
            return json!({});
        }
        self.left -= 1;
        let root = self.root;
        if let Some(target) = object.get("$ref").and_then(Json::as_str) {
            let resolved = target
                .strip_prefix('#')
                .and_then(|pointer| root.pointer(pointer));
            let mut out = match resolved {
                Some(resolved) => as_map(self.convert(resolved, depth + 1)),
                None => Map::new(),
            };
            if let Some(description) = object.get("description") {
                out.insert("description".into(), description.clone());
            }
            return Json::Object(out);
        }
        let mut out = Map::new();
        for (key, value) in object {
            match key.as_str() {
                "type" => put_type(&mut out, value),
                "format" => {}
                "enum" => {
                    if let Some(values) = value.as_array().filter(|v| v.iter().all(Json::is_string))
                    {
                        out.insert("enum".into(), Json::Array(values.clone()));
                    }
                }
                "const" if value.is_string() => {
                    out.insert("enum".into(), json!([value]));
                    out.entry("type").or_insert(json!("string"));
                }
                "properties" => {
                    if let Json::Object(properties) = value {
                        let converted: Map<String, Json> = properties
                            .iter()
                            .map(|(name, schema)| (name.clone(), self.convert(schema, depth + 1)))
                            .collect();
                        out.insert("properties".into(), Json::Object(converted));
                    }
                }
                "items" => {
                    let items = match value {
                        Json::Array(list) => list.first().cloned().unwrap_or(json!({})),
                        other => other.clone(),
                    };
                    out.insert("items".into(), self.convert(&items, depth + 1));
                }
                "anyOf" | "oneOf" => self.put_any_of(&mut out, value, depth),
                "allOf" => {
                    for part in value.as_array().into_iter().flatten() {
                        merge(&mut out, as_map(self.convert(part, depth + 1)));
                    }
                }
                key if KEPT.contains(&key) => {
                    out.insert(key.into(), value.clone());
                }
                _ => {}
            }
        }
        if let Some(format) = object.get("format").and_then(Json::as_str) {
            let known = match out.get("type").and_then(Json::as_str) {
                Some("string") => ["date-time", "enum"].contains(&format),
                Some("number") => ["float", "double"].contains(&format),
                Some("integer") => ["int32", "int64"].contains(&format),
                _ => false,
            };
            if known {
                out.insert("format".into(), json!(format));
            }
        }
        Json::Object(out)
    }

    /// `anyOf`/`oneOf`: the branches converted; a `null` branch is
    /// `nullable`, and a single branch left is merged in.
    fn put_any_of(&mut self, out: &mut Map<String, Json>, value: &Json, depth: usize) {
        let Some(branches) = value.as_array() else {
            return;
        };
        let mut kept = Vec::new();
        for branch in branches {
            if branch.get("type").and_then(Json::as_str) == Some("null") {
                out.insert("nullable".into(), json!(true));
            } else {
                kept.push(self.convert(branch, depth + 1));
            }
        }
        match kept.len() {
            0 => {}
            1 => merge(out, as_map(kept.remove(0))),
            _ => {
                out.insert("anyOf".into(), Json::Array(kept));
            }
        }
    }
}

/// `type`: one name as it is; a list with `"null"` is nullable; a list of
/// several types is an `anyOf`.
fn put_type(out: &mut Map<String, Json>, value: &Json) {
    let Json::Array(types) = value else {
        out.insert("type".into(), value.clone());
        return;
    };
    let named: Vec<&Json> = types
        .iter()
        .filter(|t| t.as_str() != Some("null"))
        .collect();
    if named.len() < types.len() {
        out.insert("nullable".into(), json!(true));
    }
    match named.as_slice() {
        [one] => {
            out.insert("type".into(), (*one).clone());
        }
        [] => {}
        several => {
            let branches: Vec<Json> = several.iter().map(|t| json!({"type": t})).collect();
            out.insert("anyOf".into(), Json::Array(branches));
        }
    }
}

/// Adds `from` to `into`: properties and `required` joined, the rest set.
fn merge(into: &mut Map<String, Json>, from: Map<String, Json>) {
    for (key, value) in from {
        match (key.as_str(), into.get_mut(&key), value) {
            ("properties", Some(Json::Object(held)), Json::Object(more)) => held.extend(more),
            ("required", Some(Json::Array(held)), Json::Array(more)) => {
                for name in more {
                    if !held.contains(&name) {
                        held.push(name);
                    }
                }
            }
            (_, _, value) => {
                into.insert(key, value);
            }
        }
    }
}

fn as_map(value: Json) -> Map<String, Json> {
    match value {
        Json::Object(map) => map,
        _ => Map::new(),
    }
}

/// Whether a converted schema declares any parameter (a declaration
/// without any leaves `parameters` out).
pub(crate) fn has_parameters(schema: &Json) -> bool {
    schema
        .get("properties")
        .and_then(Json::as_object)
        .is_some_and(|p| !p.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_schema_keywords_gemini_refuses_are_mapped_or_dropped() {
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "city": {"type": "string", "description": "City", "minLength": 1, "format": "uri"},
                "unit": {"const": "celsius"},
                "when": {"type": ["string", "null"], "format": "date-time"},
                "days": {"type": "integer", "exclusiveMinimum": 0, "format": "int32"},
                "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": true},
                "mode": {"oneOf": [{"type": "string", "enum": ["a", "b"]}, {"type": "integer"}]},
                "level": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
                "place": {"$ref": "#/$defs/place", "description": "Where"},
                "both": {"allOf": [
                    {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]},
                    {"properties": {"y": {"type": "number"}}, "required": ["y"]}
                ]},
                "size": {"enum": [1, 2, 3], "type": "integer"}
            },
            "required": ["city"],
            "$defs": {"place": {"type": "object", "properties": {"lat": {"type": "number"}}, "additionalProperties": false}}
        });
        assert_eq!(
            to_gemini(&schema),
            json!({
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "City", "minLength": 1},
                    "unit": {"enum": ["celsius"], "type": "string"},
                    "when": {"nullable": true, "type": "string", "format": "date-time"},
                    "days": {"type": "integer", "format": "int32"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "mode": {"anyOf": [{"type": "string", "enum": ["a", "b"]}, {"type": "integer"}]},
                    "level": {"nullable": true, "type": "integer"},
                    "place": {"type": "object", "properties": {"lat": {"type": "number"}}, "description": "Where"},
                    "both": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
                             "required": ["x", "y"]},
                    "size": {"type": "integer"}
                },
                "required": ["city"]
            })
        );
        assert!(has_parameters(&to_gemini(&schema)));
        assert!(!has_parameters(&to_gemini(
            &json!({"type": "object", "properties": {}})
        )));
    }

    #[test]
    fn a_recursive_schema_ends() {
        let schema =
            json!({"type": "object", "properties": {"a": {"$ref": "#"}, "b": {"$ref": "#"}}});
        let converted = to_gemini(&schema);
        assert_eq!(converted["type"], "object");
        assert!(converted.to_string().len() < 1_000_000);
    }
}
