//! GBNF grammars for tool calls, wrapped in the call format's literal
//! prefix and suffix. Calls written as a JSON object with the tool's name
//! are built from the tools' JSON schemas with llama.cpp's own converter
//! (`json_schema_to_grammar`); the other syntaxes (Python calls,
//! FunctionGemma's, harmony's) by `syntax`.

mod syntax;

use self::syntax::{gbnf_literal, Rules};
use crate::error::{Error, Result};
use crate::tools::{CallSyntax, ToolCallFormat, ToolDefinition};

/// A grammar for one to `max_calls` calls to `tools`, in `format`. The
/// converter's whitespace rule is bounded (at most two newlines and twenty
/// indents), so the grammar never admits endless whitespace.
pub(crate) fn tool_call_grammar(
    format: ToolCallFormat,
    tools: &[ToolDefinition],
    max_calls: u32,
) -> Result<String> {
    let body = match format.syntax() {
        CallSyntax::Json => json_call_rules(format, tools)?,
        syntax => {
            let mut rules = Rules::default();
            let alternatives: Vec<String> = tools
                .iter()
                .map(|tool| syntax::call_rule(&mut rules, syntax, tool))
                .collect();
            format!("call ::= {}\n{}", alternatives.join(" | "), rules.render())
        }
    };
    Ok(format!(
        "root ::= {}\n{}\n",
        calls_rule(format, max_calls),
        body
    ))
}

/// The `call` rule and its helpers for the JSON syntax, from llama.cpp's
/// converter.
fn json_call_rules(format: ToolCallFormat, tools: &[ToolDefinition]) -> Result<String> {
    let schema = format.call_schema(tools);
    let converted = llama_cpp_2::json_schema_to_grammar(&schema.to_string()).map_err(|e| {
        Error::ToolValidationFailed {
            tool: tools
                .iter()
                .map(|t| t.name.as_str())
                .collect::<Vec<_>>()
                .join(","),
            message: format!("cannot build a grammar from the tool schemas: {e}"),
        }
    })?;
    // The converter names its top rule `root`; ours wraps it.
    let mut renamed = false;
    let body: Vec<String> = converted
        .lines()
        .map(|line| match line.strip_prefix("root ::=") {
            Some(rest) => {
                renamed = true;
                format!("call ::={rest}")
            }
            None => line.to_string(),
        })
        .collect();
    if !renamed {
        return Err(Error::Internal(
            "json_schema_to_grammar produced no root rule".into(),
        ));
    }
    Ok(body.join("\n"))
}

/// The top rule: one call, or up to `max_calls` written as the parser
/// reads several (one list for the formats that have one, such as
/// Mistral's `[TOOL_CALLS][...]` and SmolLM2's `<tool_call>[...]</tool_call>`,
/// one call per line otherwise).
fn calls_rule(format: ToolCallFormat, max_calls: u32) -> String {
    let (prefix, suffix) = (gbnf_literal(format.prefix()), gbnf_literal(format.suffix()));
    let more = max_calls.max(1) - 1;
    match (more, format.list_separator()) {
        (0, _) => format!("{prefix} call {suffix}"),
        (_, Some(separator)) => format!(
            "{prefix} call ({} call){{0,{more}}} {suffix}",
            gbnf_literal(separator)
        ),
        _ => format!(
            "{prefix} call {suffix} ({} {prefix} call {suffix}){{0,{more}}}",
            gbnf_literal(format.call_separator())
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn wraps_the_converted_schema() {
        let tools = vec![ToolDefinition {
            name: "get_weather".into(),
            description: "Weather".into(),
            parameters: json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        }];
        let g = tool_call_grammar(ToolCallFormat::Hermes, &tools, 1).unwrap();
        assert!(
            g.starts_with("root ::= \"<tool_call>\\n\" call \"\\n</tool_call>\"\n"),
            "{g}"
        );
        assert!(g.contains("call ::="), "{g}");
        assert!(g.contains("get_weather"), "{g}");
        assert_eq!(g.matches("root ::=").count(), 1);
    }

    #[test]
    fn several_calls_are_written_as_the_parser_reads_them() {
        assert_eq!(
            calls_rule(ToolCallFormat::Hermes, 3),
            r#""<tool_call>\n" call "\n</tool_call>" ("\n" "<tool_call>\n" call "\n</tool_call>"){0,2}"#
        );
        assert_eq!(
            calls_rule(ToolCallFormat::Mistral, 8),
            r#""[TOOL_CALLS][" call (", " call){0,7} "]""#
        );
        assert_eq!(calls_rule(ToolCallFormat::Llama3, 0), r#""" call """#);
        assert_eq!(
            calls_rule(ToolCallFormat::SmolLm2, 2),
            r#""<tool_call>[" call (", " call){0,1} "]</tool_call>""#
        );
        let text = "<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"name\": \"b\", \"arguments\": {}}\n</tool_call>";
        let names: Vec<String> = crate::tools::parser::parse(text)
            .calls
            .into_iter()
            .map(|c| c.name)
            .collect();
        assert_eq!(names, ["a", "b"]);
        let text = "[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {}}, {\"name\": \"b\", \"arguments\": {}}]";
        let names: Vec<String> = crate::tools::parser::parse(text)
            .calls
            .into_iter()
            .map(|c| c.name)
            .collect();
        assert_eq!(names, ["a", "b"]);
        let text = "<tool_call>[{\"name\": \"a\", \"arguments\": {}}, {\"name\": \"b\", \"arguments\": {}}]</tool_call>";
        let names: Vec<String> = crate::tools::parser::parse(text)
            .calls
            .into_iter()
            .map(|c| c.name)
            .collect();
        assert_eq!(names, ["a", "b"]);
        let text = "{\"name\": \"a\", \"parameters\": {}}\n{\"name\": \"b\", \"parameters\": {}}";
        let names: Vec<String> = crate::tools::parser::parse(text)
            .calls
            .into_iter()
            .map(|c| c.name)
            .collect();
        assert_eq!(names, ["a", "b"]);
    }
}
