//! `update`: change a running container's resources, never beyond the policy: values above a ceiling
//! (or unlimited) are clamped and logged, swap never exceeds memory, device rules are ignored. The
//! result is applied through libcgroups, written back to the hardened spec, and read back from the
//! cgroup files. `--egress-allow` replaces an `inbound-only` container's egress allowlist within its
//! policy's, read back from its network namespace.

use std::io::Read;
use std::path::Path;

use anyhow::{anyhow, bail, Context as _, Result};
use libcgroups::common::{CgroupManager, ControllerOpt};
use oci_spec::runtime::{LinuxCpu, LinuxMemory, LinuxPids, LinuxResources};

use super::Context;
use crate::container;
use crate::harden::resources::clamp_update;

/// runc's single-value flags of `update` (0 / absent = unchanged).
#[derive(Debug, Default, Clone)]
pub struct UpdateFlags {
    /// Memory limit in bytes.
    pub memory: Option<i64>,
    /// Memory+swap limit in bytes.
    pub memory_swap: Option<i64>,
    /// Memory reservation in bytes.
    pub memory_reservation: Option<i64>,
    /// pids limit.
    pub pids_limit: Option<i64>,
    /// CFS quota.
    pub cpu_quota: Option<i64>,
    /// CFS period.
    pub cpu_period: Option<u64>,
    /// CPU shares.
    pub cpu_shares: Option<u64>,
    /// CPU realtime period.
    pub cpu_rt_period: Option<u64>,
    /// CPU realtime runtime.
    pub cpu_rt_runtime: Option<i64>,
    /// cpuset cpus.
    pub cpuset_cpus: Option<String>,
    /// cpuset mems.
    pub cpuset_mems: Option<String>,
}

/// Parses runc's `--resources` input (a file, or `-` for stdin).
pub fn read_resources(source: &str) -> Result<LinuxResources> {
    let mut data = Vec::new();
    if source == "-" {
        std::io::stdin()
            .read_to_end(&mut data)
            .context("cannot read resources from stdin")?;
    } else {
        data = std::fs::read(Path::new(source)).with_context(|| format!("cannot read {source}"))?;
    }
    serde_json::from_slice(&data)
        .map_err(|e| anyhow!("{source} is not a valid resources object: {e}"))
}

/// Merges the single-value flags into `r` (flags win).
pub fn apply_flags(mut r: LinuxResources, f: &UpdateFlags) -> LinuxResources {
    let nz = |v: Option<i64>| v.filter(|&x| x != 0);
    if nz(f.memory).is_some() || nz(f.memory_swap).is_some() || nz(f.memory_reservation).is_some() {
        let mut m: LinuxMemory = r.memory().unwrap_or_default();
        if let Some(v) = nz(f.memory) {
            m.set_limit(Some(v));
        }
        if let Some(v) = nz(f.memory_swap) {
            m.set_swap(Some(v));
        }
        if let Some(v) = nz(f.memory_reservation) {
            m.set_reservation(Some(v));
        }
        r.set_memory(Some(m));
    }
    if let Some(v) = nz(f.pids_limit) {
        let mut p = LinuxPids::default();
        p.set_limit(v);
        r.set_pids(Some(p));
    }
    let cpu_set = nz(f.cpu_quota).is_some()
        || f.cpu_period.is_some_and(|v| v != 0)
        || f.cpu_shares.is_some_and(|v| v != 0)
        || f.cpu_rt_period.is_some_and(|v| v != 0)
        || nz(f.cpu_rt_runtime).is_some()
        || f.cpuset_cpus.is_some()
        || f.cpuset_mems.is_some();
    if cpu_set {
        let mut c: LinuxCpu = r.cpu().clone().unwrap_or_default();
        if let Some(v) = nz(f.cpu_quota) {
            c.set_quota(Some(v));
        }
        if let Some(v) = f.cpu_period.filter(|&v| v != 0) {
            c.set_period(Some(v));
        }
        if let Some(v) = f.cpu_shares.filter(|&v| v != 0) {
            c.set_shares(Some(v));
        }
        if let Some(v) = f.cpu_rt_period.filter(|&v| v != 0) {
            c.set_realtime_period(Some(v));
        }
        if let Some(v) = nz(f.cpu_rt_runtime) {
            c.set_realtime_runtime(Some(v));
        }
        if let Some(v) = &f.cpuset_cpus {
            c.set_cpus(Some(v.clone()));
        }
        if let Some(v) = &f.cpuset_mems {
            c.set_mems(Some(v.clone()));
        }
        r.set_cpu(Some(c));
    }
    r
}

