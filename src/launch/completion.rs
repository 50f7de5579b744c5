//! Phase 7 of `create`, **completion** (`completion`): the init checked in the cgroup its placement
//! names, what libcontainer leaves out done from outside, the terminal given to the process's owner,
//! the verification from outside, the init's identity recorded, and the CPU-time watchdog.

use anyhow::{anyhow, bail, Result};
use nix::unistd::Pid;
use oci_spec::runtime::Spec;

use super::build::Built;
use super::{complete_init, verify_init};
use crate::bundle::ContainerRecord;
use crate::cgroups::{Placement, ProcessCgroups};
use crate::context::Context;
use crate::harden::HostFacts;
use crate::policy::keys;
use crate::rootfs;
use crate::views::ViewDir;

/// Phase 7, completion: the init in its cgroup, [`complete`], its identity recorded, the watchdog.
pub(super) fn completion(
    ctx: &Context,
    id: &str,
    built: &mut Built,
    placement: Option<&Placement>,
    host: &HostFacts,
    (made, views): (&rootfs::Assembled, &ViewDir),
    terminal: bool,
) -> Result<Pid> {
    let layout = &ctx.layout;
    let pid = built
        .container
        .pid()
        .ok_or_else(|| anyhow!("container {id:?} has no init pid after create"))?;
    // the init's cgroups, read once for the placement check and the steps libcontainer leaves out
    let cgroups = crate::cgroups::ProcessCgroups::of(pid.as_raw()).unwrap_or_default();
    if let Some(cg) = placement {
        check_placement(id, &cgroups, cg)?;
    }
    complete(
        id,
        (pid.as_raw(), &cgroups),
        &built.host_spec,
        &built.record,
        host,
        (made, views),
        terminal.then_some(built.owner).flatten(),
    )?;
    built.record.init = Some(
        crate::bundle::ProcessIdentity::of(pid.as_raw())
            .ok_or_else(|| anyhow!("container {id:?}: its init {pid} is gone"))?,
    );
    layout.rewrite_record(id, &built.record)?;
    // the CPU-time limit's watchdog, before the payload can run (start comes later)
    if let (Some(ms), Some(cg)) = (built.record.policy.cpu_time_ms.value(), placement) {
        crate::limits::cpu::spawn(id, pid.as_raw(), cg, ms, &layout.container_dir(id))?;
    }
    Ok(pid)
}

/// Refuses an init outside the cgroup its placement names (where every later verb looks for it).
fn check_placement(id: &str, cgroups: &ProcessCgroups, cg: &Placement) -> Result<()> {
    // every later verb finds the container's processes where its placement says they are
    let actual = cgroups.procs_dir();
    if actual.as_deref() != Some(cg.procs_dir().as_path()) {
        bail!(
            "cannot create container {id:?}: its init is in the cgroup {}, not in {} where its cgroups path {} names it (policy key {})",
            actual.map(|a| a.display().to_string()).unwrap_or_else(|| "(none)".into()),
            cg.procs_dir().display(),
            cg.path.display(),
            keys::CGROUP_PARENT
        );
    }
    Ok(())
}

/// What libcontainer leaves out, the terminal's owner, the check from outside, the views detached.
fn complete(
    id: &str,
    (pid, cgroups): (i32, &ProcessCgroups),
    spec: &Spec,
    record: &ContainerRecord,
    host: &HostFacts,
    (made, views): (&rootfs::Assembled, &ViewDir),
    terminal_owner: Option<(u32, u32)>,
) -> Result<()> {
    complete_init(pid, cgroups, spec)?;
    crate::network::contain(id, pid, spec, &record.policy, &record.policy.egress_allow)?;
    if let Some(o) = terminal_owner {
        super::give_terminal_to(pid, o);
    }
    verify_init(
        id,
        pid,
        spec,
        &record.policy,
        host,
        Some((
            made.writes,
            &made.disk,
            made.layer.as_ref().map(|k| k.at.join(&k.upper)),
        )),
    )?;
    // the container's mount namespace holds its own copies of the views now; a scratch store stays
    // (`update` resizes it)
    views.detach_views();
    Ok(())
}
