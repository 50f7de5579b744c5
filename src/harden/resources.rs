//! Step 3: resources. pids and memory cgroup limits always set (a caller's lower value kept, a higher or
//! absent one clamped), swap never above memory, RLIMIT_NOFILE clamped, RLIMIT_CORE 0, containers placed
//! in a cgroup of their own, and only namespaced sysctls.

use oci_spec::runtime::{
    LinuxBlockIo, LinuxCpu, LinuxMemory, LinuxPids, LinuxResources, PosixRlimit, PosixRlimitType,
    Process, Spec,
};

use super::Changes;
use crate::policy::{keys, Policy};

/// Gives the container a cgroup of its own. With the cgroupfs driver: an absolute cgroup path under the
/// policy's parent when the caller gives none (or a relative one, which would land under the runtime
/// caller's own cgroup). An absolute path is kept only if it names a cgroup below the root without `.`
/// or `..` (libcgroups joins it to each hierarchy's mount point: `/../../tmp/x` made rloxsc create
/// directories outside cgroupfs, `/` is the root cgroup); anything else is flattened into one name
/// under the parent, like a relative one. With the systemd driver: a `slice:prefix:name` that names a
/// scope ([`crate::cgroups::placement::systemd_unit`]) is kept, written out in full; anything else
/// becomes the scope `rloxsc-<id>.scope` in `system.slice`.
pub fn harden_cgroups_path(
    spec: &mut Spec,
    id: &str,
    policy: &Policy,
    driver: crate::cgroups::Driver,
    changes: &mut Changes,
) {
    use std::path::Component;
    let linux = spec.linux_mut().get_or_insert_with(Default::default);
    let current = linux.cgroups_path().clone();
    if driver == crate::cgroups::Driver::Systemd {
        let given = current.as_ref().map(|p| p.to_string_lossy().into_owned());
        let unit = given
            .as_deref()
            .and_then(|g| crate::cgroups::placement::systemd_unit(g).ok());
        let wanted = match unit {
            Some(u) if given.as_deref() == Some(u.cgroups_path().as_str()) => return,
            Some(u) => u.cgroups_path(),
            None => format!("system.slice:rloxsc:{id}"),
        };
        changes.push(
            keys::CGROUP_PARENT,
            format!(
                "cgroupsPath {} -> {wanted} (systemd cgroup driver)",
                given.as_deref().unwrap_or("(none)")
            ),
        );
        linux.set_cgroups_path(Some(wanted.into()));
        return;
    }
    let plain_absolute = |p: &std::path::Path| {
        p.is_absolute()
            && p.components().any(|c| matches!(c, Component::Normal(_)))
            && p.components()
                .all(|c| matches!(c, Component::RootDir | Component::Normal(_)))
            && !p.display().to_string().contains("/./")
            && !p.display().to_string().ends_with("/.")
    };
    let wanted = match &current {
        Some(p) if plain_absolute(p) => return,
        Some(p) => {
            let flat = p.display().to_string().replace([':', '/'], "-");
            let flat = flat.trim_matches(|c| c == '-' || c == '.');
            let name = if flat.is_empty() { id } else { flat };
            format!("{}/{name}", policy.cgroup_parent)
        }
        None => format!("{}/{}", policy.cgroup_parent, id),
    };
    changes.push(
        keys::CGROUP_PARENT,
        format!(
            "cgroupsPath {} -> {wanted}",
            current
                .map(|p| p.display().to_string())
                .unwrap_or_else(|| "(none)".into())
        ),
    );
    linux.set_cgroups_path(Some(wanted.into()));
}

/// Clamps pids and memory, forbids swap above memory and drops raw v2 keys that could override them.
pub fn harden_limits(spec: &mut Spec, policy: &Policy, changes: &mut Changes) {
    let linux = spec.linux_mut().get_or_insert_with(Default::default);
    let res = linux
        .resources_mut()
        .get_or_insert_with(LinuxResources::default);

    // pids
    let requested = res
        .pids()
        .map(|p| p.limit())
        .filter(|&l| l > 0)
        .map(|l| l as u64);
    let pids = policy.pids.clamp(requested);
    if requested != Some(pids) {
        let mut p = LinuxPids::default();
        p.set_limit(pids as i64);
        res.set_pids(Some(p));
        changes.push(
            keys::PIDS,
            format!("pids limit {} -> {pids}", show(requested)),
        );
    }

    // memory
    let mut mem = res.memory().unwrap_or_default();
    let requested = mem.limit().filter(|&l| l > 0).map(|l| l as u64);
    let limit = policy.memory_bytes.clamp(requested);
    if requested != Some(limit) {
        mem.set_limit(Some(limit as i64));
        changes.push(
            keys::MEMORY,
            format!("memory limit {} -> {limit}", show(requested)),
        );
    }
    // memory.swap is memory+swap: never above the memory limit, i.e. no swap beyond it.
    if mem.swap() != Some(limit as i64) {
        changes.push(
            keys::MEMORY,
            format!(
                "memory+swap {} -> {limit} (swap not above memory)",
                show(mem.swap().map(|s| s as u64))
            ),
        );
        mem.set_swap(Some(limit as i64));
    }
    if mem.reservation().is_some_and(|r| r > limit as i64) {
        mem.set_reservation(Some(limit as i64));
        changes.push(keys::MEMORY, "memory reservation clamped to the limit");
    }
    if mem.disable_oom_killer() == Some(true) {
        mem.set_disable_oom_killer(Some(false));
        changes.push(
            keys::MEMORY,
            "OOM killer re-enabled (a memory bomb is killed, not left hanging)",
        );
    }
    res.set_memory(Some(mem));

    if let Some(unified) = res.unified_mut() {
        let before = unified.len();
        unified.retain(|k, _| is_allowed_unified_key(k));
        if unified.len() != before {
            changes.push(
                keys::UNIFIED,
                "dropped raw cgroup v2 keys other than cpu.*, io.*, hugetlb.*",
            );
        }
    }
}

