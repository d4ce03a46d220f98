//! `Model`: a GGUF file loaded once and shared (reference-counted) by any
//! number of agents, each with its own context.

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use llama_cpp_2::llama_backend::LlamaBackend as LlamaRuntime;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::LlamaModel;

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use super::{cpu_backend, logs};
use crate::config::Config;
use crate::cpu::CpuVariant;
use crate::error::{Error, Result};
use crate::settings::{read_settings, Given, Rule, Settings, CPU_VARIANT, GPU_LAYERS};
use crate::template::{ModelMetadata, SpecialTokens};
use crate::tools::ToolCallFormat;

/// llama.cpp's global state: `LlamaBackend::init()` succeeds once per
/// process, so one is kept for the life of the process. Its CPU backend is
/// loaded first (`cpu_variant` if given: see [`cpu_backend`]).
pub(crate) fn runtime(cpu_variant: Option<CpuVariant>) -> Result<&'static LlamaRuntime> {
    cpu_backend::ensure(cpu_variant)?;
    static RUNTIME: OnceLock<std::result::Result<LlamaRuntime, String>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            logs::install();
            LlamaRuntime::init().map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| Error::Internal(format!("llama.cpp failed to initialise: {e}")))
}

/// How to load a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelParams {
    /// Layers to offload to the GPU; -1 offloads all.
    pub gpu_layers: i32,
    /// Map the file instead of reading it.
    pub use_mmap: bool,
    /// llama.cpp's CPU variant, if not the best this machine allows (see
    /// [`crate::cpu`]); only the first model of a process chooses.
    pub cpu_variant: Option<CpuVariant>,
}

impl Default for ModelParams {
    fn default() -> Self {
        ModelParams {
            gpu_layers: 0,
            use_mmap: true,
            cpu_variant: None,
        }
    }
}

/// What the model parameters' JSON keys accept.
const MODEL_PARAMS_KEYS: Settings = Settings {
    name: "model_params",
    example: r#"{"gpu_layers": 0, "use_mmap": true}"#,
    keys: &[
        ("gpu_layers", GPU_LAYERS),
        ("use_mmap", Rule::Bool),
        ("cpu_variant", CPU_VARIANT),
    ],
};

/// The JSON form of [`ModelParams`]: every key optional.
#[derive(Deserialize)]
#[serde(default, deny_unknown_fields)]
struct ParamsJson {
    gpu_layers: i32,
    use_mmap: bool,
    cpu_variant: Option<CpuVariant>,
}

impl Default for ParamsJson {
    fn default() -> Self {
        let ModelParams {
            gpu_layers,
            use_mmap,
            cpu_variant,
        } = ModelParams::default();
        ParamsJson {
            gpu_layers,
            use_mmap,
            cpu_variant,
        }
    }
}

impl ModelParams {
    /// Parses a JSON object with `gpu_layers`, `use_mmap` and
    /// `cpu_variant` (all optional). Text that is not JSON is [`Error::InvalidJson`]; anything
    /// else wrong (not an object, an unknown key, a bad value) is
    /// [`Error::InvalidConfig`] naming the key and its rule, in the same
    /// words as [`Config::from_json`].
    pub fn from_json(json: &str) -> Result<Self> {
        let object = read_settings(json, &MODEL_PARAMS_KEYS)?;
        let params: ParamsJson = serde_path_to_error::deserialize(Json::Object(object))
            .map_err(|e| Error::config(e.path().to_string(), e.inner().to_string()))?;
        let params = ModelParams {
            gpu_layers: params.gpu_layers,
            use_mmap: params.use_mmap,
            cpu_variant: params.cpu_variant,
        };
        params.validate()?;
        Ok(params)
    }

    /// Checks every value: `gpu_layers` is -1 (all) or more.
    pub fn validate(&self) -> Result<()> {
        MODEL_PARAMS_KEYS
            .rule("gpu_layers")?
            .check("gpu_layers", Given::Json(&Json::from(self.gpu_layers)))
    }
}

impl From<&Config> for ModelParams {
    fn from(config: &Config) -> Self {
        ModelParams {
            gpu_layers: config.gpu_layers,
            cpu_variant: config.cpu_variant,
            ..ModelParams::default()
        }
    }
}

pub(crate) struct ModelInner {
    pub(crate) llama: LlamaModel,
    pub(crate) path: String,
    pub(crate) metadata: ModelMetadata,
    /// The `auto` call-or-prose threshold measured on this model, per call
    /// format (see `calibration`): every agent on the model shares it.
    pub(crate) call_thresholds: parking_lot::Mutex<HashMap<ToolCallFormat, f32>>,
}

