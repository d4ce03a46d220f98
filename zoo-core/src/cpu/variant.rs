//! llama.cpp's x86-64 CPU variants and the instruction sets each one uses.
//!
//! With `GGML_CPU_ALL_VARIANTS` llama.cpp builds its CPU backend once per
//! variant (`libggml-cpu-<name>.so`), each compiled for a set of instruction
//! sets. This table mirrors `ggml_add_cpu_backend_variant` in llama.cpp's
//! `ggml/src/CMakeLists.txt` (llama-cpp-sys-2 0.1.161); the test
//! `carried_variants_are_known` fails if a build carries one it lacks.

use serde::{Deserialize, Serialize};

/// An instruction-set extension a variant is compiled for, named as
/// llama.cpp's build names it (`GGML_<NAME>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Isa {
    /// SSE4.2.
    Sse42,
    /// AVX (256-bit vectors).
    Avx,
    /// Half-precision conversions.
    F16c,
    /// Fused multiply-add.
    Fma,
    /// AVX2.
    Avx2,
    /// BMI2 bit manipulation.
    Bmi2,
    /// AVX-VNNI (256-bit dot products, VEX encoded).
    AvxVnni,
    /// AVX-512 F, CD, VL, DQ and BW (what llama.cpp calls `AVX512`).
    Avx512,
    /// AVX-512 VBMI.
    Avx512Vbmi,
    /// AVX-512 VNNI.
    Avx512Vnni,
    /// AVX-512 BF16.
    Avx512Bf16,
    /// AMX tiles.
    AmxTile,
    /// AMX int8 tile multiplication.
    AmxInt8,
}

/// The register state an instruction set needs the operating system to
/// save and restore (XCR0), besides the CPU having it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OsState {
    /// General-purpose and SSE registers, which every x86-64 OS keeps.
    Base,
    /// The upper halves of the YMM registers (XCR0 bits 1 and 2).
    Ymm,
    /// The AVX-512 opmask and ZMM registers (XCR0 bits 1, 2, 5, 6 and 7).
    Zmm,
    /// The AMX tile configuration and data (XCR0 bits 17 and 18, and on
    /// Linux the process's permission, `ARCH_REQ_XCOMP_PERM`).
    Tile,
}

impl Isa {
    /// llama.cpp's name: `AVX2`, `AVX512_VNNI`, ...
    pub fn name(self) -> &'static str {
        match self {
            Isa::Sse42 => "SSE42",
            Isa::Avx => "AVX",
            Isa::F16c => "F16C",
            Isa::Fma => "FMA",
            Isa::Avx2 => "AVX2",
            Isa::Bmi2 => "BMI2",
            Isa::AvxVnni => "AVX_VNNI",
            Isa::Avx512 => "AVX512",
            Isa::Avx512Vbmi => "AVX512_VBMI",
            Isa::Avx512Vnni => "AVX512_VNNI",
            Isa::Avx512Bf16 => "AVX512_BF16",
            Isa::AmxTile => "AMX_TILE",
            Isa::AmxInt8 => "AMX_INT8",
        }
    }

    /// The extension llama.cpp reports under `name` in its CPU backend's
    /// features, if it is one of these.
    pub fn from_name(name: &str) -> Option<Isa> {
        ALL_ISAS.iter().copied().find(|isa| isa.name() == name)
    }

    /// What the operating system must have enabled for it.
    pub fn os_state(self) -> OsState {
        match self {
            Isa::Sse42 | Isa::Bmi2 => OsState::Base,
            Isa::Avx | Isa::F16c | Isa::Fma | Isa::Avx2 | Isa::AvxVnni => OsState::Ymm,
            Isa::Avx512 | Isa::Avx512Vbmi | Isa::Avx512Vnni | Isa::Avx512Bf16 => OsState::Zmm,
            Isa::AmxTile | Isa::AmxInt8 => OsState::Tile,
        }
    }

    /// Its weight in llama.cpp's variant score
    /// (`ggml_backend_cpu_x86_score` in `ggml-cpu/arch/x86/cpu-feats.cpp`),
    /// so that the best variant here is the one llama.cpp would pick.
    fn score(self) -> u32 {
        match self {
            Isa::Fma => 1,
            Isa::F16c => 1 << 1,
            Isa::Sse42 => 1 << 2,
            Isa::Bmi2 => 1 << 3,
            Isa::Avx => 1 << 4,
            Isa::Avx2 => 1 << 5,
            Isa::AvxVnni => 1 << 6,
            Isa::Avx512 => 1 << 7,
            Isa::Avx512Vbmi => 1 << 8,
            Isa::Avx512Bf16 => 1 << 9,
            Isa::Avx512Vnni => 1 << 10,
            Isa::AmxInt8 => 1 << 11,
            // llama.cpp's score does not count the tiles apart from AMX_INT8.
            Isa::AmxTile => 0,
        }
    }
}