fn show(v: Option<u64>) -> String {
    v.map(|v| v.to_string())
        .unwrap_or_else(|| "unlimited".into())
}

/// Clamps RLIMIT_NOFILE and forces RLIMIT_CORE, RLIMIT_RTPRIO and RLIMIT_NICE to 0.
pub fn harden_rlimits(process: &mut Process, policy: &Policy, changes: &mut Changes) {
    let mut rl = process.rlimits().clone().unwrap_or_default();

    // libcontainer applies every entry in order, so with duplicates the last one is what counts
    // (found by fuzz/: a second, higher RLIMIT_NOFILE entry used to be kept)
    let count =
        |rl: &Vec<PosixRlimit>, t: PosixRlimitType| rl.iter().filter(|r| r.typ() == t).count();
    let nofile = rl
        .iter()
        .rfind(|r| r.typ() == PosixRlimitType::RlimitNofile)
        .cloned();
    let hard = policy.nofile.clamp(nofile.as_ref().map(|r| r.hard()));
    let soft = nofile
        .as_ref()
        .map(|r| r.soft().min(hard))
        .unwrap_or(policy.nofile.default.min(hard));
    if nofile.as_ref().map(|r| (r.soft(), r.hard())) != Some((soft, hard))
        || count(&rl, PosixRlimitType::RlimitNofile) > 1
    {
        rl.retain(|r| r.typ() != PosixRlimitType::RlimitNofile);
        rl.push(rlimit(PosixRlimitType::RlimitNofile, soft, hard));
        changes.push(keys::NOFILE, format!("RLIMIT_NOFILE -> {soft}/{hard}"));
    }

    let core = rl
        .iter()
        .find(|r| r.typ() == PosixRlimitType::RlimitCore)
        .cloned();
    if core.as_ref().map(|r| (r.soft(), r.hard())) != Some((0, 0))
        || count(&rl, PosixRlimitType::RlimitCore) > 1
    {
        rl.retain(|r| r.typ() != PosixRlimitType::RlimitCore);
        rl.push(rlimit(PosixRlimitType::RlimitCore, 0, 0));
        changes.push(keys::CORE, "RLIMIT_CORE -> 0");
    }

    // real-time priority and a raised nice ceiling would let the container starve the host's CPUs
    // without CAP_SYS_NICE (a runtime holding CAP_SYS_RESOURCE can set any value)
    for (typ, name) in [
        (PosixRlimitType::RlimitRtprio, "RLIMIT_RTPRIO"),
        (PosixRlimitType::RlimitNice, "RLIMIT_NICE"),
    ] {
        // absent too: the container would inherit the runtime's own limit
        let given: Vec<(u64, u64)> = rl
            .iter()
            .filter(|r| r.typ() == typ)
            .map(|r| (r.soft(), r.hard()))
            .collect();
        if given != [(0, 0)] {
            rl.retain(|r| r.typ() != typ);
            rl.push(rlimit(typ, 0, 0));
            if given.iter().any(|&v| v != (0, 0)) {
                changes.push(keys::PRIORITY, format!("{name} -> 0"));
            }
        }
    }
    process.set_rlimits(Some(rl));
}

fn rlimit(typ: PosixRlimitType, soft: u64, hard: u64) -> PosixRlimit {
    oci_spec::runtime::PosixRlimitBuilder::default()
        .typ(typ)
        .soft(soft)
        .hard(hard)
        .build()
        .expect("an rlimit with all fields set is valid")
}

/// Sysctls that are namespaced (and so only touch the container): `net.*` (the container has its own
/// network namespace), IPC and message-queue keys.
pub fn is_namespaced_sysctl(key: &str) -> bool {
    key.starts_with("net.")
        || key.starts_with("fs.mqueue.")
        || matches!(
            key,
            "kernel.shmmax"
                | "kernel.shmall"
                | "kernel.shmmni"
                | "kernel.shm_rmid_forced"
                | "kernel.msgmax"
                | "kernel.msgmnb"
                | "kernel.msgmni"
                | "kernel.sem"
        )
}

/// Raw cgroup v2 `unified` keys a caller may set: CPU, IO and hugetlb tuning (never pids or memory,
/// which would override the limits).
pub fn is_allowed_unified_key(key: &str) -> bool {
    ["cpu.", "io.", "hugetlb."]
        .iter()
        .any(|p| key.starts_with(p))
}

/// Drops sysctls that are not namespaced.
pub fn harden_sysctls(spec: &mut Spec, changes: &mut Changes) {
    let Some(linux) = spec.linux_mut() else {
        return;
    };
    if let Some(sysctl) = linux.sysctl_mut() {
        let dropped: Vec<String> = sysctl
            .keys()
            .filter(|k| !is_namespaced_sysctl(k))
            .cloned()
            .collect();
        for k in &dropped {
            sysctl.remove(k);
        }
        if !dropped.is_empty() {
            changes.push(
                keys::SYSCTL,
                format!("dropped host-wide sysctls {}", dropped.join(", ")),
            );
        }
    }
    clamp_ping_group_range(spec, changes);
}

