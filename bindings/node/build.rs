//! Sets the linker flags a Node addon needs (undefined N-API symbols are
//! resolved by the node binary at load time), and the RUNPATH
//! `$ORIGIN/zoo-backends`: llama.cpp's shared libraries travel in that
//! folder beside the addon (zoo-core/src/backend/llama/cpu_backend.rs).

fn main() {
    napi_build::setup();
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-rpath,$ORIGIN/zoo-backends");
    }
}