impl std::fmt::Display for Isa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

const ALL_ISAS: [Isa; 13] = [
    Isa::Sse42,
    Isa::Avx,
    Isa::F16c,
    Isa::Fma,
    Isa::Avx2,
    Isa::Bmi2,
    Isa::AvxVnni,
    Isa::Avx512,
    Isa::Avx512Vbmi,
    Isa::Avx512Vnni,
    Isa::Avx512Bf16,
    Isa::AmxTile,
    Isa::AmxInt8,
];

/// One of llama.cpp's x86-64 CPU variants, named after the first CPU
/// generation that runs it (`x64` is the portable one: SSE2 only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CpuVariant {
    /// The x86-64 baseline: runs on every x86-64 CPU.
    X64,
    /// SSE4.2.
    Sse42,
    /// AVX.
    Sandybridge,
    /// AVX, F16C.
    Ivybridge,
    /// AVX, F16C, FMA.
    Piledriver,
    /// AVX2, FMA, F16C, BMI2 (x86-64-v3).
    Haswell,
    /// Haswell's and AVX-512.
    Skylakex,
    /// Skylake-X's and AVX-512 VBMI.
    Cannonlake,
    /// Skylake-X's and AVX-512 VNNI.
    Cascadelake,
    /// Skylake-X's and AVX-512 VBMI and VNNI.
    Icelake,
    /// Cascade Lake's and AVX-512 BF16.
    Cooperlake,
    /// Ice Lake's and AVX-512 BF16.
    Zen4,
    /// Haswell's and AVX-VNNI.
    Alderlake,
    /// Zen 4's and AMX.
    Sapphirerapids,
}

const HASWELL: &[Isa] = &[
    Isa::Sse42,
    Isa::Avx,
    Isa::F16c,
    Isa::Fma,
    Isa::Avx2,
    Isa::Bmi2,
];

impl CpuVariant {
    /// Every variant, from the most portable to the most demanding.
    pub const ALL: [CpuVariant; 14] = [
        CpuVariant::X64,
        CpuVariant::Sse42,
        CpuVariant::Sandybridge,
        CpuVariant::Ivybridge,
        CpuVariant::Piledriver,
        CpuVariant::Haswell,
        CpuVariant::Skylakex,
        CpuVariant::Cannonlake,
        CpuVariant::Cascadelake,
        CpuVariant::Icelake,
        CpuVariant::Cooperlake,
        CpuVariant::Zen4,
        CpuVariant::Alderlake,
        CpuVariant::Sapphirerapids,
    ];