/// A container in a user namespace of its own that joins a network namespace the host's user
/// namespace owns (a pod's, made by containerd or a CNI; Docker's) holds no capability there: its
/// root could not bind a port below 1024 as it would under runc (nginx failed with EACCES on port
/// 80, found through the CRI client). When the process may hold CAP_NET_BIND_SERVICE, rloxsc sets
/// `net.ipv4.ip_unprivileged_port_start=0` in that namespace (written from outside, as containerd
/// 2.x and Docker do by default), unless the spec sets it.
pub fn low_ports_in_a_host_owned_network_namespace(
    spec: &mut Spec,
    facts: &super::HostFacts,
    changes: &mut Changes,
) {
    const KEY: &str = "net.ipv4.ip_unprivileged_port_start";
    let may_bind = spec
        .process()
        .as_ref()
        .and_then(|p| p.capabilities().as_ref())
        .and_then(|c| c.bounding().as_ref())
        .is_some_and(|b| b.contains(&oci_spec::runtime::Capability::NetBindService));
    let Some(linux) = spec.linux_mut() else {
        return;
    };
    let nss = linux.namespaces().clone().unwrap_or_default();
    let has_userns = nss
        .iter()
        .any(|n| n.typ() == oci_spec::runtime::LinuxNamespaceType::User);
    let Some(net) = nss
        .iter()
        .find(|n| n.typ() == oci_spec::runtime::LinuxNamespaceType::Network)
        .and_then(|n| n.path().clone())
    else {
        return;
    };
    let host_user = facts
        .host_namespaces
        .get(&oci_spec::runtime::LinuxNamespaceType::User);
    let host_owned = facts
        .namespace_owners
        .get(&net)
        .is_some_and(|o| Some(&o.id) == host_user);
    if !(may_bind && has_userns && host_owned) {
        return;
    }
    let sysctl = linux.sysctl_mut().get_or_insert_with(Default::default);
    if sysctl.contains_key(KEY) {
        return;
    }
    sysctl.insert(KEY.to_string(), "0".to_string());
    changes.push(
        keys::SYSCTL,
        format!("{KEY}=0 in the joined network namespace {} (the host's user namespace owns it: the container's root could not bind ports below 1024 otherwise)", net.display()),
    );
}

/// `net.ipv4.ping_group_range` names gids of the user namespace that writes it: in the container's
/// new network namespace that is the container's, where a range beyond its mapped gids (Docker and
/// containerd ask for `0 2147483647`, "every group") is invalid. Clamped to the gids the container
/// has. (In a network namespace the container joins, rloxsc writes the spec's network sysctls from
/// outside, as given.)
fn clamp_ping_group_range(spec: &mut Spec, changes: &mut Changes) {
    const KEY: &str = "net.ipv4.ping_group_range";
    let Some(linux) = spec.linux_mut() else {
        return;
    };
    let joined_net =
        linux.namespaces().iter().flatten().any(|n| {
            n.typ() == oci_spec::runtime::LinuxNamespaceType::Network && n.path().is_some()
        });
    if joined_net {
        return;
    }
    // the gids inside: the spec's mapping, or a joined user namespace's block (65536 ids)
    let (lo, hi) = linux
        .gid_mappings()
        .as_ref()
        .filter(|m| !m.is_empty())
        .map(|m| {
            let lo = m.iter().map(|x| x.container_id() as u64).min().unwrap_or(0);
            let hi = m
                .iter()
                .map(|x| x.container_id() as u64 + (x.size() as u64).saturating_sub(1))
                .max()
                .unwrap_or(0);
            (lo, hi)
        })
        .unwrap_or((0, crate::policy::BLOCK as u64 - 1));
    let Some(sysctl) = linux.sysctl_mut().as_mut() else {
        return;
    };
    let Some(v) = sysctl.get(KEY).cloned() else {
        return;
    };
    let parsed: Vec<u64> = v
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    let [a, b] = parsed[..] else { return };
    let (na, nb) = (a.max(lo), b.min(hi));
    if (na, nb) == (a, b) {
        return;
    }
    if na > nb {
        sysctl.remove(KEY);
        changes.push(
            keys::SYSCTL,
            format!("dropped {KEY}={v}: none of those groups exist in the container"),
        );
        return;
    }
    let clamped = format!("{na} {nb}");
    changes.push(
        keys::SYSCTL,
        format!("{KEY}={v} clamped to {clamped}, the container's groups"),
    );
    sysctl.insert(KEY.to_string(), clamped);
}

/// Reads the memory limit of a hardened spec (for verification and records).
pub fn memory_limit(spec: &Spec) -> Option<i64> {
    spec.linux()
        .as_ref()?
        .resources()
        .as_ref()?
        .memory()
        .as_ref()
        .and_then(LinuxMemory::limit)
}

/// Reads the pids limit of a hardened spec.
pub fn pids_limit(spec: &Spec) -> Option<i64> {
    Some(
        spec.linux()
            .as_ref()?
            .resources()
            .as_ref()?
            .pids()
            .as_ref()?
            .limit(),
    )
}

/// On a host with cgroup v1 hierarchies, `linux.resources.unified` (raw cgroup v2 files) cannot be
/// applied: libcontainer skipped it silently; runc refuses the config (`invalid configuration`), and
/// so does rloxsc rather than run the container without what the caller asked for.
pub fn refuse_unified_on_v1(spec: &Spec, facts: &super::HostFacts) -> Result<(), super::Refusal> {
    let unified = spec
        .linux()
        .as_ref()
        .and_then(|l| l.resources().as_ref())
        .and_then(|r| r.unified().as_ref())
        .filter(|u| !u.is_empty());
    match unified {
        Some(u) if !facts.cgroup_v1_hierarchies.is_empty() => {
            let mut names: Vec<&str> = u.keys().map(String::as_str).collect();
            names.sort_unstable();
            Err(super::Refusal {
                key: keys::UNIFIED,
                reason: format!(
                    "invalid configuration: linux.resources.unified ({}) needs cgroup v2, and this host's cgroups are v1",
                    names.join(", ")
                ),
            })
        }
        _ => Ok(()),
    }
}

