//! WASI tools: WebAssembly modules run as commands over the session filesystem.
//!
//! - [`manifest`]: `wasm/manifest.toml` (embedded), validated, and what a `--wasm-dir`
//!   holds of it.

pub mod manifest;
