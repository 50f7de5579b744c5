//! rloxsc: a hardened, runc-compatible OCI container runtime.
//!
//! The crate splits in three layers:
//! - policy ([`policy`], [`harden`]): what the hardened spec must be, as a pure, unit-tested
//!   transformation of the caller's spec;
//! - mechanics ([`commands`], [`executor`], [`seccomp`], [`verify`], [`bundle`], [`facts`]): driving
//!   libcontainer, installing the seccomp filter, and verifying from outside that containment applied;
//! - the CLI ([`cli`]): runc's flags and verbs.

pub mod bundle;
pub mod cli;
pub mod commands;
pub mod container;
pub mod executor;
pub mod exeseal;
pub mod facts;
pub mod fault;
pub mod harden;
pub mod logging;
pub mod netns;
pub mod policy;
pub mod policy_file;
pub mod record;
pub mod seccomp;
pub mod tty;
pub mod verify;
