//! rloxsc: a hardened, runc-compatible OCI container runtime.
//!
//! The modules sit in the six layers docs/structure.md lists (foundations, the pure policy,
//! mechanics, the launch path, the verbs, the command line), which `scripts/imports.py` holds the
//! code to. Containment areas own their policy keys, their step and their outside check (for
//! example [`network`]); [`harden`] is the pure transformation of the caller's spec, [`launch`] the
//! one way `create`, `run` and `exec` start container processes, [`verify`] the check from outside,
//! [`commands`] one module per runc verb.

pub mod bundle;
pub mod cgroups;
pub mod cli;
pub mod commands;
pub mod container;
pub mod context;
pub mod custodian;
#[cfg(test)]
mod docs_check;
pub mod duration;
pub mod egress_rule;
pub mod errors;
pub mod executor;
pub mod exeseal;
pub mod facts;
pub mod fault;
pub mod footprint;
pub mod fstree;
pub mod fsutil;
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing;
pub mod harden;
pub mod idmap;
pub mod kernel_features;
pub mod launch;
pub mod limits;
pub mod logging;
pub mod mountapi;
pub mod mountinfo;
pub mod network;
pub mod paths;
pub mod policy;
pub mod policy_file;
pub mod record;
pub mod rootfs;
pub mod rootless;
pub mod seccomp;
pub mod size;
pub mod specmount;
pub mod subids;
pub mod trust;
pub mod tty;
pub mod userns;
pub mod verify;
pub mod views;
pub mod vmchild;
