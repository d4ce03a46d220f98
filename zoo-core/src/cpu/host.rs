//! What this machine lets a CPU variant use: the instruction sets the CPU
//! reports (CPUID) and the register state the operating system has enabled
//! (XCR0, and for AMX the kernel's permission).
//!
//! CPUID alone is not enough: a virtual machine may advertise AVX-512 or
//! AMX while its hypervisor or kernel has not enabled their state, and code
//! using them then faults (llama.cpp's own variant score checks CPUID only).

use super::variant::{CpuVariant, Isa, OsState};

/// XCR0 bits: SSE and the upper YMM halves.
const XCR0_YMM: u64 = 0b110;
/// XCR0 bits: the opmask registers and both ZMM parts, besides YMM.
const XCR0_ZMM: u64 = XCR0_YMM | 0b1110_0000;
/// XCR0 bits 17 and 18: the AMX tile configuration and data.
const XCR0_TILE: u64 = (1 << 17) | (1 << 18);

/// The instruction sets and register state this machine grants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Host {
    /// What CPUID reports.
    pub cpu: Vec<Isa>,
    /// XCR0, or `None` when the OS has not enabled XSAVE (then no AVX at all).
    pub xcr0: Option<u64>,
    /// Whether the kernel let this process use the AMX tile data (Linux
    /// asks for it with `arch_prctl(ARCH_REQ_XCOMP_PERM)`), and if not why.
    pub amx_permission: Result<(), String>,
}

impl Host {
    /// This machine, as this process sees it.
    pub fn detect() -> Host {
        detect::host()
    }

    /// Why `variant` must not run here, or `None` if it may.
    pub fn refusal(&self, variant: CpuVariant) -> Option<String> {
        self.refusal_of(&variant.needs())
    }

    /// Why code built for the instruction sets `needs` must not run here,
    /// or `None` if it may.
    pub fn refusal_of(&self, needs: &[Isa]) -> Option<String> {
        let lacking: Vec<&str> = needs
            .iter()
            .filter(|isa| !self.cpu.contains(isa))
            .map(|isa| isa.name())
            .collect();
        if !lacking.is_empty() {
            return Some(format!("this CPU lacks {}", lacking.join(", ")));
        }
        let states = [OsState::Ymm, OsState::Zmm, OsState::Tile];
        let needed = states
            .into_iter()
            .filter(|state| needs.iter().any(|isa| isa.os_state() == *state));
        for state in needed {
            if let Some(reason) = self.state_refusal(state) {
                return Some(reason);
            }
        }
        None
    }

    fn state_refusal(&self, state: OsState) -> Option<String> {
        let (bits, what) = match state {
            OsState::Base => return None,
            OsState::Ymm => (XCR0_YMM, "AVX (YMM) register state"),
            OsState::Zmm => (XCR0_ZMM, "AVX-512 (opmask and ZMM) register state"),
            OsState::Tile => (XCR0_TILE, "AMX tile state"),
        };
        let Some(xcr0) = self.xcr0 else {
            return Some(format!(
                "the operating system has not enabled XSAVE, so no {what}"
            ));
        };
        if xcr0 & bits != bits {
            return Some(format!(
                "the operating system has not enabled the {what} (XCR0 = {xcr0:#x})"
            ));
        }
        if state == OsState::Tile {
            if let Err(reason) = &self.amx_permission {
                return Some(format!("the kernel did not grant AMX tile data: {reason}"));
            }
        }
        None
    }

    /// The variants among `carried` that may run here, best first.
    pub fn usable(&self, carried: &[CpuVariant]) -> Vec<CpuVariant> {
        let mut usable: Vec<CpuVariant> = carried
            .iter()
            .copied()
            .filter(|v| self.refusal(*v).is_none())
            .collect();
        usable.sort_by_key(|v| std::cmp::Reverse(v.score()));
        usable
    }
}

#[cfg(target_arch = "x86_64")]
mod detect {
    use std::arch::x86_64::{__cpuid_count, _xgetbv, CpuidResult};