/// Clamps an `update` request (runc's JSON resources or the single-value flags) against the policy,
/// with runc's and the CRI's conventions for every resource, on cgroup v1 and v2 alike: zero (or an
/// empty string) and absent mean "leave it as it is" (Docker sends `{"cpu":{"shares":0,"quota":0,
/// "period":0}}` and `{"blockIO":{"weight":0}}` with every `docker update`), `-1` means unlimited,
/// which for pids and memory is then the policy's ceiling. Pids and memory above their ceilings are
/// clamped, swap never exceeds memory, device rules and raw v2 keys that could widen containment are
/// dropped. `current` is the container's hardened resources, used for the memory limit when the
/// request does not change it. Returns the resources to apply and the changes made to the request.
pub fn clamp_update(
    requested: &LinuxResources,
    current: &LinuxResources,
    policy: &Policy,
) -> (LinuxResources, Vec<super::Change>) {
    let mut changes = Changes::default();
    let mut out = requested.clone();

    out.set_pids(None);
    if let Some(p) = requested.pids().filter(|p| p.limit() != 0) {
        out.set_pids(Some(pids_update(p.limit(), policy, &mut changes)));
    }
    out.set_cpu(requested.cpu().as_ref().and_then(cpu_update));
    out.set_block_io(requested.block_io().as_ref().and_then(block_io_update));

    let current_limit = current.memory().and_then(|m| m.limit()).filter(|&l| l > 0);
    if let Some(m) = requested.memory() {
        out.set_memory(memory_update(*m, current_limit, policy, &mut changes));
    }

    drop_widening_rules(requested, &mut out, &mut changes);
    (out, changes.0)
}

/// The pids part of an update: a limit of `asked` (non-zero), unlimited (-1) and anything above the
/// ceiling taken as the ceiling.
fn pids_update(asked: i64, policy: &Policy, changes: &mut Changes) -> LinuxPids {
    let limit = if asked < 0 {
        policy.pids.ceiling
    } else {
        (asked as u64).min(policy.pids.ceiling)
    };
    if asked < 0 || asked as u64 != limit {
        changes.push(
            keys::PIDS,
            format!("update: pids limit {asked} -> {limit} (ceiling)"),
        );
    }
    let mut lp = LinuxPids::default();
    lp.set_limit(limit as i64);
    lp
}

/// The memory part of an update: the limit clamped, swap never above memory, the kernel limit
/// dropped, the OOM killer kept; `None` when nothing is left to change. `current_limit`: the
/// container's limit, for a request that leaves it as it is.
fn memory_update(
    m: LinuxMemory,
    current_limit: Option<i64>,
    policy: &Policy,
    changes: &mut Changes,
) -> Option<LinuxMemory> {
    let mut mem = m;
    let limit = memory_limit_update(m.limit(), policy, changes);
    mem.set_limit(limit);
    let effective = limit.or(current_limit);
    match (m.swap(), effective) {
        (Some(s), Some(l)) if s != 0 && s != l => {
            changes.push(
                keys::MEMORY,
                format!("update: memory+swap {s} -> {l} (swap not above memory)"),
            );
            mem.set_swap(Some(l));
        }
        (_, Some(l)) if limit.is_some() => {
            mem.set_swap(Some(l));
        }
        (Some(0), _) | (None, _) => {
            mem.set_swap(None);
        }
        _ => {}
    }
    if mem.kernel().is_some() {
        #[allow(deprecated)]
        mem.set_kernel(None);
    }
    if mem.disable_oom_killer() == Some(true) {
        mem.set_disable_oom_killer(Some(false));
        changes.push(keys::MEMORY, "update: the OOM killer cannot be disabled");
    }
    if mem.reservation() == Some(0) {
        mem.set_reservation(None);
    }
    let anything = mem.limit().is_some()
        || mem.swap().is_some()
        || mem.reservation().is_some()
        || mem.swappiness().is_some()
        || mem.disable_oom_killer().is_some()
        || mem.use_hierarchy().is_some()
        || mem.check_before_update().is_some();
    anything.then_some(mem)
}

/// The memory limit an update asks for, clamped to the ceiling (unlimited is the ceiling); `None`
/// for zero or absent (unchanged).
fn memory_limit_update(asked: Option<i64>, policy: &Policy, changes: &mut Changes) -> Option<i64> {
    match asked {
        Some(l) if l > 0 => {
            let clamped = (l as u64).min(policy.memory_bytes.ceiling) as i64;
            if clamped != l {
                changes.push(
                    keys::MEMORY,
                    format!("update: memory limit {l} -> {clamped} (ceiling)"),
                );
            }
            Some(clamped)
        }
        Some(l) if l < 0 => {
            let c = policy.memory_bytes.ceiling as i64;
            changes.push(
                keys::MEMORY,
                format!("update: unlimited memory -> {c} (ceiling)"),
            );
            Some(c)
        }
        _ => None, // zero or absent: unchanged
    }
}

