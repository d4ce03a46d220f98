//! Which of llama.cpp's CPU variants runs: the best one that both the CPU
//! and the operating system allow, unless the `cpu_variant` config key or
//! the `ZOO_CPU_VARIANT` environment variable names one. A named variant
//! the machine cannot run is an [`Error::InvalidConfig`], never a crash.
//!
//! This module decides; `backend::llama::cpu_backend` finds the variant
//! files next to the library and loads the chosen one into llama.cpp, once
//! per process, and reports it as [`BackendInfo`].

pub mod host;
pub mod variant;

use serde::{Deserialize, Serialize};

pub use host::Host;
pub use variant::{CpuVariant, Isa};

use crate::error::{Error, Result};

/// The environment variable that forces a CPU variant (`auto` or unset:
/// the best one).
pub const CPU_VARIANT_ENV: &str = "ZOO_CPU_VARIANT";

/// The config key (and model parameter) that forces a CPU variant.
pub const CPU_VARIANT_KEY: &str = "cpu_variant";

/// How the CPU variant in use was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChosenBy {
    /// The best variant the CPU and the operating system allow.
    Best,
    /// The `cpu_variant` config key or model parameter.
    Config,
    /// The `ZOO_CPU_VARIANT` environment variable.
    Environment,
    /// The library carries one CPU backend, built in (the static libzoo.a).
    BuiltIn,
}

/// A variant the library carries that this machine may not run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefusedVariant {
    /// Its name.
    pub variant: String,
    /// Why: what the CPU lacks or the operating system has not enabled.
    pub reason: String,
}

/// llama.cpp's CPU backend as this process runs it: the same fields in
/// every front door (`backend_info()`; camelCase in Node).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackendInfo {
    /// The CPU variant in use, e.g. `"zen4"` or `"haswell"`; `"x64"` is
    /// the portable one.
    pub cpu_variant: String,
    /// How it was chosen.
    pub chosen_by: ChosenBy,
    /// What that CPU backend was built with, as llama.cpp reports it
    /// (`AVX2`, `AVX512_VNNI`, `OPENMP`, `REPACK`, ...).
    pub features: Vec<String>,
    /// The variants carried that this CPU and operating system allow, best first.
    pub usable: Vec<String>,
    /// The variants carried that they do not allow, and why.
    pub refused: Vec<RefusedVariant>,
    /// The directory the variant was loaded from; `None` when the CPU
    /// backend is built into the library.
    pub directory: Option<String>,
}

/// What was decided: the variant and how, and what else was possible.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    /// The variant to load.
    pub variant: CpuVariant,
    /// How it was chosen.
    pub chosen_by: ChosenBy,
    /// The variants carried that may run here, best first.
    pub usable: Vec<CpuVariant>,
    /// The variants carried that may not, and why.
    pub refused: Vec<RefusedVariant>,
}

/// The variant asked for, if any: the config's (`config`) first, then
/// `ZOO_CPU_VARIANT` (`auto` or empty means none).
pub fn requested(config: Option<CpuVariant>) -> Result<Option<(CpuVariant, ChosenBy)>> {
    if let Some(variant) = config {
        return Ok(Some((variant, ChosenBy::Config)));
    }
    let Some(value) = std::env::var_os(CPU_VARIANT_ENV) else {
        return Ok(None);
    };
    let value = value.to_string_lossy();
    let value = value.trim();
    if value.is_empty() || value == "auto" {
        return Ok(None);
    }
    CpuVariant::from_name(value)
        .map(|v| Some((v, ChosenBy::Environment)))
        .ok_or_else(|| unknown_variant(CPU_VARIANT_ENV, value))
}

/// The error for a name that is no CPU variant.
pub fn unknown_variant(key: &str, name: &str) -> Error {
    Error::config(
        key,
        format!(
            "unknown CPU variant `{name}`; the variants are {}",
            CpuVariant::names()
        ),
    )
}

