//! rloxsc's own seccomp filter: the allowlist (data), its compilation to BPF in the runtime process
//! (before any container process exists) and its installation inside the container right before the
//! payload runs, verified there.

pub mod allowlist;
pub mod caller;
pub mod compile;
pub mod install;

pub use compile::{compile_filter, compile_filter_with, CompiledFilter, PROGRAMS};

/// rloxsc's filter as compiled by `build.rs` at build time.
static PRECOMPILED_BPF: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/rloxsc-seccomp.bpf"));
static PRECOMPILED_GUARD: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/rloxsc-seccomp-guard.bpf"));
static PRECOMPILED_UNKNOWN: &str =
    include_str!(concat!(env!("OUT_DIR"), "/rloxsc-seccomp-unknown.txt"));

/// The filter for a container under `policy`: the build-time program, or, when the policy allows extra
/// syscalls, a fresh compilation with them (logged at every use).
pub fn for_policy(policy: &crate::policy::Policy) -> anyhow::Result<CompiledFilter> {
    if policy.extra_syscalls.is_empty() {
        return Ok(precompiled());
    }
    tracing::info!(
        "seccomp: the policy allows extra syscalls {} (policy key {})",
        policy.extra_syscalls.join(", "),
        crate::policy::keys::EXTRA_SYSCALLS
    );
    compile_filter_with(&policy.extra_syscalls)
}

/// The filter compiled at build time (no libseccomp work at run time).
pub fn precompiled() -> CompiledFilter {
    CompiledFilter {
        bpf: PRECOMPILED_BPF.to_vec(),
        guard: PRECOMPILED_GUARD.to_vec(),
        unknown: PRECOMPILED_UNKNOWN
            .split(',')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect(),
    }
}
pub use install::install_and_verify;