    /// The name in file names (`libggml-cpu-<name>.so`), the config and
    /// `ZOO_CPU_VARIANT`.
    pub fn name(self) -> &'static str {
        match self {
            CpuVariant::X64 => "x64",
            CpuVariant::Sse42 => "sse42",
            CpuVariant::Sandybridge => "sandybridge",
            CpuVariant::Ivybridge => "ivybridge",
            CpuVariant::Piledriver => "piledriver",
            CpuVariant::Haswell => "haswell",
            CpuVariant::Skylakex => "skylakex",
            CpuVariant::Cannonlake => "cannonlake",
            CpuVariant::Cascadelake => "cascadelake",
            CpuVariant::Icelake => "icelake",
            CpuVariant::Cooperlake => "cooperlake",
            CpuVariant::Zen4 => "zen4",
            CpuVariant::Alderlake => "alderlake",
            CpuVariant::Sapphirerapids => "sapphirerapids",
        }
    }

    /// The variant of that name.
    pub fn from_name(name: &str) -> Option<CpuVariant> {
        Self::ALL.iter().copied().find(|v| v.name() == name)
    }

    /// Every name, comma-separated, for messages.
    pub fn names() -> String {
        Self::ALL.map(CpuVariant::name).join(", ")
    }

    /// The instruction sets it is compiled for.
    pub fn needs(self) -> Vec<Isa> {
        use Isa::*;
        let more: &[Isa] = match self {
            CpuVariant::X64 => return Vec::new(),
            CpuVariant::Sse42 => return vec![Sse42],
            CpuVariant::Sandybridge => return vec![Sse42, Avx],
            CpuVariant::Ivybridge => return vec![Sse42, Avx, F16c],
            CpuVariant::Piledriver => return vec![Sse42, Avx, F16c, Fma],
            CpuVariant::Haswell => &[],
            CpuVariant::Skylakex => &[Avx512],
            CpuVariant::Cannonlake => &[Avx512, Avx512Vbmi],
            CpuVariant::Cascadelake => &[Avx512, Avx512Vnni],
            CpuVariant::Icelake => &[Avx512, Avx512Vbmi, Avx512Vnni],
            CpuVariant::Cooperlake => &[Avx512, Avx512Vnni, Avx512Bf16],
            CpuVariant::Zen4 => &[Avx512, Avx512Vbmi, Avx512Vnni, Avx512Bf16],
            CpuVariant::Alderlake => &[AvxVnni],
            CpuVariant::Sapphirerapids => {
                &[Avx512, Avx512Vbmi, Avx512Vnni, Avx512Bf16, AmxTile, AmxInt8]
            }
        };
        HASWELL.iter().chain(more).copied().collect()
    }

    /// llama.cpp's score for it on a CPU that runs it: the higher, the
    /// faster llama.cpp expects it to be.
    pub fn score(self) -> u32 {
        1 + self.needs().iter().map(|isa| isa.score()).sum::<u32>()
    }

    /// The file llama.cpp builds for it on this platform.
    pub fn file_name(self) -> String {
        format!(
            "{}ggml-cpu-{}{}",
            std::env::consts::DLL_PREFIX,
            self.name(),
            std::env::consts::DLL_SUFFIX
        )
    }

    /// The best variant whose instruction sets are all in `compiled`: what
    /// a CPU backend built for those sets (a static build) amounts to.
    /// SSE4.2 is implied by any of the others (llama.cpp does not report it).
    pub fn matching(compiled: &[Isa]) -> CpuVariant {
        let has =
            |isa: &Isa| compiled.contains(isa) || (*isa == Isa::Sse42 && !compiled.is_empty());
        Self::ALL
            .iter()
            .copied()
            .filter(|v| v.needs().iter().all(has))
            .max_by_key(|v| v.score())
            .unwrap_or(CpuVariant::X64)
    }
}

impl std::fmt::Display for CpuVariant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_back() {
        for v in CpuVariant::ALL {
            assert_eq!(CpuVariant::from_name(v.name()), Some(v));
            let json = serde_json::to_string(&v).unwrap();
            assert_eq!(json, format!("\"{}\"", v.name()));
            assert_eq!(serde_json::from_str::<CpuVariant>(&json).unwrap(), v);
        }
        assert_eq!(CpuVariant::from_name("pentium"), None);
        for isa in ALL_ISAS {
            assert_eq!(Isa::from_name(isa.name()), Some(isa));
        }
    }

    #[test]
    fn scores_are_llama_cpps() {
        // ggml_backend_cpu_x86_score: 1, then one bit per instruction set.
        assert_eq!(CpuVariant::X64.score(), 1);
        assert_eq!(CpuVariant::Sse42.score(), 5);
        assert_eq!(CpuVariant::Haswell.score(), 64);
        assert_eq!(CpuVariant::Zen4.score(), 64 + 128 + 256 + 512 + 1024);
        assert_eq!(
            CpuVariant::Sapphirerapids.score(),
            CpuVariant::Zen4.score() + 2048
        );
        // Each variant scores above every variant whose sets it contains.
        for a in CpuVariant::ALL {
            for b in CpuVariant::ALL {
                let contains = b.needs().iter().all(|isa| a.needs().contains(isa));
                if a != b && contains {
                    assert!(a.score() > b.score(), "{a} vs {b}");
                }
            }
        }
    }

    #[test]
    fn a_static_build_matches_its_level() {
        use Isa::*;
        assert_eq!(CpuVariant::matching(&[]), CpuVariant::X64);
        assert_eq!(
            CpuVariant::matching(&[Avx, Avx2, F16c, Fma, Bmi2]),
            CpuVariant::Haswell
        );
        assert_eq!(
            CpuVariant::matching(&[Avx, Avx2, F16c, Fma, Bmi2, Avx512, Avx512Vnni]),
            CpuVariant::Cascadelake
        );
    }

    #[test]
    fn file_names() {
        if cfg!(target_os = "linux") {
            assert_eq!(CpuVariant::Zen4.file_name(), "libggml-cpu-zen4.so");
        }
    }
}