/// Chooses among the variants `carried`: `request` if this machine may
/// run it, else the best it may run.
pub fn choose(
    host: &Host,
    carried: &[CpuVariant],
    request: Option<(CpuVariant, ChosenBy)>,
) -> Result<Choice> {
    let usable = host.usable(carried);
    let refused: Vec<RefusedVariant> = carried
        .iter()
        .filter_map(|v| {
            host.refusal(*v).map(|reason| RefusedVariant {
                variant: v.name().into(),
                reason,
            })
        })
        .collect();
    let usable_names = || {
        usable
            .iter()
            .map(|v| v.name())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let (variant, chosen_by) = match request {
        Some((variant, by)) => {
            let key = if by == ChosenBy::Environment {
                CPU_VARIANT_ENV
            } else {
                CPU_VARIANT_KEY
            };
            if !carried.contains(&variant) {
                let carried = carried.iter().map(|v| v.name()).collect::<Vec<_>>();
                return Err(Error::config(
                    key,
                    format!(
                        "the CPU variant `{variant}` is not among those this library carries ({})",
                        carried.join(", ")
                    ),
                ));
            }
            if let Some(reason) = host.refusal(variant) {
                return Err(Error::config(
                    key,
                    format!(
                        "the CPU variant `{variant}` cannot run here: {reason}; this machine runs {}",
                        usable_names()
                    ),
                ));
            }
            (variant, by)
        }
        None => {
            let best = usable.first().copied().ok_or_else(|| {
                Error::Internal(format!(
                    "none of llama.cpp's CPU variants can run here: {}",
                    refused
                        .iter()
                        .map(|r| format!("{} ({})", r.variant, r.reason))
                        .collect::<Vec<_>>()
                        .join("; ")
                ))
            })?;
            (best, ChosenBy::Best)
        }
    };
    Ok(Choice {
        variant,
        chosen_by,
        usable,
        refused,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use Isa::*;

    fn avx2_host() -> Host {
        Host {
            cpu: vec![Sse42, Avx, F16c, Fma, Avx2, Bmi2],
            xcr0: Some(0x7),
            amx_permission: Err("the CPU has no AMX".into()),
        }
    }

    #[test]
    fn the_best_usable_variant_wins() {
        let choice = choose(&avx2_host(), &CpuVariant::ALL, None).unwrap();
        assert_eq!(choice.variant, CpuVariant::Haswell);
        assert_eq!(choice.chosen_by, ChosenBy::Best);
        assert_eq!(choice.usable.len(), 6);
        assert_eq!(choice.refused.len(), 8);
        let refused = &choice.refused[0];
        assert_eq!(refused.variant, "skylakex");
        assert_eq!(refused.reason, "this CPU lacks AVX512");
    }

    #[test]
    fn only_carried_variants_are_chosen() {
        let carried = [CpuVariant::X64, CpuVariant::Sse42, CpuVariant::Zen4];
        let choice = choose(&avx2_host(), &carried, None).unwrap();
        assert_eq!(choice.variant, CpuVariant::Sse42);
        assert_eq!(choice.usable, vec![CpuVariant::Sse42, CpuVariant::X64]);
    }

    #[test]
    fn a_requested_variant_is_used_when_it_can_run() {
        let choice = choose(
            &avx2_host(),
            &CpuVariant::ALL,
            Some((CpuVariant::X64, ChosenBy::Config)),
        )
        .unwrap();
        assert_eq!(choice.variant, CpuVariant::X64);
        assert_eq!(choice.chosen_by, ChosenBy::Config);
    }

    #[test]
    fn a_requested_variant_the_machine_lacks_is_a_config_error() {
        let err = choose(
            &avx2_host(),
            &CpuVariant::ALL,
            Some((CpuVariant::Zen4, ChosenBy::Environment)),
        )
        .unwrap_err();
        assert_eq!(err.code(), crate::ErrorCode::InvalidConfig);
        assert_eq!(
            err.to_string(),
            "invalid config `ZOO_CPU_VARIANT`: the CPU variant `zen4` cannot run here: \
             this CPU lacks AVX512, AVX512_VBMI, AVX512_VNNI, AVX512_BF16; this machine runs \
             haswell, piledriver, ivybridge, sandybridge, sse42, x64"
        );
        let err = choose(
            &avx2_host(),
            &[CpuVariant::X64],
            Some((CpuVariant::Haswell, ChosenBy::Config)),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid config `cpu_variant`: the CPU variant `haswell` is not among those this \
             library carries (x64)"
        );
    }

    #[test]
    fn nothing_carried_is_an_error_not_a_panic() {
        let err = choose(&avx2_host(), &[], None).unwrap_err();
        assert_eq!(err.code(), crate::ErrorCode::Internal);
    }

    #[test]
    fn the_config_comes_before_the_environment() {
        // No test sets ZOO_CPU_VARIANT in this process (tests run in
        // parallel threads, so none may); the config's value is taken as is.
        assert_eq!(
            requested(Some(CpuVariant::Sse42)).unwrap(),
            Some((CpuVariant::Sse42, ChosenBy::Config))
        );
        assert_eq!(
            unknown_variant(CPU_VARIANT_KEY, "pentium").to_string(),
            format!(
                "invalid config `cpu_variant`: unknown CPU variant `pentium`; the variants are {}",
                CpuVariant::names()
            )
        );
    }

    #[test]
    fn info_has_one_json_shape() {
        let info = BackendInfo {
            cpu_variant: "haswell".into(),
            chosen_by: ChosenBy::Environment,
            features: vec!["AVX2".into()],
            usable: vec!["haswell".into(), "x64".into()],
            refused: vec![RefusedVariant {
                variant: "zen4".into(),
                reason: "this CPU lacks AVX512".into(),
            }],
            directory: None,
        };
        assert_eq!(
            serde_json::to_string(&info).unwrap(),
            r#"{"cpu_variant":"haswell","chosen_by":"environment","features":["AVX2"],"usable":["haswell","x64"],"refused":[{"variant":"zen4","reason":"this CPU lacks AVX512"}],"directory":null}"#
        );
    }
}
