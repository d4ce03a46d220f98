//! llama.cpp's CPU backend, loaded once per process before the first model.
//!
//! With the `dynamic-backends` feature the library carries the backend in
//! every x86-64 variant (`libggml-cpu-<variant>.so`) in a `zoo-backends`
//! folder next to itself, wherever it is installed: the folder is found
//! from this library's own file (`dladdr`), never from the working
//! directory. [`crate::cpu`] chooses the variant; it is loaded
//! with `ggml_backend_load`. Without the feature (the static libzoo.a) the
//! CPU backend is built in at one level, which is checked against the
//! machine the same way.
//!
//! A process runs one variant: the first model load (or [`backend_info`])
//! fixes it; a later `cpu_variant` asking for another is an error.

use std::ffi::{c_char, CStr};

use parking_lot::Mutex;

use super::logs;
#[cfg(not(feature = "dynamic-backends"))]
use crate::cpu::Isa;
use crate::cpu::{self, BackendInfo, ChosenBy, CpuVariant, Host, CPU_VARIANT_KEY};
use crate::error::{Error, Result};
use crate::logs::targets;

/// The folder, next to the library, that holds llama.cpp's shared
/// libraries and CPU variants.
pub const BACKENDS_FOLDER: &str = "zoo-backends";

static LOADED: Mutex<Option<BackendInfo>> = Mutex::new(None);

/// llama.cpp's CPU backend as this process runs it, loading it first if no
/// model has been loaded yet (honouring `ZOO_CPU_VARIANT`).
pub fn backend_info() -> Result<BackendInfo> {
    ensure(None)
}

/// Loads the CPU backend unless it is loaded, with the variant `config`
/// asks for (else `ZOO_CPU_VARIANT`'s, else the best). A failed choice or
/// load is not remembered: the next call tries again.
pub(crate) fn ensure(config: Option<CpuVariant>) -> Result<BackendInfo> {
    let request = cpu::requested(config)?;
    let mut loaded = LOADED.lock();
    if let Some(info) = loaded.as_ref() {
        // The environment was read when the variant was chosen; only an
        // explicit config value can disagree with it now.
        if let Some((variant, ChosenBy::Config)) = request {
            if variant.name() != info.cpu_variant {
                return Err(Error::config(
                    CPU_VARIANT_KEY,
                    format!(
                        "this process already runs llama.cpp's `{}` CPU variant (chosen when \
                         the first model loaded), and a process runs one; `{variant}` was asked for",
                        info.cpu_variant
                    ),
                ));
            }
        }
        return Ok(info.clone());
    }
    logs::install();
    let info = load(request)?;
    tracing::info!(
        target: targets::BACKEND,
        cpu_variant = %info.cpu_variant,
        chosen_by = ?info.chosen_by,
        directory = info.directory.as_deref().unwrap_or("built in"),
        "llama.cpp CPU backend `{}` ({}); usable here: {}",
        info.cpu_variant,
        info.features.join(" "),
        info.usable.join(", ")
    );
    *loaded = Some(info.clone());
    Ok(info)
}

/// The features llama.cpp's registered CPU backend reports (`AVX2`,
/// `OPENMP`, ...): those whose value is `1`, and `NAME=value` for others.
fn cpu_features() -> Result<Vec<String>> {
    // SAFETY: these are llama.cpp's registry queries; each returns a
    // pointer owned by the registry (or null), which lives for the process.
    // The feature list is an array of C strings ended by a null name.
    unsafe {
        let dev = llama_cpp_sys_2::ggml_backend_dev_by_type(
            llama_cpp_sys_2::GGML_BACKEND_DEVICE_TYPE_CPU,
        );
        if dev.is_null() {
            return Err(Error::Internal(
                "llama.cpp has no CPU backend registered".into(),
            ));
        }
        let reg = llama_cpp_sys_2::ggml_backend_dev_backend_reg(dev);
        let proc = llama_cpp_sys_2::ggml_backend_reg_get_proc_address(
            reg,
            c"ggml_backend_get_features".as_ptr(),
        );
        if proc.is_null() {
            return Ok(Vec::new());
        }
        type GetFeatures = unsafe extern "C" fn(
            llama_cpp_sys_2::ggml_backend_reg_t,
        )
            -> *const llama_cpp_sys_2::ggml_backend_feature;
        let get: GetFeatures = std::mem::transmute(proc);
        let mut features = Vec::new();
        let mut at = get(reg);
        while !at.is_null() && !(*at).name.is_null() {
            let name = text((*at).name);
            let value = text((*at).value);
            features.push(if value == "1" {
                name
            } else {
                format!("{name}={value}")
            });
            at = at.add(1);
        }
        Ok(features)
    }
}

