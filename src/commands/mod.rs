//! The runc-compatible verbs, one module each (thin: the launch path is [`crate::launch`]); [`Context`]
//! carries what they share.

use crate::bundle::Layout;
use crate::fault::Faults;
use crate::policy::Policy;

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

/// What every verb needs: where state lives, the policy in force, and (test builds only) faults.
#[derive(Debug, Clone)]
pub struct Context {
    /// The state root layout.
    pub layout: Layout,
    /// The hardening policy.
    pub policy: Policy,
    /// Injected faults (always empty in production builds).
    pub faults: Faults,
}
