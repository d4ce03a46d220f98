//! Gives `libzoo.so` a SONAME, so that programs record the ABI they were
//! linked against (`libzoo.so.0.1` for 0.1.x: before 1.0 a minor release
//! may break the ABI; from 1.0 on, `libzoo.so.MAJOR`). `scripts/install-c`
//! installs the file as `libzoo.so.X.Y.Z` with the SONAME and `libzoo.so`
//! as links to it, as distributions expect. Also the RUNPATH that finds
//! llama.cpp's shared libraries (below).

fn main() {
    let target_os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if matches!(
        target_os.as_str(),
        "linux" | "freebsd" | "netbsd" | "openbsd" | "android"
    ) {
        let major = env!("CARGO_PKG_VERSION_MAJOR");
        let minor = env!("CARGO_PKG_VERSION_MINOR");
        let soname = if major == "0" {
            format!("libzoo.so.0.{minor}")
        } else {
            format!("libzoo.so.{major}")
        };
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,{soname}");
    }
    // llama.cpp's shared libraries travel in `zoo-backends` beside libzoo.so
    // (zoo-core/src/backend/llama/cpu_backend.rs); libzoo.a has them built in.
    let dynamic = std::env::var_os("CARGO_FEATURE_DYNAMIC_BACKENDS").is_some();
    if dynamic && target_os == "linux" {
        println!("cargo:rustc-link-arg=-Wl,-rpath,$ORIGIN/zoo-backends");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
