//! With the `dynamic-backends` feature, llama.cpp is a set of shared
//! libraries (libllama, libggml, libggml-base) plus its CPU backend in every
//! variant (libggml-cpu-<variant>.so), and the engine loads them from a
//! `zoo-backends` folder next to the library or program it is part of
//! (src/backend/llama/cpu_backend.rs). The packages are laid out that way;
//! this script lays out the build tree the same way, in target/<profile>/,
//! its deps/ (test programs) and examples/, so that what runs from the
//! build tree finds its files exactly as an installed library does.
//! zoo-core's own tests, examples and benchmarks get the RUNPATH
//! `$ORIGIN/zoo-backends` (the crates that link zoo-core into a library or
//! program set it in their own build scripts), and the crates that depend
//! on zoo-core read the folder's path from `DEP_ZOO_CORE_BACKENDS_FOLDER`.
//!
//! The folder holds each shared library once, under the name the loader
//! looks for (its SONAME, `libllama.so.0`), as a plain file: packages such
//! as wheels cannot hold symbolic links. It also holds the OpenMP runtime
//! the CPU variants use (libgomp.so.1, the compiler's, under the GCC
//! runtime library exception), which machines without a compiler may lack;
//! the variants find it there through their RUNPATH `$ORIGIN`
//! (.cargo/config.toml).
//!
//! Without the feature (the static libzoo.a), llama.cpp's CPU backend is
//! built in, for the instruction sets the build asks for: the target CPU's
//! (`-C target-cpu`, which llama-cpp-sys-2 passes on as `-march`) and the
//! `GGML_<SET>=ON` variables llama-cpp-sys-2 passes to CMake. This script
//! records them as `ZOO_BUILT_IN_CPU`, so that the engine can refuse a CPU
//! that lacks them before llama.cpp runs any of that code (its CPU backend
//! starts using them as soon as it registers).

use std::env;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

const FOLDER: &str = "zoo-backends";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if env::var_os("CARGO_FEATURE_DYNAMIC_BACKENDS").is_none() {
        println!("cargo:rustc-env=ZOO_BUILT_IN_CPU={}", built_in_cpu());
        return;
    }
    // llama-cpp-sys-2's `cargo:backends_dir` (OUT_DIR/backends); its
    // shared libraries are installed beside it, in OUT_DIR/lib or lib64.
    println!("cargo:rerun-if-env-changed=DEP_LLAMA_BACKENDS_DIR");
    let backends = PathBuf::from(
        env::var("DEP_LLAMA_BACKENDS_DIR").expect("llama-cpp-sys-2 reports its backends folder"),
    );
    let install = backends.parent().expect("the backends folder has a parent");
    let mut files = loadable(&backends);
    println!("cargo:rerun-if-changed={}", backends.display());
    for lib in ["lib", "lib64"] {
        let dir = install.join(lib);
        if dir.is_dir() {
            println!("cargo:rerun-if-changed={}", dir.display());
            files.extend(loadable(&dir));
        }
    }
    assert!(
        files.iter().any(|(name, _)| name.contains("ggml-cpu")),
        "no llama.cpp CPU backend in {}",
        backends.display()
    );
    if let Some(openmp) = openmp_runtime(&files) {
        files.push(openmp);
    }
    let left_out = tile_config_dropped().then_some(AMX_VARIANT);
    if let Some(name) = left_out {
        println!(
            "cargo:warning=llama.cpp's `sapphirerapids` CPU variant is left out: this C++ \
             compiler drops the stores that fill an AMX tile configuration before \
             `_tile_loadconfig`, so its AMX kernels would stop the process with SIGILL on \
             CPUs with AMX (GCC 12 does); the best variant below it runs there instead"
        );
        files.retain(|(file, _)| file != name);
    }
    // For the test that every variant is carried but these.
    println!(
        "cargo:rustc-env=ZOO_LEFT_OUT_CPU_VARIANTS={}",
        left_out.map_or("", |_| "sapphirerapids")
    );
    let profile_dir = profile_dir();
    for dir in [
        profile_dir.clone(),
        profile_dir.join("deps"),
        profile_dir.join("examples"),
    ] {
        clear_dangling_links(&dir);
        let folder = dir.join(FOLDER);
        if let Some(name) = left_out {
            let _ = fs::remove_file(folder.join(name));
        }
        if let Err(e) = fill(&folder, &files, install) {
            panic!("cannot lay out {}: {e}", folder.display());
        }
    }
    if env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,$ORIGIN/{FOLDER}");
    }
    println!("cargo:folder={}", profile_dir.join(FOLDER).display());
}

