//! The fuzz targets' bodies live in the rloxsc crate ([`rloxsc::fuzzing`]), next to the hardening
//! invariants they check ([`rloxsc::harden::invariants`]), so this crate keeps no copy of rloxsc's
//! data and `cargo test` in the main crate replays the committed corpus through the same checks.

pub use rloxsc::fuzzing::*;