/// A loaded GGUF model. Cloning is cheap and shares the weights.
#[derive(Clone)]
pub struct Model {
    pub(crate) inner: Arc<ModelInner>,
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model")
            .field("path", &self.inner.path)
            .field("architecture", &self.inner.metadata.architecture)
            .finish_non_exhaustive()
    }
}

impl Model {
    /// Loads a GGUF file. Bad `params` are [`Error::InvalidConfig`].
    pub fn load(path: impl AsRef<Path>, params: ModelParams) -> Result<Model> {
        Self::load_with_progress(path, params, |_| true)
    }

    /// Loads a GGUF file, reporting progress from 0.0 to 1.0; returning
    /// `false` from `on_progress` cancels the load (`Error::Cancelled`).
    pub fn load_with_progress(
        path: impl AsRef<Path>,
        params: ModelParams,
        mut on_progress: impl FnMut(f32) -> bool + 'static,
    ) -> Result<Model> {
        params.validate()?;
        let path = path.as_ref();
        let shown = path.display().to_string();
        let fail = |reason: String| Error::ModelLoadFailed {
            path: shown.clone(),
            reason,
        };
        check_gguf_file(path).map_err(&fail)?;
        let runtime = runtime(params.cpu_variant)?;

        let cancelled = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let seen_cancel = cancelled.clone();
        let mut llama_params = LlamaModelParams::default()
            .with_use_mmap(params.use_mmap)
            .with_progress_callback(move |progress| {
                // A panic must not unwind into llama.cpp.
                let go_on = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    on_progress(progress)
                }))
                .unwrap_or(false);
                if !go_on {
                    seen_cancel.store(true, std::sync::atomic::Ordering::Relaxed);
                }
                go_on
            });
        llama_params = match u32::try_from(params.gpu_layers) {
            Ok(n) => llama_params.with_n_gpu_layers(n),
            // -1, the only negative value `validate` lets through.
            Err(_) => llama_params.with_n_gpu_layers(u32::MAX >> 1),
        };

        logs::take_recent_errors();
        let llama = LlamaModel::load_from_file(runtime, path, &llama_params).map_err(|e| {
            if cancelled.load(std::sync::atomic::Ordering::Relaxed) {
                return Error::Cancelled(format!("loading `{shown}` was cancelled"));
            }
            let detail = logs::take_recent_errors().join("; ");
            fail(if detail.is_empty() {
                format!("llama.cpp could not load it ({e})")
            } else {
                format!("llama.cpp could not load it: {detail}")
            })
        })?;
        let metadata = read_metadata(&llama);
        Ok(Model {
            inner: Arc::new(ModelInner {
                llama,
                path: shown,
                metadata,
                call_thresholds: Default::default(),
            }),
        })
    }

    /// The path it was loaded from.
    pub fn path(&self) -> &str {
        &self.inner.path
    }

    /// What the GGUF says about itself (template, architecture, name, special tokens).
    pub fn metadata(&self) -> &ModelMetadata {
        &self.inner.metadata
    }

    /// The context length the model was trained with.
    pub fn trained_context(&self) -> u32 {
        self.inner.llama.n_ctx_train()
    }

    /// How many agents and handles share this model.
    pub fn share_count(&self) -> usize {
        Arc::strong_count(&self.inner)
    }
}

/// What a GGUF file says about itself, read without loading its weights
/// (for listing models: a few milliseconds instead of a full load).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModelSummary {
    /// The file.
    pub path: String,
    /// Its size on disk.
    pub bytes: u64,
    /// `general.name`.
    pub name: Option<String>,
    /// `general.architecture`.
    pub architecture: Option<String>,
    /// `general.size_label`, e.g. `135M`.
    pub size_label: Option<String>,
    /// The weights' quantization (`general.file_type`), e.g. `Q4_1`.
    pub quantization: Option<String>,
    /// The context length the model was trained with
    /// (`{architecture}.context_length`).
    pub trained_context: Option<u32>,
    /// Whether the file carries its own chat template.
    pub has_chat_template: bool,
}

