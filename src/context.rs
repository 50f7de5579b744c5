//! What every verb works with: where state lives, the policy in force, and (test builds only)
//! faults. Defined below the verbs and the launch path, which both take it.

use crate::bundle::Layout;
use crate::fault::Faults;
use crate::policy::Policy;

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
