//! `zoo_model`: a GGUF model loaded once and shared by several agents.

use std::ffi::{c_char, c_void};

use zoo_core::{Error, Model, ModelParams};

use crate::boundary::{guard, guard_void, handle_arg, opt_str_arg, out_arg, str_arg};
use crate::status::zoo_status;

/// A loaded model. Free it with `zoo_model_free`; agents created from it
/// keep the weights alive until they are freed too.
pub struct zoo_model {
    pub(crate) model: Model,
}

/// Load progress from 0.0 to 1.0, called on the loading thread. Return
/// false to cancel the load (`ZOO_CANCELLED`).
pub type zoo_progress_fn =
    Option<unsafe extern "C" fn(user_data: *mut c_void, progress: f32) -> bool>;

fn parse_params(json: Option<&str>) -> Result<ModelParams, Error> {
    json.map_or(Ok(ModelParams::default()), ModelParams::from_json)
}

/// Loads a GGUF model.
///
/// `params_json` may be NULL or a JSON object with `gpu_layers` (default 0;
/// -1 offloads all), `use_mmap` (default true) and `cpu_variant` (default
/// null: the best llama.cpp CPU variant this machine allows, or the one
/// the environment variable `ZOO_CPU_VARIANT` names; see
/// `zoo_backend_info_json`). On success `*out_model` receives a handle to
/// free with `zoo_model_free`.
/// Blocks while loading; call it from any thread.
///
/// @param path The GGUF file.
/// @param params_json The load parameters, a JSON object, or NULL for the defaults.
/// @param out_model On success, the model; free it with `zoo_model_free`.
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return `ZOO_OK`, `ZOO_MODEL_LOAD_FAILED` with a message naming the path and the reason
/// (missing, unreadable, not GGUF, truncated), `ZOO_INVALID_JSON` for params that are not JSON,
/// `ZOO_INVALID_CONFIG` for anything else wrong with them (the message names the key), or
/// `ZOO_INVALID_ARGUMENT` for a NULL argument or text that is not UTF-8.
#[no_mangle]
pub extern "C" fn zoo_model_load(
    path: *const c_char,
    params_json: *const c_char,
    out_model: *mut *mut zoo_model,
    out_error: *mut *mut c_char,
) -> zoo_status {
    zoo_model_load_with_progress(
        path,
        params_json,
        None,
        std::ptr::null_mut(),
        out_model,
        out_error,
    )
}

/// Like `zoo_model_load`, reporting progress to `progress` (may be NULL)
/// with `user_data`, on the calling thread, before this function returns.
///
/// @param path The GGUF file.
/// @param params_json The load parameters, a JSON object, or NULL for the defaults.
/// @param progress Called with the progress from 0 to 1, or NULL.
/// @param user_data Passed to `progress`.
/// @param out_model On success, the model; free it with `zoo_model_free`.
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return `ZOO_OK`, `ZOO_MODEL_LOAD_FAILED` with a message naming the path and the reason
/// (missing, unreadable, not GGUF, truncated), `ZOO_INVALID_JSON` for params that are not JSON,
/// `ZOO_INVALID_CONFIG` for anything else wrong with them (the message names the key), or
/// `ZOO_INVALID_ARGUMENT` for a NULL argument or text that is not UTF-8; `ZOO_CANCELLED` when
/// `progress` returned false.
#[no_mangle]
pub extern "C" fn zoo_model_load_with_progress(
    path: *const c_char,
    params_json: *const c_char,
    progress: zoo_progress_fn,
    user_data: *mut c_void,
    out_model: *mut *mut zoo_model,
    out_error: *mut *mut c_char,
) -> zoo_status {
    guard(out_error, || {
        let out = out_arg(out_model, "out_model")?;
        let path = str_arg(path, "path")?;
        let params = parse_params(opt_str_arg(params_json, "params_json")?)?;
        let user_data = SendPtr(user_data);
        let model = Model::load_with_progress(path, params, move |fraction| match progress {
            // SAFETY: the caller's callback and user_data, called on the
            // caller's own thread during this call, as documented.
            Some(callback) => unsafe { callback(user_data.get(), fraction) },
            None => true,
        })?;
        out.write(Box::into_raw(Box::new(zoo_model { model })));
        Ok(())
    })
}

