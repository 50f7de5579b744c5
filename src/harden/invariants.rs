//! The hardening invariants: every property of rloxsc's hardened default that a hardened spec itself
//! carries, stated once, independently of the steps that establish them. [`check`] runs on every
//! spec [`super::harden`] produces (a broken invariant is a refusal under [`KEY`], never a running
//! container); the fuzz targets (`fuzz/`) and the corpus replay test call the same functions.
//!
//! seccomp is not part of it: rloxsc's own filter is installed by the executor in every container
//! process (and verified from outside), whatever the spec says.

use std::collections::HashSet;
use std::path::{Component, Path, PathBuf};

use oci_spec::runtime::{Capability, Mount, PosixRlimitType, Spec};

use super::HostFacts;
use crate::policy::{self, Policy};
use crate::specmount::is_bind;

/// The policy key a broken invariant is reported under.
pub const KEY: &str = crate::policy::keys::INVARIANTS;

fn opts(m: &Mount) -> Vec<String> {
    m.options().clone().unwrap_or_default()
}

fn has(o: &[String], f: &str) -> bool {
    o.iter().any(|x| x == f)
}

fn size_of(o: &[String]) -> Option<u64> {
    let s = o.iter().find_map(|x| x.strip_prefix("size="))?;
    let (n, m) = match s.chars().last()? {
        'k' | 'K' => (&s[..s.len() - 1], 1024u64),
        'm' | 'M' => (&s[..s.len() - 1], 1 << 20),
        'g' | 'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    n.parse::<u64>().ok()?.checked_mul(m)
}

fn sensitive(src: &Path, facts: &HostFacts) -> bool {
    let name = src.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if policy::SENSITIVE_SOCKET_NAMES.contains(&name) {
        return true;
    }
    let mut paths: Vec<PathBuf> = policy::SENSITIVE_HOST_PATHS
        .iter()
        .map(PathBuf::from)
        .collect();
    paths.push(facts.runtime_root.clone());
    paths.iter().any(|s| s.starts_with(src))
        || policy::SENSITIVE_HOST_TREES
            .iter()
            .any(|t| src.starts_with(t))
        || src.starts_with(&facts.runtime_root)
}

/// Every property of rloxsc's hardened default that the spec itself carries: each area's in turn.
pub fn check(spec: &Spec, policy: &Policy, facts: &HostFacts) -> Result<(), String> {
    let linux = spec.linux().as_ref().ok_or("no linux section")?;
    check_namespaces(linux, facts)?;
    check_root(spec, linux, facts)?;
    check_process(spec.process().as_ref().ok_or("no process")?, policy)?;
    check_resources(linux, policy, facts)?;
    check_paths(linux)?;
    check_mounts(spec, policy, facts)
}

/// Namespaces: each required one exactly once, none of the host's, every path resolvable.
fn check_namespaces(linux: &oci_spec::runtime::Linux, facts: &HostFacts) -> Result<(), String> {
    let nss = linux.namespaces().clone().unwrap_or_default();
    for t in super::namespaces::required_namespaces(facts) {
        let n = nss.iter().filter(|n| n.typ() == t).count();
        if n != 1 {
            return Err(format!("{t} namespace listed {n} times"));
        }
    }
    for ns in &nss {
        if let Some(p) = ns.path() {
            match facts.namespace_paths.get(p) {
                None => return Err(format!("unresolvable {} namespace path {p:?}", ns.typ())),
                Some(id) if facts.host_namespaces.get(&ns.typ()) == Some(id) => {
                    return Err(format!("joins the host's {} namespace", ns.typ()))
                }
                _ => {}
            }
        }
    }
    if linux.net_devices().as_ref().is_some_and(|d| !d.is_empty()) {
        return Err("host network devices moved in".into());
    }

    Ok(())
}

/// The root: read-only, the checked rootfs, never shared propagation.
fn check_root(
    spec: &Spec,
    linux: &oci_spec::runtime::Linux,
    facts: &HostFacts,
) -> Result<(), String> {
    let root = spec.root().as_ref().ok_or("no root")?;
    if root.readonly() != Some(true) {
        return Err("root not read-only".into());
    }
    if root.path() != &facts.rootfs {
        return Err(format!(
            "root path {:?} is not the checked rootfs",
            root.path()
        ));
    }

    if root.readonly() == Some(true)
        && linux
            .rootfs_propagation()
            .as_deref()
            .is_some_and(|p| p == "shared" || p == "rshared")
    {
        return Err("shared rootfs propagation".into());
    }
    Ok(())
}

/// The process: no_new_privs, capabilities, oom_score_adj, rlimits.
fn check_process(p: &oci_spec::runtime::Process, policy: &Policy) -> Result<(), String> {
    if p.no_new_privileges() != Some(true) {
        return Err("no_new_privileges not set".into());
    }
    let allowed: HashSet<Capability> = policy.allowed_capabilities().into_iter().collect();
    let caps = p.capabilities().as_ref().ok_or("no capabilities")?;
    let sets = [
        ("bounding", caps.bounding()),
        ("effective", caps.effective()),
        ("permitted", caps.permitted()),
        ("inheritable", caps.inheritable()),
        ("ambient", caps.ambient()),
    ];
    for (name, set) in &sets {
        let set = set.as_ref().ok_or(format!("{name} set absent"))?;
        if let Some(c) = set.iter().find(|c| !allowed.contains(c)) {
            return Err(format!("{name} set holds {c}, outside the policy"));
        }
        if let Some(c) = set
            .iter()
            .find(|c| policy::FORBIDDEN_CAPABILITIES.contains(c))
        {
            return Err(format!("{name} set holds forbidden {c}"));
        }
    }
    if p.oom_score_adj().is_some_and(|v| v < 0) {
        return Err("negative oom_score_adj".into());
    }
    let rl = p.rlimits().clone().unwrap_or_default();
    let nofile: Vec<_> = rl
        .iter()
        .filter(|r| r.typ() == PosixRlimitType::RlimitNofile)
        .collect();
    if nofile.len() != 1 {
        return Err(format!(
            "{} RLIMIT_NOFILE entries (the last one wins)",
            nofile.len()
        ));
    }
    if nofile[0].hard() > policy.nofile.ceiling || nofile[0].soft() > nofile[0].hard() {
        return Err(format!(
            "RLIMIT_NOFILE {}/{} above the ceiling {}",
            nofile[0].soft(),
            nofile[0].hard(),
            policy.nofile.ceiling
        ));
    }
    if let Some(limit) = crate::limits::rules::expected_file_size(policy) {
        let fsize: Vec<_> = rl
            .iter()
            .filter(|r| r.typ() == PosixRlimitType::RlimitFsize)
            .collect();
        if fsize.len() != 1 || fsize[0].hard() > limit || fsize[0].soft() > fsize[0].hard() {
            return Err(format!(
                "RLIMIT_FSIZE is not one entry at most {limit} (limits.file_size)"
            ));
        }
    }
    let core: Vec<_> = rl
        .iter()
        .filter(|r| r.typ() == PosixRlimitType::RlimitCore)
        .collect();
    if core.len() != 1 || core[0].soft() != 0 || core[0].hard() != 0 {
        return Err("RLIMIT_CORE is not exactly one 0/0 entry".into());
    }

    Ok(())
}

/// The cgroup limits, device rules and nodes, the cgroup path and sysctls.
fn check_resources(
    linux: &oci_spec::runtime::Linux,
    policy: &Policy,
    facts: &HostFacts,
) -> Result<(), String> {
    let res = linux.resources().as_ref().ok_or("no resources")?;
    let pids = res
        .pids()
        .as_ref()
        .map(|p| p.limit())
        .ok_or("no pids limit")?;
    if pids < 1 || pids as u64 > policy.pids.ceiling {
        return Err(format!(
            "pids limit {pids} outside 1..={}",
            policy.pids.ceiling
        ));
    }
    let mem = res.memory().as_ref().ok_or("no memory limit")?;
    let limit = mem.limit().ok_or("no memory limit")?;
    if limit < 1 || limit as u64 > policy.memory_bytes.ceiling {
        return Err(format!("memory limit {limit} outside the ceiling"));
    }
    if mem.swap() != Some(limit) {
        return Err(format!(
            "memory+swap {:?} is not the memory limit {limit}",
            mem.swap()
        ));
    }
    if mem.reservation().is_some_and(|r| r > limit) || mem.disable_oom_killer() == Some(true) {
        return Err("memory reservation above the limit or OOM killer disabled".into());
    }
    if let Some(u) = res.unified() {
        if let Some(k) = u
            .keys()
            .find(|k| !super::resources::is_allowed_unified_key(k))
        {
            return Err(format!("raw cgroup v2 key {k} kept"));
        }
    }
    if res.devices().as_ref() != Some(&super::devices::device_rules()) {
        return Err("device cgroup rules are not deny-all plus the allowed set".into());
    }
    for d in linux.devices().iter().flatten() {
        if d.typ() != oci_spec::runtime::LinuxDeviceType::C
            || !super::devices::is_allowed_char_device(d.major(), d.minor())
        {
            return Err(format!("device node {:?} kept", d.path()));
        }
    }
    let cg = linux.cgroups_path().as_ref().ok_or("no cgroupsPath")?;
    if facts.cgroup_driver == crate::cgroups::Driver::Systemd {
        crate::cgroups::placement::systemd_unit(&cg.to_string_lossy())
            .map_err(|e| format!("cgroupsPath is not a systemd scope of its own: {e}"))?;
    } else if !cg.is_absolute()
        || !cg.components().any(|c| matches!(c, Component::Normal(_)))
        || cg
            .components()
            .any(|c| matches!(c, Component::ParentDir | Component::CurDir))
    {
        return Err(format!("cgroupsPath {cg:?} is not a cgroup below the root"));
    }
    for k in linux.sysctl().iter().flat_map(|s| s.keys()) {
        if !super::resources::is_namespaced_sysctl(k) {
            return Err(format!("host-wide sysctl {k} kept"));
        }
    }

    Ok(())
}

/// Masked and read-only paths.
fn check_paths(linux: &oci_spec::runtime::Linux) -> Result<(), String> {
    let masked = linux.masked_paths().clone().unwrap_or_default();
    let ro = linux.readonly_paths().clone().unwrap_or_default();
    for m in policy::MASKED_PATHS {
        if !masked.iter().any(|x| x == m) {
            return Err(format!("{m} not masked"));
        }
    }
    for r in policy::READONLY_PATHS {
        if !ro.iter().any(|x| x == r) {
            return Err(format!("{r} not read-only"));
        }
    }

    Ok(())
}

/// The mounts: /proc, /sys and /dev present; each one by its kind.
fn check_mounts(spec: &Spec, policy: &Policy, facts: &HostFacts) -> Result<(), String> {
    let mounts = spec.mounts().clone().unwrap_or_default();
    for need in ["/proc", "/sys", "/dev"] {
        if !mounts.iter().any(|m| m.destination() == Path::new(need)) {
            return Err(format!("no mount at {need}"));
        }
    }
    for m in &mounts {
        let o = opts(m);
        let dest = m.destination().display().to_string();
        if super::filesystem::is_writable_path(m) {
            check_writable_path(m, &o, &dest)?;
        } else if is_bind(m) {
            check_bind(m, &o, &dest, policy, facts)?;
        } else {
            check_kernel_mount(m, &o, &dest, policy)?;
        }
    }
    Ok(())
}

/// rloxsc's own writable path: never a system path, never without nosuid,nodev.
fn check_writable_path(m: &Mount, o: &[String], dest: &str) -> Result<(), String> {
    if crate::policy::is_system_path(&crate::paths::normal_abs(Path::new(&dest))) {
        return Err(format!("writable path at the system path {dest}"));
    }
    if m.source().as_deref() != Some(Path::new(super::filesystem::WRITABLE_SOURCE)) {
        return Err(format!("writable path at {dest} with a source of its own"));
    }
    if !has(o, "nosuid") || !has(o, "nodev") || !has(o, "rnosuid") || !has(o, "rnodev") {
        return Err(format!(
            "writable path at {dest} without nosuid,nodev: {o:?}"
        ));
    }
    Ok(())
}

/// A bind: an absolute, non-sensitive source, nosuid,nodev to the bottom, never shared, read-only
/// under `writable_binds = false`.
fn check_bind(
    m: &Mount,
    o: &[String],
    dest: &str,
    policy: &Policy,
    facts: &HostFacts,
) -> Result<(), String> {
    let src = m.source().clone().unwrap_or_default();
    if !src.is_absolute() {
        return Err(format!("bind onto {dest} from relative source {src:?}"));
    }
    let canonical = facts
        .canonical_sources
        .get(&src)
        .cloned()
        .unwrap_or(src.clone());
    if sensitive(&canonical, facts) {
        return Err(format!("bind of sensitive {canonical:?} onto {dest}"));
    }
    let writable = !has(o, "ro");
    if writable
        && facts
            .runtime_binaries
            .iter()
            .any(|b| *b == canonical || b.parent().is_some_and(|d| d.starts_with(&canonical)))
    {
        return Err(format!(
            "writable bind of {canonical:?}, which holds the runtime's binary"
        ));
    }
    if !has(o, "nosuid") || !has(o, "nodev") || has(o, "suid") || has(o, "dev") {
        return Err(format!("bind onto {dest} without nosuid,nodev: {o:?}"));
    }
    // the plain flags reach the top mount only; an rbind's submounts need the recursive ones
    if !has(o, "rnosuid") || !has(o, "rnodev") || has(o, "rsuid") || has(o, "rdev") {
        return Err(format!("bind onto {dest} without rnosuid,rnodev: {o:?}"));
    }
    if !policy.writable_binds && (!has(o, "ro") || has(o, "rw") || !has(o, "rro") || has(o, "rrw"))
    {
        return Err(format!(
            "writable bind onto {dest} under writable_binds = false"
        ));
    }
    if has(o, "shared") || has(o, "rshared") {
        return Err(format!("shared bind onto {dest}"));
    }
    Ok(())
}

/// A kernel filesystem's mount: an allowed type with the flags its type needs.
fn check_kernel_mount(m: &Mount, o: &[String], dest: &str, policy: &Policy) -> Result<(), String> {
    let typ = m.typ().clone().unwrap_or_default();
    if let Some(x) = ["rrw", "rsuid", "rdev", "rexec"].iter().find(|x| has(o, x)) {
        return Err(format!("{typ} at {dest} keeps the recursive {x}"));
    }
    if !super::filesystem::KERNEL_MOUNT_TYPES.contains(&typ.as_str()) {
        return Err(format!("mount of type {typ:?} onto {dest}"));
    }
    match typ.as_str() {
        "proc" if dest != "/proc" => return Err(format!("extra proc mount at {dest}")),
        "sysfs" | "cgroup" | "cgroup2" if !has(o, "ro") || has(o, "rw") => {
            return Err(format!("{typ} at {dest} not read-only"));
        }
        "tmpfs" => {
            if !has(o, "nosuid") || has(o, "suid") {
                return Err(format!("tmpfs at {dest} without nosuid"));
            }
            if dest != "/dev" && (!has(o, "nodev") || has(o, "dev")) {
                return Err(format!("tmpfs at {dest} without nodev"));
            }
            match size_of(o) {
                Some(s) if s > 0 && s <= policy.tmpfs_bytes.ceiling => {}
                s => return Err(format!("tmpfs at {dest} of size {s:?}")),
            }
        }
        "devpts" | "mqueue" if !has(o, "nosuid") || !has(o, "noexec") || has(o, "exec") => {
            return Err(format!("{typ} at {dest} without nosuid,noexec"));
        }
        "devpts" => {
            let max = o
                .iter()
                .find_map(|x| x.strip_prefix("max="))
                .and_then(|v| v.parse::<u64>().ok());
            if !max.is_some_and(|m| m >= 1 && m <= policy.ptys.ceiling) {
                return Err(format!("devpts at {dest} with pty max {max:?}"));
            }
        }
        _ => {}
    }
    Ok(())
}

/// The hard bounds of `policy_file`, which no accepted file may cross.
pub fn check_policy(p: &Policy) -> Result<(), String> {
    use crate::policy::bounds;
    let lim = |name: &str, l: policy::Limit, min: u64, max: u64| {
        if l.default < min || l.default > l.ceiling || l.ceiling == 0 || l.ceiling > max {
            Err(format!("limits.{name} {l:?} outside {min}..={max}"))
        } else {
            Ok(())
        }
    };
    lim("pids", p.pids, 1, bounds::PIDS_MAX)?;
    lim(
        "memory",
        p.memory_bytes,
        bounds::MEMORY_MIN,
        bounds::MEMORY_MAX,
    )?;
    lim("nofile", p.nofile, 16, bounds::NOFILE_MAX)?;
    lim("tmpfs", p.tmpfs_bytes, 1 << 20, bounds::TMPFS_MAX)?;
    lim("ptys", p.ptys, 1, bounds::PTYS_MAX)?;
    if let Some(c) = p
        .capabilities
        .iter()
        .find(|c| policy::FORBIDDEN_CAPABILITIES.contains(c))
    {
        return Err(format!("forbidden capability {c} accepted"));
    }
    if let Some(s) = p
        .extra_syscalls
        .iter()
        .find(|s| crate::seccomp::allowlist::NEVER_ALLOWED.contains(&s.as_str()))
    {
        return Err(format!("never-allowed syscall {s} accepted"));
    }
    let parent = Path::new(&p.cgroup_parent);
    if !parent.is_absolute()
        || !parent
            .components()
            .any(|c| matches!(c, Component::Normal(_)))
        || parent
            .components()
            .any(|c| matches!(c, Component::ParentDir))
        || p.cgroup_parent.split('/').any(|c| c == ".")
    {
        return Err(format!(
            "cgroups.parent {:?} is not below the root",
            p.cgroup_parent
        ));
    }
    if p.records_dir.as_ref().is_some_and(|d| !d.is_absolute()) {
        return Err("relative records.dir accepted".into());
    }
    Ok(())
}
