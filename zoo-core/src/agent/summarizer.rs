//! The `summarizer` config made real: a child agent, started on its first
//! summary, that writes the summaries level 2 of the cascade and
//! tool-result hygiene ask for. It runs on its provider, or without one on
//! the agent's own model (its loaded model in a context of its own, so the
//! agent's cache is not disturbed; or its provider, on a connection of its
//! own).

use std::sync::Arc;

use parking_lot::Mutex;

use super::Agent;
use crate::cancel::CancelToken;
use crate::config::Config;
use crate::context::{summary_request, Summarize, SummarizerConfig, DEFAULT_INSTRUCTIONS};
use crate::engine::options::ChatOptions;
use crate::error::{Error, Result};
use crate::message::Message;
use crate::provider::Provider;

/// How the child is started, once, on its first summary.
type Build = Box<dyn Fn() -> Result<Agent> + Send + Sync>;

/// What an agent runs on, which a summarizer without a provider shares.
pub(super) enum OwnModel {
    /// A backend given in code or written by the host: nothing to start a
    /// second one from.
    Nothing,
    /// The config's provider (a remote model or the mock).
    Provider,
    /// A loaded GGUF model, shared with a context of the summarizer's own.
    #[cfg(feature = "llama")]
    Loaded(crate::backend::llama::Model),
}

impl OwnModel {
    /// The config's provider when it names one the summarizer can connect
    /// to again (a host backend cannot be), else nothing.
    pub(super) fn of(config: &Config) -> Self {
        match &config.provider {
            Some(Provider::Host(_)) | None => OwnModel::Nothing,
            Some(_) => OwnModel::Provider,
        }
    }
}

/// A summarizer backed by a child agent.
struct ModelSummarizer {
    build: Build,
    /// The longest summary the child writes, in tokens.
    max_tokens: u32,
    child: Mutex<Option<Agent>>,
}

impl std::fmt::Debug for ModelSummarizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelSummarizer")
            .field("max_tokens", &self.max_tokens)
            .field("started", &self.child.lock().is_some())
            .finish()
    }
}

impl Summarize for ModelSummarizer {
    fn summarize(
        &self,
        messages: &[Message],
        max_words: u32,
        cancel: &CancelToken,
    ) -> Result<String> {
        let mut slot = self.child.lock();
        if slot.is_none() {
            *slot = Some((self.build)()?);
        }
        let child = slot.as_ref().expect("started above");
        // Each summary starts from nothing: the child remembers no other.
        child.clear_history()?;
        // About three words in four tokens: never ask for more words than
        // the reply may hold.
        let words = max_words.min(self.max_tokens * 3 / 4).max(1);
        // The chat's stop reaches the child's reply through a child token.
        let options = ChatOptions::new().cancel_token(cancel.child());
        let response = child
            .chat(summary_request(messages, words), options)
            .wait()?;
        if cancel.is_cancelled() {
            return Err(Error::Cancelled("the chat was stopped".into()));
        }
        Ok(response.text)
    }
}

/// The summarizer the config names, if any, for an agent on `own`.
///
/// # Errors
/// [`Error::InvalidConfig`] naming `summarizer` when it has no provider and
/// the agent neither a loaded model nor a provider to share.
pub(super) fn summarizer_for(config: &Config, own: OwnModel) -> Result<Option<Arc<dyn Summarize>>> {
    let Some(summarizer) = &config.summarizer else {
        return Ok(None);
    };
    let build = builder(summarizer, child_config(summarizer), config, own)?;
    Ok(Some(Arc::new(ModelSummarizer {
        build,
        max_tokens: summarizer.max_tokens,
        child: Mutex::new(None),
    })))
}

/// The child's config: its instructions and length, greedy, one reply.
fn child_config(summarizer: &SummarizerConfig) -> Config {
    let prompt = summarizer
        .system_prompt
        .clone()
        .unwrap_or_else(|| DEFAULT_INSTRUCTIONS.to_owned());
    Config::default()
        .system_prompt(prompt)
        .max_tokens(summarizer.max_tokens)
        .temperature(0.0)
        .max_turns(1)
}

/// How the child is started: on the summarizer's provider, the agent's
/// provider (with the agent's window), or the agent's loaded model (with
/// the agent's window and threads).
fn builder(
    summarizer: &SummarizerConfig,
    child: Config,
    own: &Config,
    model: OwnModel,
) -> Result<Build> {
    if let Some(provider) = summarizer.provider.clone() {
        let config = child.provider(provider);
        return Ok(Box::new(move || Agent::create(config.clone())));
    }
    match (model, own.provider.clone()) {
        (OwnModel::Provider, Some(provider)) => {
            let config = child.provider(provider).context_size(own.context_size);
            Ok(Box::new(move || Agent::create(config.clone())))
        }
        #[cfg(feature = "llama")]
        (OwnModel::Loaded(model), _) => {
            let config = child.context_size(own.context_size).threads(own.threads);
            Ok(Box::new(move || {
                Agent::with_model(model.clone(), config.clone())
            }))
        }
        _ => Err(Error::config(
            "summarizer",
            "without a `provider` the summarizer runs on the agent's own model or provider, \
             and an agent on a backend given in code or by the host has neither to share \
             (give the summarizer a provider)",
        )),
    }
}