/// Frees a model handle. Agents created from it keep working. NULL is ignored.
///
/// @param model The model to free, or NULL.
#[no_mangle]
pub extern "C" fn zoo_model_free(model: *mut zoo_model) {
    guard_void(|| {
        if !model.is_null() {
            // SAFETY: a handle from `zoo_model_load`, freed at most once.
            drop(unsafe { Box::from_raw(model) });
        }
    });
}

/// The model's GGUF metadata as JSON (`chat_template`, `architecture`,
/// `name`, `special`). `*out_json` is freed with `zoo_string_free`.
///
/// @param model The model.
/// @param out_json On success, the metadata; free it with `zoo_string_free`.
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return `ZOO_OK`, or `ZOO_INVALID_ARGUMENT` for a NULL argument.
#[no_mangle]
pub extern "C" fn zoo_model_metadata_json(
    model: *const zoo_model,
    out_json: *mut *mut c_char,
    out_error: *mut *mut c_char,
) -> zoo_status {
    guard(out_error, || {
        let out = out_arg(out_json, "out_json")?;
        let model = handle_arg(model, "model")?;
        let json = model.model.metadata().to_json();
        out.write(crate::boundary::into_c_string(json));
        Ok(())
    })
}

/// llama.cpp's CPU backend as this process runs it, as JSON:
/// `cpu_variant` (e.g. "zen4", "haswell"; "x64" is the portable one),
/// `chosen_by` ("best", "config", "environment" or "built_in"), `features`
/// (what that backend was built with, e.g. "AVX2"), `usable` (the variants
/// this CPU and operating system allow, best first), `refused` (objects
/// with `variant` and `reason`) and `directory` (where the variant was
/// loaded from; null when built in, as in libzoo.a).
///
/// The first model loaded chooses the variant (its `cpu_variant`
/// parameter, else `ZOO_CPU_VARIANT`, else the best); called before any
/// model, this loads it. A process runs one variant.
///
/// @param out_json On success, the JSON object; free it with `zoo_string_free`.
/// @param out_error On failure, the error message (may be NULL; free it with
///   `zoo_string_free`).
/// @return `ZOO_OK`; `ZOO_INVALID_CONFIG` when `ZOO_CPU_VARIANT` names a
///   variant that is unknown or that this machine cannot run (the message
///   says why); `ZOO_IO` when the backend files are missing beside the
///   library.
#[no_mangle]
pub extern "C" fn zoo_backend_info_json(
    out_json: *mut *mut c_char,
    out_error: *mut *mut c_char,
) -> zoo_status {
    guard(out_error, || {
        let out = out_arg(out_json, "out_json")?;
        let info = zoo_core::backend_info()?;
        let json = serde_json::to_string(&info)?;
        out.write(crate::boundary::into_c_string(json));
        Ok(())
    })
}

/// A raw pointer the caller promised may be used where we use it.
#[derive(Clone, Copy)]
pub(crate) struct SendPtr(pub(crate) *mut c_void);

impl SendPtr {
    /// The pointer (a method, so closures capture the whole `SendPtr`).
    pub(crate) fn get(self) -> *mut c_void {
        self.0
    }
}

// SAFETY: zoo.h makes the caller responsible for `user_data` being usable
// from the threads the documentation names (the inference thread for chat
// callbacks and tools); Rust never dereferences it.
unsafe impl Send for SendPtr {}
// SAFETY: as above; the pointer is only passed back to the caller's callbacks.
unsafe impl Sync for SendPtr {}