/// # Safety
/// `ptr` is null or a NUL-terminated string.
unsafe fn text(ptr: *const c_char) -> String {
    if ptr.is_null() {
        return String::new();
    }
    // SAFETY: as the caller promised.
    unsafe { CStr::from_ptr(ptr) }
        .to_string_lossy()
        .into_owned()
}

/// The instruction sets among `features`.
#[cfg(not(feature = "dynamic-backends"))]
fn isas(features: &[String]) -> Vec<Isa> {
    features.iter().filter_map(|f| Isa::from_name(f)).collect()
}

/// The instruction sets the built-in CPU backend was compiled for (see
/// zoo-core's build.rs), or `None` when it was built for the build machine
/// (`native`), which cannot be checked.
#[cfg(not(feature = "dynamic-backends"))]
fn built_in_isas() -> Option<Vec<Isa>> {
    match env!("ZOO_BUILT_IN_CPU") {
        "native" => None,
        sets => Some(sets.split(',').filter_map(Isa::from_name).collect()),
    }
}

#[cfg(not(feature = "dynamic-backends"))]
fn load(request: Option<(CpuVariant, ChosenBy)>) -> Result<BackendInfo> {
    // Checked before llama.cpp registers its CPU backend, which already
    // runs code compiled for these sets.
    let compiled = built_in_isas();
    if let Some(compiled) = &compiled {
        if let Some(reason) = Host::detect().refusal_of(compiled) {
            let variant = CpuVariant::matching(compiled);
            return Err(Error::Internal(format!(
                "this library's built-in llama.cpp CPU backend (`{variant}`: {}) cannot run \
                 here: {reason}; the shared library picks a variant at run time",
                compiled
                    .iter()
                    .map(|i| i.name())
                    .collect::<Vec<_>>()
                    .join(" ")
            )));
        }
    }
    let features = cpu_features()?;
    let variant = CpuVariant::matching(&compiled.unwrap_or_else(|| isas(&features)));
    if let Some((asked, by)) = request {
        if asked != variant {
            let key = if by == ChosenBy::Environment {
                cpu::CPU_VARIANT_ENV
            } else {
                CPU_VARIANT_KEY
            };
            return Err(Error::config(
                key,
                format!(
                    "this library carries one CPU variant, built in: `{variant}` ({}); \
                     `{asked}` was asked for",
                    features.join(" ")
                ),
            ));
        }
    }
    Ok(BackendInfo {
        cpu_variant: variant.name().into(),
        chosen_by: ChosenBy::BuiltIn,
        features,
        usable: vec![variant.name().into()],
        refused: Vec::new(),
        directory: None,
    })
}

#[cfg(feature = "dynamic-backends")]
fn load(request: Option<(CpuVariant, ChosenBy)>) -> Result<BackendInfo> {
    let dir = files::backends_dir()?;
    if !cfg!(target_arch = "x86_64") {
        return files::load_ggml_choice(&dir, request);
    }
    let carried = files::carried_variants(&dir)?;
    let choice = cpu::choose(&Host::detect(), &carried, request)?;
    files::load_variant(&dir.join(choice.variant.file_name()))?;
    let features = cpu_features()?;
    Ok(BackendInfo {
        cpu_variant: choice.variant.name().into(),
        chosen_by: choice.chosen_by,
        features,
        usable: choice.usable.iter().map(|v| v.name().into()).collect(),
        refused: choice.refused,
        directory: Some(dir.display().to_string()),
    })
}

/// The variant files: where they are, which there are, loading one.
#[cfg(feature = "dynamic-backends")]
mod files {
    use std::ffi::CString;
    use std::path::{Path, PathBuf};

    use super::{logs, BACKENDS_FOLDER};
    use crate::cpu::{BackendInfo, ChosenBy, CpuVariant};
    use crate::error::{Error, Result};
    use crate::logs::targets;