    use super::{Host, Isa};

    fn bit(reg: u32, n: u32) -> bool {
        reg & (1 << n) != 0
    }

    pub(super) fn host() -> Host {
        let max_leaf = __cpuid_count(0, 0).eax;
        let leaf1 = __cpuid_count(1, 0);
        let none = CpuidResult {
            eax: 0,
            ebx: 0,
            ecx: 0,
            edx: 0,
        };
        let leaf7 = if max_leaf >= 7 {
            __cpuid_count(7, 0)
        } else {
            none
        };
        let leaf7_1 = if max_leaf >= 7 && leaf7.eax >= 1 {
            __cpuid_count(7, 1)
        } else {
            none
        };
        let avx512 = [16, 17, 28, 30, 31].iter().all(|&n| bit(leaf7.ebx, n));
        let found = [
            (Isa::Sse42, bit(leaf1.ecx, 20)),
            (Isa::Fma, bit(leaf1.ecx, 12)),
            (Isa::Avx, bit(leaf1.ecx, 28)),
            (Isa::F16c, bit(leaf1.ecx, 29)),
            (Isa::Avx2, bit(leaf7.ebx, 5)),
            (Isa::Bmi2, bit(leaf7.ebx, 8)),
            (Isa::Avx512, avx512),
            (Isa::Avx512Vbmi, bit(leaf7.ecx, 1)),
            (Isa::Avx512Vnni, bit(leaf7.ecx, 11)),
            (Isa::AmxTile, bit(leaf7.edx, 24)),
            (Isa::AmxInt8, bit(leaf7.edx, 25)),
            (Isa::AvxVnni, bit(leaf7_1.eax, 4)),
            (Isa::Avx512Bf16, bit(leaf7_1.eax, 5)),
        ];
        let cpu = found
            .into_iter()
            .filter_map(|(isa, has)| has.then_some(isa))
            .collect::<Vec<_>>();
        // CPUID.1:ECX.OSXSAVE says the OS enabled XSAVE, and with it XGETBV.
        let xcr0 = bit(leaf1.ecx, 27).then(|| {
            // SAFETY: OSXSAVE is set, so XGETBV exists and XCR0 is readable.
            unsafe { read_xcr0() }
        });
        let amx_permission = if cpu.contains(&Isa::AmxTile) {
            request_amx()
        } else {
            Err("the CPU has no AMX".into())
        };
        Host {
            cpu,
            xcr0,
            amx_permission,
        }
    }

    /// # Safety
    /// Only where CPUID reports OSXSAVE.
    #[target_feature(enable = "xsave")]
    unsafe fn read_xcr0() -> u64 {
        // SAFETY: the caller checked OSXSAVE; XCR0 is register 0.
        unsafe { _xgetbv(0) }
    }

    /// Asks Linux to let this process use the AMX tile data (Linux 5.16 and
    /// later keep it off until a process asks; llama.cpp asks the same way
    /// before it uses AMX, so asking first changes nothing for it).
    #[cfg(target_os = "linux")]
    fn request_amx() -> Result<(), String> {
        const ARCH_REQ_XCOMP_PERM: libc::c_long = 0x1023;
        const XFEATURE_XTILEDATA: libc::c_long = 18;
        // SAFETY: arch_prctl with ARCH_REQ_XCOMP_PERM only reads its two
        // integer arguments and changes this process's permissions.
        let status = unsafe {
            libc::syscall(
                libc::SYS_arch_prctl,
                ARCH_REQ_XCOMP_PERM,
                XFEATURE_XTILEDATA,
            )
        };
        if status == 0 {
            Ok(())
        } else {
            Err(format!(
                "arch_prctl(ARCH_REQ_XCOMP_PERM) failed: {}",
                std::io::Error::last_os_error()
            ))
        }
    }