/// What the loader may look for in `dir`, as (name, file): unversioned
/// libraries and modules (`libggml-cpu-zen4.so`), and each SONAME link
/// (`libllama.so.0`, one number after `.so`) with the file it leads to.
/// The development links (`libllama.so`) and the fully versioned names are
/// left out: nothing loads them by those names.
fn loadable(dir: &Path) -> Vec<(String, PathBuf)> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for path in entries.flatten().map(|e| e.path()) {
        let name = path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let is_link = fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink());
        let soname_link = name
            .split_once(".so.")
            .is_some_and(|(_, version)| version.chars().all(|c| c.is_ascii_digit()));
        let unversioned = name.ends_with(".so") || name.ends_with(".dylib");
        if (unversioned && !is_link) || (soname_link && is_link) {
            let file = fs::canonicalize(&path).unwrap_or(path);
            found.push((name, file));
        }
    }
    found.sort();
    found
}

/// The OpenMP runtime, when one of `files` needs it: the file the C
/// compiler links (`cc -print-file-name`), under its SONAME.
fn openmp_runtime(files: &[(String, PathBuf)]) -> Option<(String, PathBuf)> {
    const SONAME: &str = "libgomp.so.1";
    let needle = format!("{SONAME}\0");
    let needed = files.iter().any(|(_, file)| {
        fs::read(file)
            .is_ok_and(|bytes| bytes.windows(needle.len()).any(|w| w == needle.as_bytes()))
    });
    if !needed {
        return None;
    }
    let cc = env::var("CC").unwrap_or_else(|_| "cc".into());
    let out = std::process::Command::new(cc)
        .arg(format!("-print-file-name={SONAME}"))
        .output()
        .ok()?;
    let path = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    let path = fs::canonicalize(&path)
        .ok()
        .filter(|p| p.is_absolute() && p.is_file());
    if path.is_none() {
        println!(
            "cargo:warning=the CPU variants need {SONAME}, which the C compiler does not know"
        );
    }
    path.map(|p| (SONAME.to_string(), p))
}

/// The file of llama.cpp's one CPU variant with AMX kernels.
const AMX_VARIANT: &str = "libggml-cpu-sapphirerapids.so";

/// A tile configuration filled from two globals, then loaded, as llama.cpp's
/// AMX kernels do (`ggml_tile_config_init`). A compiler that keeps the
/// stores reads both globals; GCC 12 treats `ldtilecfg` as reading the
/// palette byte alone, drops the rest as dead, and loads a configuration
/// with no tile in it, so the first tile load faults.
const TILE_CONFIG_PROBE: &str = r#"
#include <immintrin.h>
extern "C" unsigned char zoo_probe_rows;
extern "C" unsigned short zoo_probe_colsb;
struct tile_config { unsigned char palette, start_row, reserved[14]; unsigned short colsb[16]; unsigned char rows[16]; };
extern "C" void zoo_probe(void) {
    alignas(64) tile_config tc = {};
    tc.palette = 1;
    tc.rows[0] = zoo_probe_rows;
    tc.colsb[0] = zoo_probe_colsb;
    _tile_loadconfig(&tc);
}
"#;

/// Whether the C++ compiler that built llama.cpp (the one the `cc` and
/// `cmake` crates pick: `CXX_<target>`, `TARGET_CXX`, `CXX`, else `c++`)
/// drops the stores before `_tile_loadconfig`: [`TILE_CONFIG_PROBE`]
/// compiled to assembly that never reads the globals it stores. False
/// when the probe cannot be compiled (no AMX support: nor was the variant).
fn tile_config_dropped() -> bool {
    let target = env::var("TARGET").unwrap_or_default();
    let keys = [
        format!("CXX_{target}"),
        format!("CXX_{}", target.replace('-', "_")),
        "TARGET_CXX".into(),
        "CXX".into(),
    ];
    for key in &keys {
        println!("cargo:rerun-if-env-changed={key}");
    }
    let cxx = keys
        .iter()
        .find_map(|key| env::var(key).ok())
        .unwrap_or_else(|| "c++".into());
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let source = out.join("tile_config_probe.cpp");
    if fs::write(&source, TILE_CONFIG_PROBE).is_err() {
        return false;
    }
    let mut words = cxx.split_whitespace();
    let Some(program) = words.next() else {
        return false;
    };
    let assembly = std::process::Command::new(program)
        .args(words)
        .args(["-O2", "-mamx-tile", "-S", "-o", "-"])
        .arg(&source)
        .output();
    match assembly {
        Ok(output) if output.status.success() => {
            let text = String::from_utf8_lossy(&output.stdout);
            !(text.contains("zoo_probe_rows") && text.contains("zoo_probe_colsb"))
        }
        _ => false,
    }
}

