//! When a create must be over: its deadline (the policy's create limit, or the run's `--timeout`
//! when that comes first), the custodian that holds the create to it (`start_custodian`, the last
//! step of phase 2, **footprint**), and the error of a create it overtook ([`CreateTimedOut`]).

use std::time::{Duration, Instant};

use anyhow::Result;

use super::input::CreateOptions;
use crate::context::Context;
use crate::policy::keys;

/// The error of a create that did not finish by its deadline (the container was killed and
/// removed); `run` records it.
#[derive(Debug)]
pub struct CreateTimedOut {
    /// How long the create was given.
    pub after: Duration,
    /// Whether the run's own `--timeout` (not the policy's create limit) was the bound.
    pub by_run_timeout: bool,
}

impl std::fmt::Display for CreateTimedOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.by_run_timeout {
            write!(f, "the container was not created within --timeout ({:?}); everything it started was killed", self.after)
        } else {
            write!(f, "the container was not created within {:?} (policy key {}); everything it started was killed", self.after, keys::CREATE_TIMEOUT)
        }
    }
}

impl std::error::Error for CreateTimedOut {}

/// When the create must be over, from when it began, and whether the run's `--timeout` set it.
#[derive(Clone, Copy)]
pub(super) struct Deadline {
    from: Instant,
    pub(super) at: Instant,
    by_run_timeout: bool,
}

impl Deadline {
    /// The error of a create this deadline overtook.
    pub(super) fn overtaken(self) -> CreateTimedOut {
        CreateTimedOut {
            after: self.at.saturating_duration_since(self.from),
            by_run_timeout: self.by_run_timeout,
        }
    }
}

/// Phase 2, footprint (its last step; `create` holds the ledger and the guard): the custodian.
pub(super) fn start_custodian(
    ctx: &Context,
    opts: &CreateOptions,
    t0: Instant,
) -> Result<(crate::custodian::Custodian, Deadline)> {
    // the custodian bounds everything from here on (a child left at the deadline is killed) and
    // gives back what a killed foreground run holds; the create limit is the policy's (annotations
    // cannot change it), or the run's --timeout when that comes first
    let limit = t0 + Duration::from_secs(ctx.policy.create_timeout_s);
    let (at, by_run_timeout) = match opts.deadline {
        Some(d) if d < limit => (d, true),
        _ => (limit, false),
    };
    let reap = opts.die_with_runtime.then(|| crate::custodian::Reap {
        root: ctx.layout.root().to_path_buf(),
        id: opts.id.clone(),
    });
    let custodian = crate::custodian::Custodian::spawn(at, reap)?;
    let deadline = Deadline {
        from: t0,
        at,
        by_run_timeout,
    };
    Ok((custodian, deadline))
}
