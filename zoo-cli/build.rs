//! With the `dynamic-backends` feature, the RUNPATH `$ORIGIN/zoo-backends`:
//! llama.cpp's shared libraries are in that folder beside the program
//! (zoo-core/src/backend/llama/cpu_backend.rs).

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let dynamic = std::env::var_os("CARGO_FEATURE_DYNAMIC_BACKENDS").is_some();
    if dynamic && std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,$ORIGIN/zoo-backends");
    }
}