/// Removes the development links (`libllama.so -> libllama.so.0`) that
/// llama-cpp-sys-2 hard-links into `dir` without what they lead to. Left
/// dangling, they break its next build-script run (a feature or flag that
/// changes its build folder): it sees no file there (`exists` follows the
/// link), links again and panics on "File exists". Nothing here loads
/// them: the loader looks in zoo-backends/ by SONAME.
fn clear_dangling_links(dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for path in entries.flatten().map(|e| e.path()) {
        let is_link = fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink());
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        if is_link && name.ends_with(".so") && !path.exists() {
            let _ = fs::remove_file(&path);
        }
    }
}

/// target/<profile>: OUT_DIR is target/<profile>/build/zoo-core-<hash>/out.
fn profile_dir() -> PathBuf {
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    out.ancestors()
        .nth(3)
        .expect("OUT_DIR is target/<profile>/build/<crate>/out")
        .to_path_buf()
}

/// Puts `files` into `folder` under their names, each replaced in one
/// rename: hard links to llama.cpp's build (a copy across file systems),
/// copies of anything else (the system's OpenMP runtime).
fn fill(folder: &Path, files: &[(String, PathBuf)], build: &Path) -> io::Result<()> {
    fs::create_dir_all(folder)?;
    for (name, file) in files {
        let staged = folder.join(format!(".{name}.new"));
        let _ = fs::remove_file(&staged);
        if !file.starts_with(build) || fs::hard_link(file, &staged).is_err() {
            fs::copy(file, &staged)?;
        }
        fs::rename(&staged, folder.join(name))?;
    }
    Ok(())
}

/// The instruction sets of a built-in CPU backend, as llama.cpp names them
/// (`AVX2,FMA,...`), or `native` when it is built for the build machine.
fn built_in_cpu() -> String {
    println!("cargo:rerun-if-env-changed=CARGO_ENCODED_RUSTFLAGS");
    let rustflags = env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    let flag_on = |name: &str| {
        println!("cargo:rerun-if-env-changed={name}");
        env::var(name).is_ok_and(|v| matches!(v.to_ascii_uppercase().as_str(), "ON" | "1" | "TRUE"))
    };
    if rustflags
        .split('\x1f')
        .any(|f| f.ends_with("target-cpu=native"))
        || flag_on("GGML_NATIVE")
    {
        return "native".into();
    }
    let target = env::var("CARGO_CFG_TARGET_FEATURE").unwrap_or_default();
    let target: Vec<&str> = target.split(',').collect();
    let has = |f: &str| target.contains(&f);
    let sets = [
        ("SSE42", has("sse4.2")),
        ("AVX", has("avx")),
        ("F16C", has("f16c")),
        ("FMA", has("fma")),
        ("AVX2", has("avx2")),
        ("BMI2", has("bmi2")),
        ("AVX_VNNI", has("avxvnni")),
        (
            "AVX512",
            ["avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw"]
                .iter()
                .all(|f| has(f)),
        ),
        ("AVX512_VBMI", has("avx512vbmi")),
        ("AVX512_VNNI", has("avx512vnni")),
        ("AVX512_BF16", has("avx512bf16")),
        ("AMX_TILE", has("amx-tile")),
        ("AMX_INT8", has("amx-int8")),
    ];
    sets.iter()
        .filter(|(name, by_target)| *by_target || flag_on(&format!("GGML_{name}")))
        .map(|(name, _)| *name)
        .collect::<Vec<_>>()
        .join(",")
}