    #[cfg(not(target_os = "linux"))]
    fn request_amx() -> Result<(), String> {
        Err("AMX is only used on Linux".into())
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod detect {
    use super::Host;

    pub(super) fn host() -> Host {
        Host {
            cpu: Vec::new(),
            xcr0: None,
            amx_permission: Err("not an x86-64 CPU".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Isa::*;

    const ZEN4_CPU: &[Isa] = &[
        Sse42, Avx, F16c, Fma, Avx2, Bmi2, Avx512, Avx512Vbmi, Avx512Vnni, Avx512Bf16,
    ];

    fn host(cpu: &[Isa], xcr0: Option<u64>, amx: bool) -> Host {
        Host {
            cpu: cpu.to_vec(),
            xcr0,
            amx_permission: if amx { Ok(()) } else { Err("EINVAL".into()) },
        }
    }

    #[test]
    fn a_full_grant_allows_what_the_cpu_has() {
        let zen4 = host(ZEN4_CPU, Some(0xe7), false);
        let usable = zen4.usable(&CpuVariant::ALL);
        assert_eq!(usable[0], CpuVariant::Zen4);
        assert_eq!(*usable.last().unwrap(), CpuVariant::X64);
        assert!(!usable.contains(&CpuVariant::Alderlake));
        assert!(!usable.contains(&CpuVariant::Sapphirerapids));
        assert_eq!(
            zen4.refusal(CpuVariant::Alderlake).unwrap(),
            "this CPU lacks AVX_VNNI"
        );
        assert_eq!(
            zen4.refusal(CpuVariant::Sapphirerapids).unwrap(),
            "this CPU lacks AMX_TILE, AMX_INT8"
        );
    }

    #[test]
    fn avx512_the_os_did_not_enable_is_refused() {
        // A hypervisor that passes AVX-512 through CPUID but leaves the
        // ZMM state off (XCR0 = x87 | SSE | AVX).
        let vm = host(ZEN4_CPU, Some(0x7), false);
        assert_eq!(vm.usable(&CpuVariant::ALL)[0], CpuVariant::Haswell);
        let reason = vm.refusal(CpuVariant::Skylakex).unwrap();
        assert!(reason.contains("has not enabled the AVX-512"), "{reason}");
        assert!(reason.contains("XCR0 = 0x7"), "{reason}");
    }

    #[test]
    fn amx_needs_xcr0_and_the_kernels_permission() {
        let mut cpu = ZEN4_CPU.to_vec();
        cpu.extend([AmxTile, AmxInt8]);
        let tiles = (1 << 17) | (1 << 18);
        let granted = host(&cpu, Some(tiles | 0xe7), true);
        assert_eq!(
            granted.usable(&CpuVariant::ALL)[0],
            CpuVariant::Sapphirerapids
        );
        // The Xeon VM case: AMX in CPUID, tile state not enabled.
        let no_tiles = host(&cpu, Some(0xe7), true);
        assert_eq!(no_tiles.usable(&CpuVariant::ALL)[0], CpuVariant::Zen4);
        assert!(no_tiles
            .refusal(CpuVariant::Sapphirerapids)
            .unwrap()
            .contains("AMX tile state"));
        // Tile state enabled, permission refused (a kernel before 5.16).
        let refused = host(&cpu, Some(tiles | 0xe7), false);
        let reason = refused.refusal(CpuVariant::Sapphirerapids).unwrap();
        assert!(reason.contains("did not grant AMX"), "{reason}");
    }

    #[test]
    fn without_xsave_only_sse_variants_run() {
        let old = host(&[Sse42, Avx, Avx2], None, false);
        assert_eq!(
            old.usable(&CpuVariant::ALL),
            vec![CpuVariant::Sse42, CpuVariant::X64]
        );
        assert!(old
            .refusal(CpuVariant::Sandybridge)
            .unwrap()
            .contains("not enabled XSAVE"));
    }

    #[test]
    fn this_machine_runs_the_portable_variant() {
        let here = Host::detect();
        assert_eq!(here.refusal(CpuVariant::X64), None);
        if cfg!(target_arch = "x86_64") {
            // The machines the tests run on (CI's included) have SSE4.2.
            assert!(here.cpu.contains(&Sse42), "{here:?}");
        }
    }
}