/// Drops from `out` what an update could widen containment with: device rules, and raw v2 keys
/// other than `cpu.*`, `io.*` and `hugetlb.*`.
fn drop_widening_rules(
    requested: &LinuxResources,
    out: &mut LinuxResources,
    changes: &mut Changes,
) {
    if requested.devices().as_ref().is_some_and(|d| !d.is_empty()) {
        changes.push(
            keys::DEVICES,
            "update: device rules ignored (the device set never widens)",
        );
    }
    out.set_devices(None);
    if let Some(u) = out.unified_mut() {
        let before = u.len();
        u.retain(|k, _| k.starts_with("cpu.") || k.starts_with("io.") || k.starts_with("hugetlb."));
        if u.len() != before {
            changes.push(
                keys::UNIFIED,
                "update: raw cgroup v2 keys other than cpu.*, io.*, hugetlb.* dropped",
            );
        }
    }
}

/// The cpu part of an update with its zeros and empty strings taken as unset; `None` when nothing is
/// left to change. A quota of -1 (no CPU limit) passes: it widens nothing rloxsc limits.
fn cpu_update(c: &LinuxCpu) -> Option<LinuxCpu> {
    let mut c = c.clone();
    c.set_shares(c.shares().filter(|&v| v != 0));
    c.set_quota(c.quota().filter(|&v| v != 0));
    c.set_period(c.period().filter(|&v| v != 0));
    c.set_realtime_runtime(c.realtime_runtime().filter(|&v| v != 0));
    c.set_realtime_period(c.realtime_period().filter(|&v| v != 0));
    c.set_cpus(c.cpus().clone().filter(|v| !v.is_empty()));
    c.set_mems(c.mems().clone().filter(|v| !v.is_empty()));
    let anything = c.shares().is_some()
        || c.quota().is_some()
        || c.period().is_some()
        || c.realtime_runtime().is_some()
        || c.realtime_period().is_some()
        || c.cpus().is_some()
        || c.mems().is_some()
        || c.burst().is_some()
        || c.idle().is_some();
    anything.then_some(c)
}

