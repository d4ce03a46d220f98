//! Sets the linker flags a Node addon needs (undefined N-API symbols are
//! resolved by the node binary at load time).

fn main() {
    napi_build::setup();
}
