//! rloxsc's own seccomp filter: the allowlist (data), its compilation to BPF in the runtime process
//! (before any container process exists) and its installation inside the container right before the
//! payload runs, verified there.

pub mod allowlist;
pub mod compile;
pub mod install;

pub use compile::{compile_filter, CompiledFilter};
pub use install::install_and_verify;