/// The blockIO part of an update with zero weights taken as unset; `None` when nothing is left.
fn block_io_update(b: &LinuxBlockIo) -> Option<LinuxBlockIo> {
    let mut b = b.clone();
    b.set_weight(b.weight().filter(|&w| w != 0));
    b.set_leaf_weight(b.leaf_weight().filter(|&w| w != 0));
    fn nonempty<T>(v: &Option<Vec<T>>) -> bool {
        v.as_ref().is_some_and(|v| !v.is_empty())
    }
    let anything = b.weight().is_some()
        || b.leaf_weight().is_some()
        || nonempty(b.weight_device())
        || nonempty(b.throttle_read_bps_device())
        || nonempty(b.throttle_write_bps_device())
        || nonempty(b.throttle_read_iops_device())
        || nonempty(b.throttle_write_iops_device());
    anything.then_some(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harden::testutil::*;

    fn with_limits(pids: Option<i64>, mem: Option<i64>) -> Spec {
        let mut s = careless_spec();
        let mut res = LinuxResources::default();
        if let Some(p) = pids {
            let mut lp = LinuxPids::default();
            lp.set_limit(p);
            res.set_pids(Some(lp));
        }
        if let Some(m) = mem {
            let mut lm = LinuxMemory::default();
            lm.set_limit(Some(m));
            res.set_memory(Some(lm));
        }
        s.linux_mut().as_mut().unwrap().set_resources(Some(res));
        s
    }

    fn limits(pids: Option<i64>, mem: Option<i64>) -> (i64, i64, i64) {
        let mut s = with_limits(pids, mem);
        harden_limits(&mut s, &Policy::default(), &mut Changes::default());
        let m = s
            .linux()
            .as_ref()
            .unwrap()
            .resources()
            .as_ref()
            .unwrap()
            .memory()
            .unwrap();
        (
            pids_limit(&s).unwrap(),
            m.limit().unwrap(),
            m.swap().unwrap(),
        )
    }

    #[test]
    fn absent_limits_get_defaults() {
        assert_eq!(limits(None, None), (512, 512 << 20, 512 << 20));
    }

    #[test]
    fn unlimited_pids_get_default() {
        assert_eq!(limits(Some(-1), None).0, 512);
        assert_eq!(limits(Some(0), None).0, 512);
    }

    #[test]
    fn higher_limits_are_clamped_lower_kept() {
        assert_eq!(limits(Some(100_000), Some(64 << 30)).0, 4096);
        assert_eq!(limits(Some(100_000), Some(64 << 30)).1, 16 << 30);
        assert_eq!(limits(Some(64), Some(64 << 20)), (64, 64 << 20, 64 << 20));
    }

    #[test]
    fn raw_unified_pids_override_is_dropped() {
        let mut s = with_limits(None, None);
        let mut u = std::collections::HashMap::new();
        u.insert("pids.max".to_string(), "max".to_string());
        u.insert("cpu.weight".to_string(), "100".to_string());
        s.linux_mut()
            .as_mut()
            .unwrap()
            .resources_mut()
            .as_mut()
            .unwrap()
            .set_unified(Some(u));
        harden_limits(&mut s, &Policy::default(), &mut Changes::default());
        let u = s
            .linux()
            .as_ref()
            .unwrap()
            .resources()
            .as_ref()
            .unwrap()
            .unified()
            .clone()
            .unwrap();
        assert!(!u.contains_key("pids.max"));
        assert!(u.contains_key("cpu.weight"));
    }

    #[test]
    fn oom_killer_cannot_be_disabled() {
        let mut s = with_limits(None, Some(1 << 30));
        let r = s
            .linux_mut()
            .as_mut()
            .unwrap()
            .resources_mut()
            .as_mut()
            .unwrap();
        let mut m = r.memory().unwrap();
        m.set_disable_oom_killer(Some(true));
        r.set_memory(Some(m));
        harden_limits(&mut s, &Policy::default(), &mut Changes::default());
        let m = s
            .linux()
            .as_ref()
            .unwrap()
            .resources()
            .as_ref()
            .unwrap()
            .memory()
            .unwrap();
        assert_eq!(m.disable_oom_killer(), Some(false));
    }

    #[test]
    fn rlimits_are_clamped() {
        let mut s = careless_spec();
        s.process_mut().as_mut().unwrap().set_rlimits(Some(vec![
            rlimit(PosixRlimitType::RlimitNofile, 1_000_000, 1_000_000),
            rlimit(PosixRlimitType::RlimitCore, u64::MAX, u64::MAX),
        ]));
        harden_rlimits(
            s.process_mut().get_or_insert_with(Default::default),
            &Policy::default(),
            &mut Changes::default(),
        );
        let rl = s.process().as_ref().unwrap().rlimits().clone().unwrap();
        let nofile = rl
            .iter()
            .find(|r| r.typ() == PosixRlimitType::RlimitNofile)
            .unwrap();
        assert_eq!((nofile.soft(), nofile.hard()), (65536, 65536));
        let core = rl
            .iter()
            .find(|r| r.typ() == PosixRlimitType::RlimitCore)
            .unwrap();
        assert_eq!((core.soft(), core.hard()), (0, 0));
    }

    #[test]
    fn realtime_and_nice_rlimits_are_zeroed() {
        let mut s = careless_spec();
        s.process_mut().as_mut().unwrap().set_rlimits(Some(vec![
            rlimit(PosixRlimitType::RlimitRtprio, 99, 99),
            rlimit(PosixRlimitType::RlimitNice, 40, 40),
        ]));
        harden_rlimits(
            s.process_mut().get_or_insert_with(Default::default),
            &Policy::default(),
            &mut Changes::default(),
        );
        let rl = s.process().as_ref().unwrap().rlimits().clone().unwrap();
        for t in [PosixRlimitType::RlimitRtprio, PosixRlimitType::RlimitNice] {
            let r: Vec<_> = rl.iter().filter(|r| r.typ() == t).collect();
            assert_eq!(r.len(), 1);
            assert_eq!((r[0].soft(), r[0].hard()), (0, 0));
        }
    }

    #[test]
    fn absent_nofile_gets_default_and_lower_is_kept() {
        let mut s = careless_spec();
        harden_rlimits(
            s.process_mut().get_or_insert_with(Default::default),
            &Policy::default(),
            &mut Changes::default(),
        );
        let rl = s.process().as_ref().unwrap().rlimits().clone().unwrap();
        let nofile = rl
            .iter()
            .find(|r| r.typ() == PosixRlimitType::RlimitNofile)
            .unwrap();
        assert_eq!((nofile.soft(), nofile.hard()), (1024, 1024));
        let mut s = careless_spec();
        s.process_mut()
            .as_mut()
            .unwrap()
            .set_rlimits(Some(vec![rlimit(PosixRlimitType::RlimitNofile, 100, 200)]));
        let mut c = Changes::default();
        harden_rlimits(
            s.process_mut().get_or_insert_with(Default::default),
            &Policy::default(),
            &mut c,
        );
        let rl = s.process().as_ref().unwrap().rlimits().clone().unwrap();
        let nofile = rl
            .iter()
            .find(|r| r.typ() == PosixRlimitType::RlimitNofile)
            .unwrap();
        assert_eq!((nofile.soft(), nofile.hard()), (100, 200));
    }

    // Regression (found by fuzz/harden_spec): with two RLIMIT_NOFILE entries the first was checked and
    // the second, applied last, kept whatever it said.
    #[test]
    fn duplicate_rlimits_leave_one_clamped_entry() {
        let mut s = careless_spec();
        let big = |t, v| rlimit(t, v, v);
        s.process_mut().as_mut().unwrap().set_rlimits(Some(vec![
            big(PosixRlimitType::RlimitNofile, 1024),
            big(PosixRlimitType::RlimitNofile, 1 << 20),
            big(PosixRlimitType::RlimitCore, 0),
            big(PosixRlimitType::RlimitCore, 1 << 20),
        ]));
        harden_rlimits(
            s.process_mut().get_or_insert_with(Default::default),
            &Policy::default(),
            &mut Changes::default(),
        );
        let rl = s.process().as_ref().unwrap().rlimits().clone().unwrap();
        let of = |t| rl.iter().filter(|r| r.typ() == t).collect::<Vec<_>>();
        let nofile = of(PosixRlimitType::RlimitNofile);
        assert_eq!(nofile.len(), 1, "{rl:?}");
        assert_eq!(nofile[0].hard(), 65536);
        let core = of(PosixRlimitType::RlimitCore);
        assert_eq!(core.len(), 1, "{rl:?}");
        assert_eq!((core[0].soft(), core[0].hard()), (0, 0));
    }

    const FS: crate::cgroups::Driver = crate::cgroups::Driver::Cgroupfs;

    /// The cgroups path `given` (or none) becomes under `driver`, and the changes logged.
    fn hardened_cgroups_path(
        given: Option<&str>,
        driver: crate::cgroups::Driver,
    ) -> (String, Vec<crate::harden::Change>) {
        let mut s = careless_spec();
        s.linux_mut()
            .as_mut()
            .unwrap()
            .set_cgroups_path(given.map(Into::into));
        let mut c = Changes::default();
        harden_cgroups_path(&mut s, "c1", &Policy::default(), driver, &mut c);
        let path = s.linux().as_ref().unwrap().cgroups_path().clone().unwrap();
        (path.display().to_string(), c.0)
    }

    #[test]
    fn cgroups_path_made_absolute() {
        assert_eq!(hardened_cgroups_path(None, FS).0, "/rloxsc/c1");
        let (path, changes) = hardened_cgroups_path(Some("/docker/abc"), FS);
        assert_eq!(path, "/docker/abc");
        assert!(changes.is_empty());
    }

    // Regression: `/../../tmp/x` made libcgroups create directories outside cgroupfs (and leave them);
    // `/`, `.` and `/rloxsc/..` named the root or the shared parent cgroup.
    #[test]
    fn cgroups_path_never_leaves_the_cgroup_tree_nor_names_a_shared_cgroup() {
        for (given, want) in [
            ("/../../../../tmp/x", "/rloxsc/tmp-x"),
            ("/", "/rloxsc/c1"),
            ("/rloxsc/..", "/rloxsc/rloxsc"),
            (".", "/rloxsc/c1"),
            ("..", "/rloxsc/c1"),
            ("", "/rloxsc/c1"),
            ("/a/./b", "/rloxsc/a-.-b"),
        ] {
            assert_eq!(hardened_cgroups_path(Some(given), FS).0, want, "{given:?}");
        }
    }

    // Under --systemd-cgroup, Docker's, Podman's and kubelet's unit names are kept (a missing slice
    // written out); anything that is not a scope of its own becomes one, never a path into cgroupfs.
    #[test]
    fn systemd_cgroups_paths_name_a_scope_of_their_own() {
        for (given, want) in [
            ("system.slice:docker:abc", "system.slice:docker:abc"),
            (
                "kubepods-burstable-pod1.slice:cri-containerd:f0",
                "kubepods-burstable-pod1.slice:cri-containerd:f0",
            ),
            (":libpod:x", "system.slice:libpod:x"),
            ("libpod:x", "system.slice:libpod:x"),
            ("/docker/abc", "system.slice:rloxsc:c1"),
            ("system.slice:docker:pod.slice", "system.slice:rloxsc:c1"),
            ("a.slice:../..:x", "system.slice:rloxsc:c1"),
            ("", "system.slice:rloxsc:c1"),
        ] {
            let (path, changes) =
                hardened_cgroups_path(Some(given), crate::cgroups::Driver::Systemd);
            assert_eq!(path, want, "{given:?}");
            assert_eq!(changes.is_empty(), given == want, "{given:?}: {changes:?}");
        }
    }

    #[test]
    fn host_wide_sysctls_are_dropped() {
        let mut s = careless_spec();
        let mut m = std::collections::HashMap::new();
        m.insert("kernel.core_pattern".to_string(), "|/evil".to_string());
        m.insert("net.ipv4.ip_forward".to_string(), "1".to_string());
        s.linux_mut().as_mut().unwrap().set_sysctl(Some(m));
        harden_sysctls(&mut s, &mut Changes::default());
        let m = s.linux().as_ref().unwrap().sysctl().clone().unwrap();
        assert!(!m.contains_key("kernel.core_pattern"));
        assert!(m.contains_key("net.ipv4.ip_forward"));
    }
}

#[cfg(test)]
mod unified_tests {
    use super::*;
    use crate::harden::testutil::{careless_spec, facts};

    #[test]
    fn unified_is_refused_on_cgroup_v1_only() {
        let mut s = careless_spec();
        let mut r = s
            .linux()
            .as_ref()
            .and_then(|l| l.resources().clone())
            .unwrap_or_default();
        let mut u = std::collections::HashMap::new();
        u.insert("memory.min".to_string(), "131072".to_string());
        r.set_unified(Some(u));
        s.linux_mut().as_mut().unwrap().set_resources(Some(r));
        let mut v1 = facts();
        v1.cgroup_v1_hierarchies = vec!["memory".into(), "pids".into()];
        let e = refuse_unified_on_v1(&s, &v1).unwrap_err();
        assert_eq!(e.key, keys::UNIFIED);
        assert!(e.reason.starts_with("invalid configuration"), "{e}");
        assert!(e.reason.contains("memory.min"), "{e}");
        let mut v2 = facts();
        v2.cgroup_v1_hierarchies = vec![];
        assert!(refuse_unified_on_v1(&s, &v2).is_ok());
        assert!(refuse_unified_on_v1(&careless_spec(), &v1).is_ok());
    }
}

#[cfg(test)]
mod update_tests {
    use super::*;

    fn req(json: &str) -> LinuxResources {
        serde_json::from_str(json).unwrap()
    }

    fn current() -> LinuxResources {
        req(r#"{"memory":{"limit":536870912,"swap":536870912},"pids":{"limit":512}}"#)
    }

    #[test]
    fn ceilings_clamp_and_unlimited_becomes_the_ceiling() {
        let p = Policy::default();
        let (out, ch) = clamp_update(
            &req(r#"{"pids":{"limit":100000},"memory":{"limit":68719476736}}"#),
            &current(),
            &p,
        );
        assert_eq!(out.pids().unwrap().limit(), 4096);
        assert_eq!(out.memory().unwrap().limit(), Some(16 << 30));
        assert_eq!(out.memory().unwrap().swap(), Some(16 << 30));
        assert_eq!(ch.len(), 2);
        let (out, _) = clamp_update(
            &req(r#"{"pids":{"limit":-1},"memory":{"limit":-1}}"#),
            &current(),
            &p,
        );
        assert_eq!(out.pids().unwrap().limit(), 4096);
        assert_eq!(out.memory().unwrap().limit(), Some(16 << 30));
    }

    #[test]
    fn lower_values_pass_and_zero_means_unset() {
        let p = Policy::default();
        let (out, ch) = clamp_update(
            &req(r#"{"pids":{"limit":64},"memory":{"limit":67108864}}"#),
            &current(),
            &p,
        );
        assert_eq!(out.pids().unwrap().limit(), 64);
        assert_eq!(out.memory().unwrap().limit(), Some(64 << 20));
        assert_eq!(out.memory().unwrap().swap(), Some(64 << 20));
        assert!(ch.is_empty(), "{ch:?}");
        let (out, _) = clamp_update(
            &req(r#"{"memory":{"limit":0,"swap":0,"kernel":0},"pids":{"limit":0}}"#),
            &current(),
            &p,
        );
        assert!(out.memory().is_none(), "{out:?}");
        assert!(out.pids().is_none(), "{out:?}");
    }

    /// `docker update --memory 64m --memory-swap 128m --pids-limit 40`: the JSON Docker 20.10 sends
    /// on stdin (`update --resources -`), zeros for everything it does not change.
    const DOCKER_MEMORY_PIDS: &str = r#"{"memory":{"limit":67108864,"swap":134217728},"cpu":{"shares":0,"quota":0,"period":0},"pids":{"limit":40},"blockIO":{"weight":0}}"#;
    /// `docker update --cpus 0.5`.
    const DOCKER_CPUS: &str =
        r#"{"memory":{},"cpu":{"shares":0,"quota":50000,"period":100000},"blockIO":{"weight":0}}"#;
    /// containerd's CRI `UpdateContainerResources` (a pod with a 128 MiB limit and no CPU limit):
    /// the whole resources of the container, `quota` 0, empty cpuset strings, the device rules.
    const CRI_UPDATE: &str = r#"{"devices":[{"allow":false,"access":"rwm"}],"memory":{"limit":134217728,"swap":134217728},"cpu":{"shares":2,"quota":0,"period":100000,"cpus":"","mems":""},"hugepageLimits":[]}"#;

    #[test]
    fn dockers_and_the_cris_update_json_changes_only_what_they_set() {
        let p = Policy::default();
        let (out, ch) = clamp_update(&req(DOCKER_MEMORY_PIDS), &current(), &p);
        assert_eq!(out.memory().unwrap().limit(), Some(64 << 20));
        // swap never above memory: clamped, and said so
        assert_eq!(out.memory().unwrap().swap(), Some(64 << 20));
        assert!(ch.iter().any(|c| c.key == keys::MEMORY), "{ch:?}");
        assert_eq!(out.pids().unwrap().limit(), 40);
        assert!(out.cpu().is_none(), "zeros are not a cpu update: {out:?}");
        assert!(
            out.block_io().is_none(),
            "weight 0 is not a blkio update: {out:?}"
        );

        let (out, ch) = clamp_update(&req(DOCKER_CPUS), &current(), &p);
        assert!(ch.is_empty(), "{ch:?}");
        let cpu = out.cpu().as_ref().unwrap();
        assert_eq!(
            (cpu.shares(), cpu.quota(), cpu.period()),
            (None, Some(50000), Some(100000))
        );
        assert!(out.memory().is_none() && out.pids().is_none() && out.block_io().is_none());

        let (out, ch) = clamp_update(&req(CRI_UPDATE), &current(), &p);
        assert!(ch.iter().all(|c| c.key == keys::DEVICES), "{ch:?}");
        let cpu = out.cpu().as_ref().unwrap();
        assert_eq!(
            (cpu.shares(), cpu.quota(), cpu.period()),
            (Some(2), None, Some(100000))
        );
        assert_eq!((cpu.cpus().clone(), cpu.mems().clone()), (None, None));
        assert_eq!(out.memory().unwrap().limit(), Some(128 << 20));
        assert!(out.devices().is_none());
    }

    #[test]
    fn minus_one_is_unlimited_then_the_ceiling() {
        let p = Policy::default();
        let (out, ch) = clamp_update(
            &req(r#"{"memory":{"swap":-1},"pids":{"limit":-1},"cpu":{"quota":-1}}"#),
            &current(),
            &p,
        );
        // unlimited swap: never above the memory limit the container has
        assert_eq!(out.memory().unwrap().swap(), Some(512 << 20));
        assert_eq!(out.pids().unwrap().limit(), 4096);
        // no CPU limit widens nothing rloxsc limits
        assert_eq!(out.cpu().as_ref().unwrap().quota(), Some(-1));
        assert_eq!(ch.len(), 2, "{ch:?}");
    }

    #[test]
    fn swap_above_memory_is_clamped() {
        let (out, ch) = clamp_update(
            &req(r#"{"memory":{"swap":1073741824}}"#),
            &current(),
            &Policy::default(),
        );
        assert_eq!(out.memory().unwrap().swap(), Some(512 << 20));
        assert_eq!(ch.len(), 1);
    }

    #[test]
    fn devices_are_never_widened() {
        let (out, ch) = clamp_update(
            &req(r#"{"devices":[{"allow":true,"access":"rwm"}]}"#),
            &current(),
            &Policy::default(),
        );
        assert!(out.devices().is_none());
        assert_eq!(ch[0].key, keys::DEVICES);
    }
}