/// Updates container `id`.
pub fn update(ctx: &Context, id: &str, resources: Option<&str>, flags: &UpdateFlags) -> Result<()> {
    let c = container::load(&ctx.layout, id)?;
    if c.status() == libcontainer::container::ContainerStatus::Stopped {
        bail!("container {id:?}: container not running");
    }
    let requested = match resources {
        Some(src) => read_resources(src)?,
        None => LinuxResources::default(),
    };
    let requested = apply_flags(requested, flags);
    let mut spec = ctx.layout.read_spec(id)?;
    let current = spec
        .linux()
        .as_ref()
        .and_then(|l| l.resources().clone())
        .unwrap_or_default();
    // the container's own ceilings: the policy at its create, tightened by its annotations
    let policy = ctx.layout.read_record(id)?.policy;
    let (clamped, changes) = clamp_update(&requested, &current, &policy);
    for ch in &changes {
        tracing::info!("container {id}: {ch}");
    }
    let manager = container::cgroup_manager(&ctx.layout, id)?;
    manager
        .apply(&ControllerOpt {
            resources: &clamped,
            disable_oom_killer: false,
            oom_score_adj: None,
            freezer_state: None,
        })
        .map_err(|e| anyhow!("cannot update container {id:?}: {e}"))?;

    // remember the new limits in the hardened spec (verification and state read it)
    let mut merged = current.clone();
    if let Some(p) = clamped.pids() {
        merged.set_pids(Some(*p));
    }
    if let Some(m) = clamped.memory() {
        let mut cur = merged.memory().unwrap_or_default();
        if let Some(l) = m.limit() {
            cur.set_limit(Some(l));
        }
        if let Some(s) = m.swap() {
            cur.set_swap(Some(s));
        }
        if let Some(r) = m.reservation() {
            cur.set_reservation(Some(r));
        }
        merged.set_memory(Some(cur));
    }
    if let Some(cpu) = clamped.cpu() {
        merged.set_cpu(Some(cpu.clone()));
    }
    if let Some(l) = spec.linux_mut() {
        l.set_resources(Some(merged));
    }
    ctx.layout.rewrite_spec(id, &spec)?;

    if let Some(pid) = c.pid() {
        let cgroups = crate::cgroups::ProcessCgroups::of(pid.as_raw()).unwrap_or_default();
        crate::cgroups::enforce_v2_no_swap(&cgroups, &spec)?;
    }
    if clamped.memory().is_some() {
        resize_store(ctx, id, &spec, &policy)?;
    }
    // read back what the kernel now enforces
    if let Some(pid) = c.pid() {
        let obs = crate::verify::observe(pid.as_raw(), &crate::verify::Probe::default());
        if let Ok(cg) = &obs.cgroup {
            let failures = crate::verify::check_cgroups(cg, &spec);
            if !failures.is_empty() {
                let list: Vec<String> = failures.iter().map(|f| f.to_string()).collect();
                bail!(
                    "container {id:?}: the cgroup limits after update do not match: {}",
                    list.join("; ")
                );
            }
        }
    }
    Ok(())
}

/// A scratch store follows the container's memory limit (never above half of it, so that a full
/// store is ENOSPC and not an OOM kill; never below what it holds, nor above the policy's size).
fn resize_store(
    ctx: &Context,
    id: &str,
    spec: &oci_spec::runtime::Spec,
    policy: &crate::policy::Policy,
) -> Result<()> {
    let Ok(ledger) = crate::footprint::ledger_of(&ctx.layout, id) else {
        return Ok(());
    };
    let (Some(crate::rootfs::Writes::Scratch), Some(views)) = (ledger.writes, &ledger.views) else {
        return Ok(());
    };
    let Some(token) = views.file_name().and_then(|n| n.to_str()) else {
        return Ok(());
    };
    let tag = format!("{}-store", crate::rootfs::tag_of(token));
    let mounts = crate::mountinfo::own()?;
    let Some(store) = mounts
        .iter()
        .find(|m| m.fstype == "tmpfs" && m.source.as_deref() == Some(tag.as_str()))
    else {
        return Ok(());
    };
    let want = crate::harden::filesystem::store_bytes(spec, policy, &mut Default::default());
    let vfs = nix::sys::statvfs::statvfs(&store.point)
        .with_context(|| format!("cannot read the store {}", store.point.display()))?;
    let used = (vfs.blocks() - vfs.blocks_free()) * vfs.fragment_size();
    let size = want.max(used.next_multiple_of(4096));
    crate::mountapi::reconfigure(&store.point, "size", &size.to_string()).with_context(|| {
        format!(
            "container {id:?}: cannot resize its store to {size} bytes (policy key {})",
            crate::policy::keys::WRITABLE
        )
    })?;
    tracing::info!("container {id}: its store is {size} bytes now (half its memory limit at most)");
    Ok(())
}

