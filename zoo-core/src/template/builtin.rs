//! Jinja sources of the built-in templates, for GGUF files that carry no
//! `tokenizer.chat_template` or when the configuration names a family.
//!
//! Each follows its model family's official format. They never see tool
//! messages or structured tool calls (those are rewritten into plain turns
//! first, see [`super::tool_prompt`]), but any role must still render: a role
//! a format cannot express is written as the closest one it has (a user turn)
//! rather than failing, so a conversation never becomes unrenderable.
//!
//! Every tag uses `-` whitespace control, so the layout of these sources does
//! not leak into prompts.

use super::TemplateFamily;

/// ChatML (Qwen, SmolLM, Hermes, …): `<|im_start|>role\ncontent<|im_end|>\n`.
pub const CHATML: &str = r#"
{%- for message in messages %}
    {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>\n' }}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
{%- endif %}
"#;

/// Llama 3.x: header tokens around the role, trimmed content, `<|eot_id|>`.
/// Tool results use Meta's `ipython` role.
pub const LLAMA3: &str = r#"
{{- bos_token }}
{%- for message in messages %}
    {%- set role = 'ipython' if message.role == 'tool' else message.role %}
    {{- '<|start_header_id|>' + role + '<|end_header_id|>\n\n' + (message.content | trim) + '<|eot_id|>' }}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}
{%- endif %}
"#;

/// Llama 2 chat: `<s>[INST] <<SYS>>\n…\n<</SYS>>\n\nuser [/INST] assistant </s>`.
/// The system prompt lives inside the first user turn; when the conversation
/// does not open with one, it gets an `[INST]` of its own. The format has no
/// generation prompt: the model answers after `[/INST]`.
pub const LLAMA2: &str = r#"
{%- if messages and messages[0].role == 'system' %}
    {%- set system = messages[0].content | trim %}
    {%- set loop_messages = messages[1:] %}
{%- else %}
    {%- set system = '' %}
    {%- set loop_messages = messages %}
{%- endif %}
{%- if system and (not loop_messages or loop_messages[0].role == 'assistant') %}
    {{- bos_token + '[INST] <<SYS>>\n' + system + '\n<</SYS>>\n\n [/INST]' }}
{%- endif %}
{%- for message in loop_messages %}
    {%- if message.role == 'assistant' %}
        {{- ' ' + (message.content | trim) + ' ' + eos_token }}
    {%- elif loop.first and system %}
        {{- bos_token + '[INST] <<SYS>>\n' + system + '\n<</SYS>>\n\n' + (message.content | trim) + ' [/INST]' }}
    {%- else %}
        {{- bos_token + '[INST] ' + (message.content | trim) + ' [/INST]' }}
    {%- endif %}
{%- endfor %}
"#;

/// Mistral instruct, v0.3 ("v3" tokenizer) spacing:
/// `<s>[INST] user[/INST] assistant</s>[INST] user[/INST]`. Mistral has no
/// system role; the system prompt is prepended to the first user message
/// (the official template puts it on the last one, which would change the
/// start of the prompt every turn and defeat KV-cache reuse).
pub const MISTRAL: &str = r#"
{%- if messages and messages[0].role == 'system' %}
    {%- set system = messages[0].content %}
    {%- set loop_messages = messages[1:] %}
{%- else %}
    {%- set system = '' %}
    {%- set loop_messages = messages %}
{%- endif %}
{{- bos_token }}
{%- if system and (not loop_messages or loop_messages[0].role == 'assistant') %}
    {{- '[INST] ' + system + '[/INST]' }}
{%- endif %}
{%- for message in loop_messages %}
    {%- if message.role == 'assistant' %}
        {{- ' ' + (message.content | trim) + eos_token }}
    {%- elif loop.first and system %}
        {{- '[INST] ' + system + '\n\n' + message.content + '[/INST]' }}
    {%- else %}
        {{- '[INST] ' + message.content + '[/INST]' }}
    {%- endif %}
{%- endfor %}
"#;

/// Phi-3: `<|role|>\ncontent<|end|>\n`. The official template ends a prompt
/// without generation prompt with `eos_token`; that is left out so a prompt
/// without generation prompt stays a prefix of the one with it.
pub const PHI3: &str = r#"
{%- for message in messages %}
    {{- '<|' + message.role + '|>\n' + message.content + '<|end|>\n' }}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|assistant|>\n' }}
{%- endif %}
"#;

/// Gemma: `<start_of_turn>user\n…<end_of_turn>\n`, the assistant is `model`.
/// Gemma has no system role; as in Gemma 3's official template the system
/// prompt is prepended to the first user turn, separated by a blank line.
pub const GEMMA: &str = r#"
{%- if messages and messages[0].role == 'system' %}
    {%- set system = messages[0].content %}
    {%- set loop_messages = messages[1:] %}
{%- else %}
    {%- set system = '' %}
    {%- set loop_messages = messages %}
{%- endif %}
{{- bos_token }}
{%- if system and (not loop_messages or loop_messages[0].role == 'assistant') %}
    {{- '<start_of_turn>user\n' + system + '<end_of_turn>\n' }}
{%- endif %}
{%- for message in loop_messages %}
    {%- set role = 'model' if message.role == 'assistant' else 'user' %}
    {%- set prefix = (system + '\n\n') if (loop.first and system and role == 'user') else '' %}
    {{- '<start_of_turn>' + role + '\n' + prefix + (message.content | trim) + '<end_of_turn>\n' }}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<start_of_turn>model\n' }}
{%- endif %}
"#;

/// Plain text for base models: non-empty contents separated by a blank line,
/// no role markers and no generation prompt (the model just continues).
pub const RAW: &str = r#"
{%- for message in messages if message.content %}
    {%- if not loop.first %}
        {{- '\n\n' }}
    {%- endif %}
    {{- message.content }}
{%- endfor %}
"#;

/// The source of a family's built-in template.
pub fn source(family: TemplateFamily) -> &'static str {
    match family {
        TemplateFamily::Chatml => CHATML,
        TemplateFamily::Llama3 => LLAMA3,
        TemplateFamily::Llama2 => LLAMA2,
        TemplateFamily::Mistral => MISTRAL,
        TemplateFamily::Phi3 => PHI3,
        TemplateFamily::Gemma => GEMMA,
        TemplateFamily::Raw => RAW,
    }
}
