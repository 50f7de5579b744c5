//! `start`: verify the created container once more from outside, with its effective policy, then let
//! its payload run.

use std::path::Path;

use anyhow::{anyhow, bail, Result};

use super::Context;
use crate::container;
use crate::errors::error_chain;
use crate::facts::{ns_file, ns_id, ALL_NAMESPACES};
use crate::harden::HostFacts;
use crate::launch::{verify_init, Guard};

/// The host facts verification needs (the runtime's own namespaces).
pub fn verification_facts() -> HostFacts {
    let mut f = HostFacts {
        has_cgroup_namespace: Path::new("/proc/self/ns/cgroup").exists(),
        ..Default::default()
    };
    for t in ALL_NAMESPACES {
        if let Some(id) = ns_id(&Path::new("/proc/self/ns").join(ns_file(t))) {
            f.host_namespaces.insert(t, id);
        }
    }
    f
}

/// Starts container `id`, verifying its containment again first.
pub fn start(ctx: &Context, id: &str) -> Result<()> {
    let c = container::load(&ctx.layout, id)?;
    start_checked(ctx, id, c, true)
}

/// Starts container `id`, `c` as loaded (or, for `run`, as its create returned it); `reverify` is
/// false only when the caller verified it an instant ago in the same process (`run`), with nothing
/// able to change it in between. A container that fails its verification is removed.
pub fn start_checked(
    ctx: &Context,
    id: &str,
    mut c: libcontainer::container::Container,
    reverify: bool,
) -> Result<()> {
    if !c.can_start() {
        bail!(
            "cannot start container {id:?}: it is {} (only a created container can be started)",
            c.status().to_string().to_lowercase()
        );
    }
    let pid = c
        .pid()
        .ok_or_else(|| anyhow!("container {id:?} has no init process"))?
        .as_raw();
    let guard = Guard::new(&ctx.layout, id);
    // what a client copied in before the start is the container's
    crate::launch::adopt_client_writes(&ctx.layout, id)?;
    if reverify {
        let spec = ctx.layout.read_spec(id)?;
        let record = ctx.layout.read_record(id)?;
        verify_init(
            id,
            pid,
            &spec,
            &record.policy_in_force(),
            &verification_facts(),
            crate::footprint::ledger_of(&ctx.layout, id)
                .ok()
                .and_then(|l| {
                    let kept = l.layer.as_ref().map(|k| k.at.join(&k.upper));
                    Some((l.writes?, record.disk.as_ref()?, kept))
                }),
        )?;
    }
    // a start that fails leaves the container for the client to delete, as runc does
    guard.disarm();
    c.start()
        .map_err(|e| anyhow!("cannot start container {id:?}: {}", error_chain(&e)))
}