    /// The file (shared library or executable) this code is in.
    #[cfg(unix)]
    fn own_file() -> Option<PathBuf> {
        let mut info = std::mem::MaybeUninit::<libc::Dl_info>::zeroed();
        let here = own_file as *const libc::c_void;
        // SAFETY: dladdr only reads the address and fills `info`; the file
        // name it points to belongs to the loader and is copied at once.
        let found = unsafe { libc::dladdr(here, info.as_mut_ptr()) };
        // SAFETY: dladdr returned non-zero, so it filled `info`.
        let info = unsafe { info.assume_init() };
        if found == 0 || info.dli_fname.is_null() {
            return None;
        }
        // SAFETY: dli_fname is a NUL-terminated path owned by the loader.
        let name = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) };
        let path = PathBuf::from(
            <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(name.to_bytes()),
        );
        // The main program may be named as it was started (relative).
        if path.is_absolute() {
            Some(path)
        } else {
            std::env::current_exe().ok()
        }
    }

    #[cfg(not(unix))]
    fn own_file() -> Option<PathBuf> {
        std::env::current_exe().ok()
    }

    /// `zoo-backends` next to this library.
    pub(super) fn backends_dir() -> Result<PathBuf> {
        let own = own_file().ok_or_else(|| {
            Error::Internal("cannot tell which file this library was loaded from".into())
        })?;
        let own = std::fs::canonicalize(&own).unwrap_or(own);
        let dir = own
            .parent()
            .map(|p| p.join(BACKENDS_FOLDER))
            .ok_or_else(|| Error::Internal(format!("{} has no folder", own.display())))?;
        if !dir.is_dir() {
            return Err(Error::Io(format!(
                "llama.cpp's CPU backends are missing: {} is not a folder (it belongs next to {}; \
                 the installation is incomplete)",
                dir.display(),
                own.display()
            )));
        }
        Ok(dir)
    }

    /// The variants whose files are in `dir`.
    pub(super) fn carried_variants(dir: &Path) -> Result<Vec<CpuVariant>> {
        let entries = std::fs::read_dir(dir)
            .map_err(|e| Error::Io(format!("cannot list {}: {e}", dir.display())))?;
        let prefix = format!("{}ggml-cpu-", std::env::consts::DLL_PREFIX);
        let mut carried = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(variant) = name
                .strip_prefix(&prefix)
                .and_then(|rest| rest.strip_suffix(std::env::consts::DLL_SUFFIX))
            else {
                continue;
            };
            match CpuVariant::from_name(variant) {
                Some(v) => carried.push(v),
                None => tracing::warn!(
                    target: targets::BACKEND,
                    "{name} in {} is no CPU variant this version knows; left alone",
                    dir.display()
                ),
            }
        }
        if carried.is_empty() {
            return Err(Error::Io(format!(
                "llama.cpp's CPU backends are missing: no {prefix}*{} in {}",
                std::env::consts::DLL_SUFFIX,
                dir.display()
            )));
        }
        carried.sort_by_key(|v| v.score());
        Ok(carried)
    }

    /// Registers the CPU backend in `path` with llama.cpp.
    pub(super) fn load_variant(path: &Path) -> Result<()> {
        let c_path = CString::new(path.as_os_str().as_encoded_bytes())
            .map_err(|_| Error::Internal(format!("{} holds a NUL byte", path.display())))?;
        logs::take_recent_errors();
        // SAFETY: a valid C string; llama.cpp copies what it keeps. The
        // variant was chosen as one this CPU and OS run, so the library's
        // code may execute (its score check runs again inside).
        let reg = unsafe { llama_cpp_sys_2::ggml_backend_load(c_path.as_ptr()) };
        if reg.is_null() {
            return Err(Error::Internal(format!(
                "llama.cpp could not load its CPU backend {}: {}",
                path.display(),
                logs::take_recent_errors().join("; ")
            )));
        }
        Ok(())
    }

    /// Where variants cannot be chosen here (not x86-64), llama.cpp's own
    /// score picks one among those in `dir`.
    pub(super) fn load_ggml_choice(
        dir: &Path,
        request: Option<(CpuVariant, ChosenBy)>,
    ) -> Result<BackendInfo> {
        if let Some((variant, _)) = request {
            return Err(Error::config(
                crate::cpu::CPU_VARIANT_KEY,
                format!("`{variant}` is an x86-64 variant; this CPU is not x86-64"),
            ));
        }
        let c_dir = CString::new(dir.as_os_str().as_encoded_bytes())
            .map_err(|_| Error::Internal(format!("{} holds a NUL byte", dir.display())))?;
        // SAFETY: a valid C string; llama.cpp loads the best backend it finds there.
        unsafe { llama_cpp_sys_2::ggml_backend_load_all_from_path(c_dir.as_ptr()) };
        Ok(BackendInfo {
            cpu_variant: "llama.cpp's choice".into(),
            chosen_by: ChosenBy::Best,
            features: super::cpu_features()?,
            usable: Vec::new(),
            refused: Vec::new(),
            directory: Some(dir.display().to_string()),
        })
    }
}