impl Model {
    /// Reads a GGUF file's metadata and vocabulary only: bad files fail as
    /// [`Model::load`] does, but no weights are read.
    pub fn inspect(path: impl AsRef<Path>) -> Result<ModelSummary> {
        let path = path.as_ref();
        let shown = path.display().to_string();
        let fail = |reason: String| Error::ModelLoadFailed {
            path: shown.clone(),
            reason,
        };
        check_gguf_file(path).map_err(&fail)?;
        let runtime = runtime(None)?;
        let params = LlamaModelParams::default().with_vocab_only(true);
        logs::take_recent_errors();
        let llama = LlamaModel::load_from_file(runtime, path, &params).map_err(|e| {
            let detail = logs::take_recent_errors().join("; ");
            fail(if detail.is_empty() {
                format!("llama.cpp could not read it ({e})")
            } else {
                format!("llama.cpp could not read it: {detail}")
            })
        })?;
        let meta = |key: &str| llama.meta_val_str(key).ok().filter(|v| !v.is_empty());
        let architecture = meta("general.architecture");
        // A vocabulary-only load reads no hyperparameters: the key says it.
        let trained_context = architecture
            .as_ref()
            .and_then(|arch| meta(&format!("{arch}.context_length")))
            .and_then(|n| n.parse().ok());
        Ok(ModelSummary {
            path: shown.clone(),
            bytes: std::fs::metadata(path).map_or(0, |m| m.len()),
            name: meta("general.name"),
            architecture,
            size_label: meta("general.size_label"),
            quantization: meta("general.file_type").map(|t| quantization_name(&t)),
            trained_context,
            has_chat_template: meta("tokenizer.chat_template").is_some(),
        })
    }
}

/// llama.cpp's name for a `general.file_type` value (its `llama_ftype`
/// enum, which it does not export by name).
fn quantization_name(file_type: &str) -> String {
    const NAMES: [(&str, &str); 33] = [
        ("0", "F32"),
        ("1", "F16"),
        ("2", "Q4_0"),
        ("3", "Q4_1"),
        ("7", "Q8_0"),
        ("8", "Q5_0"),
        ("9", "Q5_1"),
        ("10", "Q2_K"),
        ("11", "Q3_K_S"),
        ("12", "Q3_K_M"),
        ("13", "Q3_K_L"),
        ("14", "Q4_K_S"),
        ("15", "Q4_K_M"),
        ("16", "Q5_K_S"),
        ("17", "Q5_K_M"),
        ("18", "Q6_K"),
        ("19", "IQ2_XXS"),
        ("20", "IQ2_XS"),
        ("21", "Q2_K_S"),
        ("22", "IQ3_XS"),
        ("23", "IQ3_XXS"),
        ("24", "IQ1_S"),
        ("25", "IQ4_NL"),
        ("26", "IQ3_S"),
        ("27", "IQ3_M"),
        ("28", "IQ2_S"),
        ("29", "IQ2_M"),
        ("30", "IQ4_XS"),
        ("31", "IQ1_M"),
        ("32", "BF16"),
        ("36", "TQ1_0"),
        ("37", "TQ2_0"),
        ("38", "MXFP4"),
    ];
    NAMES.iter().find(|(n, _)| *n == file_type).map_or_else(
        || format!("file type {file_type}"),
        |(_, name)| (*name).to_owned(),
    )
}

/// Checks what can be checked before llama.cpp sees the file, so that the
/// common mistakes get a clear reason: missing, a directory, unreadable,
/// empty, or not a GGUF file.
fn check_gguf_file(path: &Path) -> std::result::Result<(), String> {
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => "the file does not exist".to_string(),
        _ => format!("cannot read it: {e}"),
    })?;
    if meta.is_dir() {
        return Err("it is a directory, not a GGUF file".into());
    }
    let mut magic = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => {
                format!("it is too short ({} bytes) to be a GGUF file", meta.len())
            }
            _ => format!("cannot read it: {e}"),
        })?;
    if &magic != b"GGUF" {
        return Err(format!(
            "it is not a GGUF file (it starts with {:02x?}, not \"GGUF\")",
            magic
        ));
    }
    Ok(())
}

fn read_metadata(model: &LlamaModel) -> ModelMetadata {
    let meta = |key: &str| model.meta_val_str(key).ok().filter(|v| !v.is_empty());
    let vocab = model.vocab();
    let piece =
        |token| String::from_utf8_lossy(&vocab.token_to_piece(token, true, None)).into_owned();
    ModelMetadata {
        chat_template: meta("tokenizer.chat_template"),
        architecture: meta("general.architecture"),
        name: meta("general.name"),
        special: SpecialTokens {
            bos: piece(vocab.bos()),
            eos: piece(vocab.eos()),
        },
    }
}
