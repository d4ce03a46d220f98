//! llama.cpp's shared libraries and CPU variants travel in a `zoo-backends`
//! folder beside the module (zoo-core/src/backend/llama/cpu_backend.rs):
//! the module gets the RUNPATH `$ORIGIN/zoo-backends`, and the folder is
//! copied from the build (zoo-core's build script) into the package source,
//! python/zoo_keeper/zoo-backends, which maturin puts into the wheel beside
//! `_native` (it has no step of its own to run between building the module
//! and packing the wheel). The copy is not tracked by git.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-rpath,$ORIGIN/zoo-backends");
    }
    println!("cargo:rerun-if-env-changed=DEP_ZOO_CORE_BACKENDS_FOLDER");
    let Some(from) = env::var_os("DEP_ZOO_CORE_BACKENDS_FOLDER").map(PathBuf::from) else {
        return;
    };
    println!("cargo:rerun-if-changed={}", from.display());
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let to = manifest.join("../../python/zoo_keeper/zoo-backends");
    if let Err(e) = mirror(&from, &to) {
        panic!("cannot copy {} to {}: {e}", from.display(), to.display());
    }
}

/// Makes `to` hold exactly the files of `from` (hard links, or copies
/// across file systems).
fn mirror(from: &Path, to: &Path) -> std::io::Result<()> {
    fs::create_dir_all(to)?;
    let mut wanted = Vec::new();
    for entry in fs::read_dir(from)? {
        let entry = entry?;
        let name = entry.file_name();
        if name.to_string_lossy().starts_with('.') {
            continue;
        }
        let staged = to.join(format!(".{}.new", name.to_string_lossy()));
        let _ = fs::remove_file(&staged);
        if fs::hard_link(entry.path(), &staged).is_err() {
            fs::copy(entry.path(), &staged)?;
        }
        fs::rename(&staged, to.join(&name))?;
        wanted.push(name);
    }
    for entry in fs::read_dir(to)? {
        let entry = entry?;
        if !wanted.contains(&entry.file_name()) {
            fs::remove_file(entry.path())?;
        }
    }
    Ok(())
}
