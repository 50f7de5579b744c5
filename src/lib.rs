//! rloxsc: a hardened, runc-compatible OCI container runtime.
//!
//! The crate splits in four layers:
//! - policy ([`policy`], [`policy_file`], [`harden`]): what the hardened spec must be, as a pure,
//!   unit-tested transformation of the caller's spec, checked against [`harden::invariants`];
//! - the launch path ([`launch`]): the one way `create`, `run` and `exec` start container processes
//!   through libcontainer, with the container's effective policy;
//! - mechanics ([`executor`], [`seccomp`], [`verify`], [`bundle`], [`facts`], [`cgroups`],
//!   [`exeseal`], [`netns`], [`tty`]): the in-container executor and its seccomp filter, the
//!   verification from outside (observe, then judge), the state rloxsc keeps;
//! - the CLI ([`cli`]) and the verbs ([`commands`]): runc's flags, each verb a thin module.

pub mod bundle;
pub mod cgroups;
pub mod charged;
pub mod cli;
pub mod commands;
pub mod container;
pub mod context;
pub mod custodian;
#[cfg(test)]
mod docs_check;
pub mod duration;
pub mod errors;
pub mod executor;
pub mod exeseal;
pub mod facts;
pub mod fault;
pub mod footprint;
pub mod fsutil;
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing;
pub mod harden;
pub mod idmap;
pub mod kernel_features;
pub mod launch;
pub mod logging;
pub mod mountapi;
pub mod mountinfo;
pub mod netns;
pub mod policy;
pub mod policy_file;
pub mod record;
pub mod rootfs;
pub mod seccomp;
pub mod subids;
pub mod trust;
pub mod tty;
pub mod userns;
pub mod verify;
pub mod views;
pub mod vmchild;
