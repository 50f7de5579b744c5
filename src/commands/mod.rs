//! The runc-compatible verbs, one module each (thin: the launch path is [`crate::launch`]); [`Context`]
//! carries what they share.

pub mod create;
pub mod delete;
pub mod doctor;
pub mod events;
pub mod exec;
pub mod features;
pub mod kill;
pub mod list;
pub mod pause;
pub mod policy;
pub mod ps;
pub mod run;
pub mod spec;
pub mod start;
pub mod state;
pub mod update;

pub use crate::context::Context;
