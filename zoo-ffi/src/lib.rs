//! `libzoo`: the C ABI of Zoo-Keeper, generated into `include/zoo.h` by
//! cbindgen.
//!
//! Conventions (after rustls-ffi and wasmtime's C API):
//! - Every fallible function returns a `zoo_status` and writes its outputs
//!   only on success; on failure it writes a message to the optional
//!   `char **out_error`, which the caller frees with `zoo_string_free`.
//! - Handles are opaque and come in create/free pairs.
//! - Every callback takes `void *user_data`; every registration that stores
//!   a `user_data` also takes an optional `free_user_data`, which runs exactly
//!   once, also when the registration fails.
//! - Text crosses as UTF-8. Tokens and JSON passed to callbacks come as a
//!   pointer plus a length and are not NUL-terminated.
//! - Nothing unwinds across the boundary: a panic becomes `ZOO_INTERNAL`.
#![allow(non_camel_case_types)]
// Every export checks its pointers itself and documents its contract in the
// header; the lint would have us mark them all `unsafe fn` for C callers, to
// whom Rust's `unsafe` means nothing.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

mod agent;
mod backend;
mod boundary;
mod builtin;
mod chat;
mod hooks;
mod json;
mod logs;
mod mcp;
mod model;
mod session;
mod status;
mod steering;
mod strings;
mod tool;

pub use agent::*;
pub use backend::*;
pub use builtin::*;
pub use chat::*;
pub use hooks::*;
pub use json::*;
pub use logs::*;
pub use mcp::*;
pub use model::*;
pub use session::*;
pub use status::*;
pub use steering::*;
pub use strings::*;
pub use tool::*;
