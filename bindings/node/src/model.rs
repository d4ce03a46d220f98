//! `NativeModel`: a GGUF file loaded once and shared by several agents.

use napi::bindgen_prelude::AsyncTask;
use napi::{Env, Task};
use napi_derive::napi;
use zoo_core::{Model, ModelParams};

use crate::errors::IntoNapi;

/// A loaded model (wrapped by the package's `Model`).
#[napi]
pub struct NativeModel {
    pub(crate) model: Model,
}

#[napi]
impl NativeModel {
    /// The path it was loaded from.
    #[napi(getter)]
    pub fn path(&self) -> String {
        self.model.path().to_string()
    }

    /// GGUF metadata as JSON: `chat_template`, `architecture`, `name, special tokens (`ModelMetadata`'s JSON)`.
    #[napi]
    pub fn metadata_json(&self) -> String {
        self.model.metadata().to_json()
    }
}

/// Loads a model on a libuv worker thread.
pub struct LoadModel {
    path: String,
    params: ModelParams,
}

impl Task for LoadModel {
    type Output = Model;
    type JsValue = NativeModel;

    fn compute(&mut self) -> napi::Result<Model> {
        Model::load(&self.path, self.params).napi_err()
    }

    fn resolve(&mut self, _env: Env, model: Model) -> napi::Result<NativeModel> {
        Ok(NativeModel { model })
    }
}

/// Loads a GGUF file off the JavaScript thread. `paramsJson` holds the
/// load options (`gpu_layers`, `use_mmap`, `cpu_variant`), checked by the
/// engine as for C.
#[napi(ts_return_type = "Promise<NativeModel>")]
pub fn load_model(path: String, params_json: String) -> napi::Result<AsyncTask<LoadModel>> {
    let params = ModelParams::from_json(&params_json).napi_err()?;
    Ok(AsyncTask::new(LoadModel { path, params }))
}

/// llama.cpp's CPU backend as this process runs it, as JSON (the fields of
/// `zoo_core::BackendInfo`); loads it if no model has been loaded yet.
#[napi]
pub fn backend_info_json() -> napi::Result<String> {
    let info = zoo_core::backend_info().napi_err()?;
    serde_json::to_string(&info)
        .map_err(zoo_core::Error::from)
        .napi_err()
}