/// `update --egress-allow LIST`: the egress filter of container `id` replaced by one for `list`
/// (within its effective policy's `network.egress_allow`), read back, and remembered in its state.
pub fn egress(ctx: &Context, id: &str, list: &str) -> Result<()> {
    use crate::egress_rule::{format_list, within, EgressRule};
    use crate::policy::{keys, NetworkMode};
    let c = container::load(&ctx.layout, id)?;
    if c.status() == libcontainer::container::ContainerStatus::Stopped {
        bail!("container {id:?}: container not running");
    }
    let mut record = ctx.layout.read_record(id)?;
    if record.policy.network != NetworkMode::InboundOnly {
        bail!(
            "container {id:?} has network mode {}: only an inbound-only container has an egress allowlist (policy key {})",
            record.policy.network.as_str(),
            keys::NETWORK_MODE
        );
    }
    // a namespace joined by path (a pod's) is shared: its one filter belongs to every container in
    // it (each checks it), so no single container's update may change it
    if !crate::network::has_own_network_namespace(&ctx.layout.read_spec(id)?) {
        bail!(
            "container {id:?} shares a network namespace it joined (a pod's): its egress filter belongs to every container in it, and no single container's update changes it (policy key {})",
            keys::EGRESS_ALLOW
        );
    }
    let wanted = EgressRule::parse_list(list)
        .map_err(|e| anyhow!("--egress-allow: {e} (policy key {})", keys::EGRESS_ALLOW))?;
    if !within(&wanted, &record.policy.egress_allow) {
        bail!(
            "--egress-allow {:?} is wider than container {id:?}'s policy allows ({}) (policy key {})",
            format_list(&wanted),
            crate::network::describe(&record.policy.egress_allow),
            keys::EGRESS_ALLOW
        );
    }
    let init = record
        .init
        .filter(|i| i.is_alive())
        .ok_or_else(|| anyhow!("container {id:?}: its init is gone"))?;
    // the namespace held open before the init is checked again: a recycled pid cannot point it
    // at another namespace, and the runtime's own is never the container's
    let ns = std::fs::File::open(format!("/proc/{}/ns/net", init.pid))
        .with_context(|| format!("container {id:?}: cannot open its network namespace"))?;
    let own = std::fs::metadata("/proc/self/ns/net")?;
    use std::os::unix::fs::MetadataExt;
    let theirs = ns.metadata()?;
    if !init.is_alive() || (theirs.dev(), theirs.ino()) == (own.dev(), own.ino()) {
        bail!(
            "container {id:?}: its init is gone (policy key {})",
            keys::NETWORK_MODE
        );
    }
    let path = std::path::PathBuf::from(format!("/proc/self/fd/{}", {
        use std::os::fd::AsRawFd;
        ns.as_raw_fd()
    }));
    crate::network::install_filter(&path, &wanted, crate::network::nftables::Mode::Replace)?;
    let read = crate::network::in_network_namespace(&path, crate::network::nftables::read)
        .map_err(|e| format!("{e:#}"));
    if let Some(d) = crate::network::check_filter(&read, &wanted) {
        bail!(
            "container {id:?}: its egress filter after update does not match: {d} (policy key {})",
            keys::NETWORK_MODE
        );
    }
    tracing::info!(
        "container {id}: egress allowlist now {} (policy key {})",
        crate::network::describe(&wanted),
        keys::EGRESS_ALLOW
    );
    record.egress_in_force = Some(wanted);
    ctx.layout.rewrite_record(id, &record)
}
