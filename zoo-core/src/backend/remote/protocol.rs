//! The APIs a remote backend speaks, behind one face: how a request is
//! authenticated and written, and how its answer (a stream of events, or
//! one JSON document from a server that does not stream) becomes a
//! [`Reply`]. Each API's own rules live in its module (`openai`,
//! `anthropic`, `gemini`).

use serde_json::Value as Json;

use super::anthropic::{self, Anthropic};
use super::gemini::{self, Gemini};
use super::openai;
use super::reply::{ChunkError, Reply};
use crate::backend::GenerateRequest;
use crate::provider::remote::MaxTokensField;

/// The sampling settings sent with every request (the agent's own).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Sampling {
    pub(crate) temperature: f32,
    pub(crate) top_p: f32,
    pub(crate) seed: Option<u32>,
}

impl Sampling {
    /// `temperature` as it reads, at most `max` when the API has a bound.
    pub(crate) fn temperature_json(&self, max: Option<f32>) -> Json {
        let value = max.map_or(self.temperature, |max| self.temperature.min(max));
        f32_json(value)
    }
}

/// An f32 as it reads (`0.7`, not `0.699999988079071`).
pub(crate) fn f32_json(value: f32) -> Json {
    let shortest: f64 = value.to_string().parse().unwrap_or(f64::from(value));
    serde_json::Number::from_f64(shortest).map_or(Json::Null, Json::Number)
}

/// One API, with what it remembers between requests.
#[derive(Debug)]
pub(crate) enum Protocol {
    /// OpenAI-compatible Chat Completions.
    OpenAi { max_tokens_field: MaxTokensField },
    /// Anthropic Messages.
    Anthropic(Anthropic),
    /// Gemini `streamGenerateContent`.
    Gemini(Gemini),
}

impl Protocol {
    /// The provider's `type`, as errors name it.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Protocol::OpenAi { .. } => "openai",
            Protocol::Anthropic(_) => "anthropic",
            Protocol::Gemini(_) => "gemini",
        }
    }

    /// The header that carries the API key.
    pub(crate) fn auth_header(&self, key: &str) -> (String, String) {
        match self {
            Protocol::OpenAi { .. } => ("Authorization".into(), format!("Bearer {key}")),
            Protocol::Anthropic(_) => ("x-api-key".into(), key.into()),
            Protocol::Gemini(_) => ("x-goog-api-key".into(), key.into()),
        }
    }

    /// Headers every request of this API carries, unless configured ones
    /// of the same name replace them.
    pub(crate) fn fixed_headers(&self) -> &'static [(&'static str, &'static str)] {
        match self {
            Protocol::Anthropic(_) => &[("anthropic-version", anthropic::API_VERSION)],
            _ => &[],
        }
    }

    /// The request's JSON body.
    pub(crate) fn body(
        &self,
        model: Option<&str>,
        request: &GenerateRequest<'_>,
        sampling: &Sampling,
    ) -> Json {
        let model_name = model.unwrap_or_default();
        match self {
            Protocol::OpenAi { max_tokens_field } => {
                openai::request_body(model, request, sampling, *max_tokens_field)
            }
            Protocol::Anthropic(anthropic) => anthropic.body(model_name, request, sampling),
            Protocol::Gemini(gemini) => gemini.body(request, sampling),
        }
    }

    /// A reader for one streamed answer.
    pub(crate) fn decoder(&self) -> Decoder {
        match self {
            Protocol::OpenAi { .. } => Decoder::OpenAi,
            Protocol::Anthropic(_) => Decoder::Anthropic(anthropic::Decoder::default()),
            Protocol::Gemini(_) => Decoder::Gemini,
        }
    }

    /// The reply in an answer that did not stream.
    pub(crate) fn read_whole(
        &self,
        body: &str,
        on_piece: &mut dyn FnMut(&str),
    ) -> Result<Reply, ChunkError> {
        match self {
            Protocol::OpenAi { .. } => openai::from_completion(body, on_piece),
            Protocol::Anthropic(_) => anthropic::from_message(body, on_piece),
            Protocol::Gemini(_) => gemini::from_answer(body, on_piece),
        }
    }

    /// Keeps what the API wants back with a finished reply's calls.
    pub(crate) fn remember(&mut self, reply: &Reply) {
        match self {
            Protocol::OpenAi { .. } => {}
            Protocol::Anthropic(anthropic) => anthropic.remember(reply),
            Protocol::Gemini(gemini) => gemini.remember(reply),
        }
    }
}

/// The reader of one streamed answer.
#[derive(Debug)]
pub(crate) enum Decoder {
    OpenAi,
    Anthropic(anthropic::Decoder),
    Gemini,
}

impl Decoder {
    /// Takes one event's data into `reply`, streaming text to `on_piece`.
    pub(crate) fn push(
        &mut self,
        reply: &mut Reply,
        data: &str,
        on_piece: &mut dyn FnMut(&str),
    ) -> Result<(), ChunkError> {
        match self {
            Decoder::OpenAi => openai::push(reply, data, on_piece),
            Decoder::Anthropic(decoder) => decoder.push(reply, data, on_piece),
            Decoder::Gemini => gemini::push(reply, data, on_piece),
        }
    }
}
