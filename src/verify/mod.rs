//! Verification from outside: before a container's payload may run, rloxsc reads what the kernel says
//! about the container's processes (`/proc/<pid>/...`, the cgroup files) and compares it with the
//! hardened spec and the container's effective policy. Two halves: [`observe`] does the reading (I/O
//! only, through `procfs`), [`judge`] the comparison (pure, unit-tested). Any mismatch is a
//! [`Failure`] naming what is missing and the policy key that governs it.

use std::fmt;
use std::path::{Path, PathBuf};

use oci_spec::runtime::{LinuxNamespaceType, Spec};

use crate::facts::{ns_file, ns_id};
use crate::harden::namespaces::required_namespaces;
use crate::harden::privileges::allowed_capability_mask;
use crate::harden::HostFacts;
use crate::idmap::parse_id_map;
use crate::policy::{keys, NetworkMode, Policy};

mod mounts;
mod resources;

use mounts::observe_store;
pub use mounts::{check_mounts, check_store, parse_mountinfo, MountLine, StoreFacts};
pub use resources::{check_cgroups, check_devices_list, check_rlimits, CgroupFacts, RlimitFacts};
use resources::{limit_pair, observe_cgroup};

/// One containment property that did not hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The policy key that governs the property.
    pub key: &'static str,
    /// What was found.
    pub what: String,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (policy key {})", self.what, self.key)
    }
}

pub(super) fn fail(key: &'static str, what: impl Into<String>) -> Failure {
    Failure {
        key,
        what: what.into(),
    }
}

/// One line of a `uid_map`/`gid_map`: (inside, outside, count).
pub type IdRange = (u64, u64, u64);

/// What rloxsc reads about one container process from the kernel, before judging it. Every field is
/// either what was read or why it could not be read; [`judge`] turns both into failures.
#[derive(Debug, Clone)]
pub struct Observation {
    /// The process observed.
    pub pid: i32,
    /// Its `/proc/<pid>/status`.
    pub status: Result<StatusFacts, String>,
    /// (device, inode) of each namespace asked about (`None`: unreadable).
    pub namespaces: Vec<(LinuxNamespaceType, Option<(u64, u64)>)>,
    /// How its executable is protected (CVE-2019-5736).
    pub exe: crate::exeseal::Sealing,
    /// The interfaces of its network namespace.
    pub interfaces: Result<Vec<String>, String>,
    /// The egress filter of its network namespace, when the probe asked for it (`inbound-only`).
    pub egress_filter: Option<Result<Option<crate::network::nftables::Installed>, String>>,
    /// Its visible mounts.
    pub mounts: Result<Vec<MountLine>, String>,
    /// The probed paths (masked and read-only ones) that exist in its root.
    pub existing_paths: std::collections::BTreeSet<String>,
    /// Its rlimits.
    pub rlimits: Result<RlimitFacts, String>,
    /// Its cgroup limit files.
    pub cgroup: Result<CgroupFacts, String>,
    /// The v1 `devices.list` of its device cgroup (absent on v2).
    pub devices_list: Option<String>,
    /// Every process in its cgroup, with what their status says (pid, seccomp mode, filters).
    pub cgroup_processes: Vec<ProcessSeccomp>,
    /// Its `/proc/<pid>/oom_score_adj`.
    pub oom_score_adj: Result<i32, String>,
    /// Its `/proc/<pid>/uid_map` and `gid_map` as (inside, outside, count) triples.
    pub id_maps: Result<(Vec<IdRange>, Vec<IdRange>), String>,
    /// Its root overlay and the store under it, as the host sees the store.
    pub store: Result<StoreFacts, String>,
}

/// The fields of `/proc/<pid>/status` verification needs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatusFacts {
    /// NoNewPrivs.
    pub no_new_privs: Option<u64>,
    /// Seccomp mode (2 = filter).
    pub seccomp: Option<u32>,
    /// Seccomp_filters: how many filters are attached.
    pub seccomp_filters: Option<u32>,
    /// CapInh, CapPrm, CapEff, CapBnd, CapAmb.
    pub caps: [(&'static str, Option<u64>); 5],
    /// Real, effective, saved and filesystem uid, as the host sees them.
    pub uids: Option<[u32; 4]>,
    /// Whether the process has an address space (a zombie or a process inside exit() has none).
    pub has_mm: bool,
}

/// One process of a container's cgroup, as far as seccomp is concerned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessSeccomp {
    /// Its pid.
    pub pid: i32,
    /// Its status (`None`: gone while read).
    pub status: Option<StatusFacts>,
}

/// What [`observe`] is asked to look at beyond the fixed files: the namespaces that must be the
/// container's own and the paths (masked, read-only) whose existence in the container's root matters.
#[derive(Debug, Clone, Default)]
pub struct Probe {
    /// Namespaces to read.
    pub namespaces: Vec<LinuxNamespaceType>,
    /// Paths inside the container whose existence is checked.
    pub paths: Vec<String>,
    /// Whether to read the egress filter of its network namespace back.
    pub egress_filter: bool,
    /// Where the container's writes were made to land (`None`: its root is not judged).
    pub writes: Option<crate::rootfs::Writes>,
    /// What create bounded them with (`limits.disk`), and the client's upper layer as rloxsc keeps
    /// it (in its state directory), where the host shows the bound.
    pub disk: Option<(crate::limits::disk::Bound, Option<PathBuf>)>,
}

impl Probe {
    /// What to probe for a container created from `spec` on a host with `facts`.
    pub fn for_spec(spec: &Spec, facts: &HostFacts) -> Probe {
        let mut paths: Vec<String> = ["/proc/sys", "/proc/sysrq-trigger"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        if let Some(m) = spec.linux().as_ref().and_then(|l| l.masked_paths().clone()) {
            paths.extend(m);
        }
        Probe {
            namespaces: required_namespaces(facts),
            paths,
            egress_filter: false,
            writes: None,
            disk: None,
        }
    }
}

pub(super) fn read_text(path: &Path) -> Result<String, String> {
    crate::fsutil::read_small_string(path).map_err(|e| format!("{}: {e}", path.display()))
}

/// Parses the fields of a `/proc/<pid>/status` text that verification needs (with `procfs`; the
/// seccomp filter count, which `procfs` does not know, with a local lookup).
pub fn parse_status(text: &str) -> Result<StatusFacts, String> {
    use procfs::FromBufRead;
    let st = procfs::process::Status::from_buf_read(text.as_bytes()).map_err(|e| e.to_string())?;
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse::<u32>().ok())
    };
    Ok(StatusFacts {
        no_new_privs: st.nonewprivs,
        seccomp: st.seccomp,
        seccomp_filters: field("Seccomp_filters:"),
        caps: [
            ("CapInh", Some(st.capinh)),
            ("CapPrm", Some(st.capprm)),
            ("CapEff", Some(st.capeff)),
            ("CapBnd", st.capbnd),
            ("CapAmb", st.capamb),
        ],
        uids: Some([st.ruid, st.euid, st.suid, st.fuid]),
        has_mm: text.lines().any(|l| l.starts_with("VmSize:")),
    })
}

/// The status of process `pid`, read through an open `/proc/<pid>` directory.
pub fn observe_status(pid: i32) -> Result<StatusFacts, String> {
    read_text(&PathBuf::from(format!("/proc/{pid}/status"))).and_then(|t| parse_status(&t))
}

/// Reads what the kernel says about the container process `pid` (I/O only; no judgement).
pub fn observe(pid: i32, probe: &Probe) -> Observation {
    let proc_dir = PathBuf::from(format!("/proc/{pid}"));
    let process = procfs::process::Process::new(pid).map_err(|e| format!("/proc/{pid}: {e}"));
    let status = observe_status(pid);
    let namespaces = probe
        .namespaces
        .iter()
        .map(|t| (*t, ns_id(&proc_dir.join("ns").join(ns_file(*t)))))
        .collect();
    let interfaces = observe_interfaces(pid, &process);
    let mounts: Result<Vec<MountLine>, String> = crate::mountinfo::of_pid(pid)
        .map(|m| m.into_iter().map(MountLine::from).collect())
        .map_err(|e| format!("{e:#}"));
    let rlimits = observe_rlimits(pid, &process);
    let existing_paths = observe_existing_paths(&proc_dir, &probe.paths);
    let cgroups = observe_cgroups(pid, &status);
    let id_maps = read_text(&proc_dir.join("uid_map")).and_then(|u| {
        read_text(&proc_dir.join("gid_map")).map(|g| (parse_id_map(&u), parse_id_map(&g)))
    });
    let oom_score_adj = read_text(&proc_dir.join("oom_score_adj")).and_then(|t| {
        t.trim()
            .parse::<i32>()
            .map_err(|e| format!("/proc/{pid}/oom_score_adj: {e}"))
    });
    let store = observe_store_facts(&mounts, probe);
    Observation {
        pid,
        id_maps,
        store,
        oom_score_adj,
        status,
        namespaces,
        exe: crate::exeseal::sealing_of(&proc_dir.join("exe")),
        egress_filter: (probe.egress_filter
            && interfaces
                .as_ref()
                .map_or(true, |i| crate::network::needs_filter(i)))
        .then(|| crate::network::observe_filter(pid)),
        interfaces,
        mounts,
        existing_paths,
        rlimits,
        cgroup: cgroups.cgroup,
        devices_list: cgroups.devices_list,
        cgroup_processes: cgroups.processes,
    }
}

/// The interfaces of the network namespace of process `pid` (inert ones marked).
fn observe_interfaces(
    pid: i32,
    process: &Result<procfs::process::Process, String>,
) -> Result<Vec<String>, String> {
    process.as_ref().map_err(Clone::clone).and_then(|p| {
        p.dev_status()
            .map(|d| crate::network::mark_inert(pid, d.into_keys().collect()))
            .map_err(|e| format!("/proc/{pid}/net/dev: {e}"))
    })
}

/// The rlimits of process `pid` that verification judges.
fn observe_rlimits(
    pid: i32,
    process: &Result<procfs::process::Process, String>,
) -> Result<RlimitFacts, String> {
    process.as_ref().map_err(Clone::clone).and_then(|p| {
        p.limits()
            .map(|l| RlimitFacts {
                nofile: limit_pair(&l.max_open_files),
                core: limit_pair(&l.max_core_file_size),
                rtprio: limit_pair(&l.max_realtime_priority),
                nice: limit_pair(&l.max_nice_priority),
                fsize: limit_pair(&l.max_file_size),
            })
            .map_err(|e| format!("/proc/{pid}/limits: {e}"))
    })
}

/// Which of the probed `paths` exist in the root of the process at `proc_dir`.
fn observe_existing_paths(proc_dir: &Path, paths: &[String]) -> std::collections::BTreeSet<String> {
    paths
        .iter()
        .filter(|p| {
            proc_dir
                .join("root")
                .join(p.trim_start_matches('/'))
                .exists()
        })
        .cloned()
        .collect()
}

/// What [`observe_cgroups`] reads from a process's cgroup.
struct CgroupObservation {
    /// Its cgroup limit files.
    cgroup: Result<CgroupFacts, String>,
    /// The v1 `devices.list` of its device cgroup (absent on v2).
    devices_list: Option<String>,
    /// Every process in the cgroup, with its seccomp status.
    processes: Vec<ProcessSeccomp>,
}

/// The cgroup of process `pid`: its limit files, v1 device list and processes (`status`: the one
/// of `pid` itself, already read).
fn observe_cgroups(pid: i32, status: &Result<StatusFacts, String>) -> CgroupObservation {
    let cgroups = crate::cgroups::ProcessCgroups::of(pid);
    let cgroup = match &cgroups {
        Some(cg) => Ok(observe_cgroup(cg)),
        None => Err(format!("cannot read /proc/{pid}/cgroup")),
    };
    let devices_list = cgroups
        .as_ref()
        .and_then(|cg| cg.v1_dir("devices"))
        .and_then(|d| crate::fsutil::read_small_string(d.join("devices.list")).ok());
    let processes = cgroups
        .as_ref()
        .and_then(|cg| cg.procs_dir())
        .map(|d| crate::cgroups::procs_in(&d))
        .unwrap_or_default()
        .into_iter()
        .map(|p| ProcessSeccomp {
            pid: p,
            // the init's own status was read just above: once is enough
            status: if p == pid {
                status.as_ref().ok().cloned()
            } else {
                observe_status(p).ok()
            },
        })
        .collect();
    CgroupObservation {
        cgroup,
        devices_list,
        processes,
    }
}

/// The container's store as its `mounts` show it, with the disk bound the probe asks about.
fn observe_store_facts(
    mounts: &Result<Vec<MountLine>, String>,
    probe: &Probe,
) -> Result<StoreFacts, String> {
    match mounts {
        Ok(m) => {
            let seen = observe_store(m);
            let disk = probe
                .disk
                .clone()
                .filter(|(b, _)| matches!(b, crate::limits::disk::Bound::Quota { .. }))
                .map(|(b, at)| {
                    let seen = at.as_deref().map_or(
                        Err("the client's layer is not kept".to_string()),
                        crate::limits::disk::observe,
                    );
                    (b, seen)
                });
            Ok(StoreFacts {
                expected: probe.writes,
                disk,
                ..seen
            })
        }
        Err(e) => Err(e.clone()),
    }
}

/// Judges an observation of a container's init against its hardened spec, its effective policy and
/// the host's facts (pure). Returns every failure (empty = contained).
pub fn judge(obs: &Observation, spec: &Spec, policy: &Policy, host: &HostFacts) -> Vec<Failure> {
    let mut out = Vec::new();
    match &obs.status {
        Ok(st) => out.extend(check_status(st, policy)),
        Err(e) => {
            out.push(fail(
                keys::NAMESPACES,
                format!("cannot read the status of the container's init: {e}"),
            ));
            return out;
        }
    }
    out.extend(check_namespaces(&obs.namespaces, host));
    if obs.exe == crate::exeseal::Sealing::Unsealed {
        out.push(fail(
            keys::EXE_SEAL,
            "the container's init maps a writable rloxsc binary (CVE-2019-5736)",
        ));
    }
    match &obs.interfaces {
        Ok(i) => out.extend(check_network(i, policy)),
        Err(e) => out.push(fail(
            keys::NETWORK_MODE,
            format!("cannot read the container's interfaces: {e}"),
        )),
    }
    let needs_filter = obs
        .interfaces
        .as_ref()
        .map_or(true, |i| crate::network::needs_filter(i));
    if policy.network == NetworkMode::InboundOnly && needs_filter {
        let what = match &obs.egress_filter {
            None => Some("its egress filter was not read".to_string()),
            Some(f) => crate::network::check_filter(f, &policy.egress_allow),
        };
        out.extend(what.map(|w| fail(keys::NETWORK_MODE, w)));
    }
    match &obs.mounts {
        Ok(m) => out.extend(check_mounts(m, spec, &obs.existing_paths)),
        Err(e) => out.push(fail(
            keys::READONLY_ROOT,
            format!("cannot read the container's mounts: {e}"),
        )),
    }
    match &obs.store {
        Ok(st) => out.extend(check_store(st)),
        Err(e) => out.push(fail(
            keys::WRITABLE,
            format!("cannot read the container's root: {e}"),
        )),
    }
    match &obs.rlimits {
        Ok(l) => out.extend(check_rlimits(l, spec, policy)),
        Err(e) => out.push(fail(
            keys::NOFILE,
            format!("cannot read the container's rlimits: {e}"),
        )),
    }
    match &obs.cgroup {
        Ok(c) => out.extend(check_cgroups(c, spec)),
        Err(e) => out.push(fail(
            keys::PIDS,
            format!("cannot read the container's cgroups: {e}"),
        )),
    }
    if let Some(list) = &obs.devices_list {
        out.extend(check_devices_list(list));
    }
    match &obs.id_maps {
        Ok((u, g)) => out.extend(check_id_maps(u, g, spec, obs.status.as_ref().ok())),
        Err(e) => out.push(fail(
            keys::USERNS,
            format!("cannot read the init's id maps: {e}"),
        )),
    }
    match &obs.oom_score_adj {
        Ok(v) if *v >= 0 => {}
        Ok(v) => out.push(fail(
            keys::OOM_SCORE_ADJ,
            format!("the container's init has oom_score_adj {v}, below 0"),
        )),
        Err(e) => out.push(fail(keys::OOM_SCORE_ADJ, format!("cannot read {e}"))),
    }
    out
}

/// How many seccomp filters every process of the container carries: rloxsc's two programs, and the
/// caller's profile when the spec has one (libcontainer loads it as one filter).
pub fn expected_filters(spec: &Spec) -> u32 {
    crate::seccomp::PROGRAMS
        + u32::from(spec.linux().as_ref().is_some_and(|l| l.seccomp().is_some()))
}

/// Before the payload runs, the container's cgroup holds exactly its init, in seccomp filter mode
/// with the expected number of filters: a process that the image started inside rloxsc's own init
/// (an NSS module's constructor, say) before the filter was in place is a failure, not a detail.
/// Processes without an address space (zombies, a process inside exit()) run no code and are
/// left out.
pub fn check_processes(obs: &Observation, filters: u32) -> Vec<Failure> {
    let mut out = Vec::new();
    for p in &obs.cgroup_processes {
        let Some(st) = &p.status else { continue };
        if !st.has_mm {
            continue;
        }
        if p.pid != obs.pid {
            out.push(fail(
                keys::PROCESSES,
                format!(
                    "process {} is in the container's cgroup before its payload ran (Seccomp: {}, filters: {})",
                    p.pid,
                    st.seccomp.map(|v| v.to_string()).unwrap_or_else(|| "?".into()),
                    st.seccomp_filters.map(|v| v.to_string()).unwrap_or_else(|| "?".into())
                ),
            ));
        }
        if st.seccomp != Some(2) || st.seccomp_filters != Some(filters) {
            out.push(fail(
                keys::SECCOMP,
                format!(
                    "process {} of the container has seccomp mode {:?} with {:?} filters, expected mode 2 with {filters}",
                    p.pid, st.seccomp, st.seccomp_filters
                ),
            ));
        }
    }
    if !obs.cgroup_processes.iter().any(|p| p.pid == obs.pid) {
        out.push(fail(
            keys::PROCESSES,
            format!("the container's init {} is not in its own cgroup", obs.pid),
        ));
    }
    out
}

/// The init's user namespace maps exactly the spec's ids (never the host's whole range), maps
/// nothing onto host id 0, and the init runs as a host uid other than 0.
pub fn check_id_maps(
    uid: &[(u64, u64, u64)],
    gid: &[(u64, u64, u64)],
    spec: &Spec,
    status: Option<&StatusFacts>,
) -> Vec<Failure> {
    let mut out = Vec::new();
    let want = |m: &Option<Vec<oci_spec::runtime::LinuxIdMapping>>| -> Vec<(u64, u64, u64)> {
        m.iter()
            .flatten()
            .map(|x| (x.container_id() as u64, x.host_id() as u64, x.size() as u64))
            .collect()
    };
    let linux = spec.linux().as_ref();
    for (what, got, want) in [
        (
            "uid",
            uid,
            linux.map(|l| want(l.uid_mappings())).unwrap_or_default(),
        ),
        (
            "gid",
            gid,
            linux.map(|l| want(l.gid_mappings())).unwrap_or_default(),
        ),
    ] {
        if got.iter().any(|(_, host, n)| *host == 0 && *n > 0) {
            out.push(fail(
                keys::USERNS,
                format!("the container's {what} map includes host id 0: {got:?}"),
            ));
        }
        // a user namespace joined by path (CRI) has the mapping its creator wrote; the spec may not say
        if !want.is_empty() && got != want.as_slice() {
            out.push(fail(
                keys::USERNS,
                format!("the container's {what} map is {got:?}, expected {want:?}"),
            ));
        }
    }
    if let Some(st) = status {
        if st.uids.is_some_and(|u| u.contains(&0)) {
            out.push(fail(
                keys::USERNS,
                format!("the container's init runs as host uid 0 ({:?})", st.uids),
            ));
        }
    }
    out
}

/// NoNewPrivs, seccomp mode and the five capability masks.
pub fn check_status(st: &StatusFacts, policy: &Policy) -> Vec<Failure> {
    let mut out = Vec::new();
    if st.no_new_privs != Some(1) {
        out.push(fail(
            keys::NO_NEW_PRIVS,
            "no_new_privs is not set on the container's init",
        ));
    }
    if st.seccomp != Some(2) {
        out.push(fail(
            keys::SECCOMP,
            format!(
                "the container's init is not in seccomp filter mode (Seccomp: {})",
                st.seccomp
                    .map(|v| v.to_string())
                    .unwrap_or_else(|| "?".into())
            ),
        ));
    }
    let allowed = allowed_capability_mask(policy);
    for (set, mask) in &st.caps {
        match mask {
            Some(mask) if mask & !allowed == 0 => {}
            Some(mask) => out.push(fail(
                keys::CAPABILITIES,
                format!(
                    "{set} of the container's init holds capabilities outside the policy: {:#x}",
                    mask & !allowed
                ),
            )),
            None => out.push(fail(
                keys::CAPABILITIES,
                format!("cannot read {set} of the container's init"),
            )),
        }
    }
    out
}

/// Every required namespace differs from the runtime's own (the host's).
pub fn check_namespaces(
    theirs: &[(LinuxNamespaceType, Option<(u64, u64)>)],
    facts: &HostFacts,
) -> Vec<Failure> {
    let mut out = Vec::new();
    for (t, id) in theirs {
        let own = facts.host_namespaces.get(t).copied();
        match (own, id) {
            (_, None) => out.push(fail(
                keys::NAMESPACES,
                format!("cannot read the container's {t} namespace"),
            )),
            (Some(a), Some(b)) if a == *b => {
                let key = if *t == LinuxNamespaceType::Network {
                    keys::NETWORK_MODE
                } else {
                    keys::NAMESPACES
                };
                out.push(fail(
                    key,
                    format!("the container shares the host's {t} namespace"),
                ))
            }
            _ => {}
        }
    }
    out
}

/// The interfaces the container's network namespace holds, judged by its mode
/// ([`crate::network::check_interfaces`]).
pub fn check_network(interfaces: &[String], policy: &Policy) -> Vec<Failure> {
    crate::network::check_interfaces(interfaces, policy.network)
        .map(|w| fail(keys::NETWORK_MODE, w))
        .into_iter()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD_STATUS: &str = "Name:\tsh\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t1\nNgid:\t0\nPid:\t1\nPPid:\t0\nTracerPid:\t0\nUid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nFDSize:\t64\nGroups:\t\nNStgid:\t1\nNSpid:\t1\nNSpgid:\t1\nNSsid:\t1\nVmSize:\t 1000 kB\nThreads:\t1\nSigQ:\t0/100\nSigPnd:\t0000000000000000\nShdPnd:\t0000000000000000\nSigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\nSigCgt:\t0000000000000000\nCapInh:\t0000000000000000\nCapPrm:\t0000000000000001\nCapEff:\t0000000000000001\nCapBnd:\t0000000000000001\nCapAmb:\t0000000000000000\nNoNewPrivs:\t1\nSeccomp:\t2\nSeccomp_filters:\t1\nvoluntary_ctxt_switches:\t1\nnonvoluntary_ctxt_switches:\t1\n";

    fn st(text: &str) -> StatusFacts {
        parse_status(text).unwrap()
    }

    #[test]
    fn status_checks_fire() {
        let p = Policy::default();
        let good = st(GOOD_STATUS);
        assert_eq!(good.seccomp_filters, Some(1));
        assert!(good.has_mm);
        assert!(check_status(&good, &p).is_empty());
        let no_seccomp = GOOD_STATUS.replace("Seccomp:\t2", "Seccomp:\t0");
        assert_eq!(check_status(&st(&no_seccomp), &p)[0].key, keys::SECCOMP);
        let no_nnp = GOOD_STATUS.replace("NoNewPrivs:\t1", "NoNewPrivs:\t0");
        assert_eq!(check_status(&st(&no_nnp), &p)[0].key, keys::NO_NEW_PRIVS);
        let sys_admin =
            GOOD_STATUS.replace("CapBnd:\t0000000000000001", "CapBnd:\t0000000000200001");
        assert_eq!(check_status(&st(&sys_admin), &p)[0].key, keys::CAPABILITIES);
    }

    #[test]
    fn network_check() {
        let nd: Vec<String> = vec!["lo".into(), "sit0".into()];
        assert!(check_network(&nd, &Policy::default()).is_empty());
        let mut nd2 = nd.clone();
        nd2.push("eth0".into());
        let loopback_only = Policy {
            network: NetworkMode::LoopbackOnly,
            ..Policy::default()
        };
        let f = check_network(&nd2, &loopback_only);
        assert_eq!(f.len(), 1);
        assert!(f[0].what.contains("eth0") && f[0].what.contains("--network=none"));
        // an interface that is down without an address carries nothing
        let inert = vec!["lo".to_string(), format!("eth0{}", crate::network::INERT)];
        assert!(check_network(&inert, &loopback_only).is_empty());
        // the default keeps the caller's interfaces (its filter is judged on its own)
        assert!(check_network(&nd2, &Policy::default()).is_empty());
        let p = Policy {
            network: NetworkMode::Namespace,
            ..Policy::default()
        };
        assert!(check_network(&nd2, &p).is_empty());
    }

    fn mounts(text: &str) -> Vec<MountLine> {
        parse_mountinfo(text).unwrap()
    }

    fn none() -> std::collections::BTreeSet<String> {
        Default::default()
    }

    #[test]
    fn mount_checks_fire() {
        let spec = Spec::default();
        let good = "1 0 0:1 / / ro,relatime - overlay overlay rw\n2 1 0:2 / /sys ro - sysfs sysfs ro\n3 1 0:3 / /tmp rw - tmpfs tmpfs rw,size=1024k\n4 1 0:4 / /proc/sys ro - proc proc rw\n5 1 0:4 / /proc/sysrq-trigger ro - proc proc rw\n7 2 0:5 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n8 7 0:5 / /sys/fs/cgroup/memory ro - cgroup cgroup rw,memory\n10 2 0:6 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n11 10 0:5 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n12 10 0:6 / /sys/fs/cgroup ro - tmpfs tmpfs rw\n13 12 0:5 / /sys/fs/cgroup/pids ro - cgroup cgroup rw,pids\n";
        let f = check_mounts(&mounts(good), &spec, &none());
        assert!(f.is_empty(), "{f:?}");
        let rw_root = good.replace("/ / ro,relatime", "/ / rw,relatime");
        assert_eq!(
            check_mounts(&mounts(&rw_root), &spec, &none())[0].key,
            keys::READONLY_ROOT
        );
        let rw_cg = format!("{good}6 1 0:5 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n");
        assert_eq!(
            check_mounts(&mounts(&rw_cg), &spec, &none())[0].key,
            keys::READONLY_PATHS
        );
        // a submount of the root (e.g. brought by an rbind rootfs) that stayed writable
        let rw_sub = format!("{good}20 1 0:9 / /opt/data rw - ext4 /dev/vdb rw\n");
        assert_eq!(
            check_mounts(&mounts(&rw_sub), &spec, &none())[0].key,
            keys::READONLY_ROOT
        );
        // a caller's read-only bind whose submount kept rw/suid
        let mut bspec = Spec::default();
        let mut ms = bspec.mounts().clone().unwrap_or_default();
        ms.push(
            oci_spec::runtime::MountBuilder::default()
                .destination("/data")
                .typ("bind")
                .source("/srv")
                .options(vec![
                    "rbind".to_string(),
                    "ro".to_string(),
                    "nosuid".to_string(),
                    "nodev".to_string(),
                ])
                .build()
                .unwrap(),
        );
        bspec.set_mounts(Some(ms));
        let bind_ok = format!("{good}21 1 0:9 / /data ro,nosuid,nodev - ext4 /dev/vdb rw\n");
        assert!(check_mounts(&mounts(&bind_ok), &bspec, &none()).is_empty());
        let bind_sub = format!("{bind_ok}22 21 0:10 / /data/sub rw - ext4 /dev/vdc rw\n");
        let f = check_mounts(&mounts(&bind_sub), &bspec, &none());
        assert_eq!(f[0].key, keys::WRITABLE_BINDS, "{f:?}");
        assert!(
            f[0].what
                .ends_with("lacks nosuid,nodev inside the container"),
            "{f:?}"
        );
        // `ro` is the top's only (runc's rbind,ro): a submount with nosuid,nodev may stay writable
        let sub_rw =
            format!("{bind_ok}22 21 0:10 / /data/sub rw,nosuid,nodev - tmpfs t rw,size=64k\n");
        assert!(check_mounts(&mounts(&sub_rw), &bspec, &none()).is_empty());
        // `rro` (what the hardening adds under writable_binds = false): every submount read-only
        let mut rro = bspec.clone();
        let mut ms = rro.mounts().clone().unwrap();
        let mut o = ms[ms.len() - 1].options().clone().unwrap();
        o.push("rro".to_string());
        let last = ms.len() - 1;
        ms[last].set_options(Some(o));
        rro.set_mounts(Some(ms));
        let f = check_mounts(&mounts(&sub_rw), &rro, &none());
        assert!(
            f[0].what.contains("/data/sub") && f[0].what.contains("lacks ro"),
            "{f:?}"
        );
        // the top itself still must be read-only
        let top_rw = format!("{good}21 1 0:9 / /data rw,nosuid,nodev - ext4 /dev/vdb rw\n");
        assert!(!check_mounts(&mounts(&top_rw), &bspec, &none()).is_empty());
        let big_tmp = good.replace("rw,size=1024k", "rw");
        assert_eq!(
            check_mounts(&mounts(&big_tmp), &spec, &none())[0].key,
            keys::TMPFS
        );
        // a host directory on a tmpfs bound in keeps the host's size (Debian 13's /tmp)
        let mut wspec = Spec::default();
        wspec.set_mounts(Some(vec![oci_spec::runtime::MountBuilder::default()
            .destination("/data")
            .typ("bind")
            .source("/tmp/host-dir")
            .options(vec![
                "rbind".to_string(),
                "nosuid".to_string(),
                "nodev".to_string(),
            ])
            .build()
            .unwrap()]));
        let host_tmp = format!("{good}21 1 0:9 /host-dir /data rw,nosuid,nodev - tmpfs tmpfs rw\n");
        let f = check_mounts(&mounts(&host_tmp), &wspec, &none());
        assert!(f.iter().all(|f| f.key != keys::TMPFS), "{f:?}");
        // a bind whose destination is the root exempts nothing
        let mut rspec = Spec::default();
        rspec.set_mounts(Some(vec![oci_spec::runtime::MountBuilder::default()
            .destination("/")
            .typ("bind")
            .source("/tmp/host-dir")
            .options(vec!["rbind".to_string()])
            .build()
            .unwrap()]));
        assert!(
            check_mounts(&mounts(&host_tmp), &rspec, &none())
                .iter()
                .any(|f| f.key == keys::TMPFS),
            "a bind at / must not exempt the tmpfs below it"
        );
        assert_eq!(
            check_mounts(&mounts(&host_tmp), &spec, &none())
                .iter()
                .filter(|f| f.key == keys::TMPFS)
                .count(),
            1,
            "the same tmpfs, not bound in, is refused"
        );
        // a masked path that exists in the root but has no mount over it
        let mut mspec = Spec::default();
        let mut l = oci_spec::runtime::Linux::default();
        l.set_masked_paths(Some(vec!["/proc/kcore".into()]));
        mspec.set_linux(Some(l));
        let exists: std::collections::BTreeSet<String> = ["/proc/kcore".to_string()].into();
        assert_eq!(
            check_mounts(&mounts(good), &mspec, &exists)[0].key,
            keys::MASKED_PATHS
        );
        assert!(check_mounts(&mounts(good), &mspec, &none()).is_empty());
    }

    #[test]
    fn a_mount_asked_for_read_only_must_be_read_only() {
        let good = "1 0 0:1 / / ro,relatime - overlay overlay rw\n2 1 0:2 / /sys ro - sysfs sysfs ro\n4 1 0:4 / /proc/sys ro - proc proc rw\n5 1 0:4 / /proc/sysrq-trigger ro - proc proc rw\n";
        let mut spec = Spec::default();
        spec.set_mounts(Some(vec![oci_spec::runtime::MountBuilder::default()
            .destination("/dev")
            .typ("tmpfs")
            .source("tmpfs")
            .options(vec![
                "nosuid".to_string(),
                "size=65536k".to_string(),
                "ro".to_string(),
            ])
            .build()
            .unwrap()]));
        let ro_dev = format!("{good}6 1 0:7 / /dev ro,nosuid - tmpfs tmpfs ro,size=65536k\n");
        assert!(check_mounts(&mounts(&ro_dev), &spec, &none()).is_empty());
        let rw_dev = format!("{good}6 1 0:7 / /dev rw,nosuid - tmpfs tmpfs rw,size=65536k\n");
        let f = check_mounts(&mounts(&rw_dev), &spec, &none());
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].key, keys::READONLY_PATHS);
        assert!(f[0].what.contains("/dev"), "{f:?}");
    }

    fn rl(nofile: (u64, u64), core: (u64, u64), rt: (u64, u64)) -> RlimitFacts {
        RlimitFacts {
            nofile,
            core,
            rtprio: rt,
            nice: (0, 0),
            fsize: (u64::MAX, u64::MAX),
        }
    }

    #[test]
    fn rlimit_check() {
        let mut spec = Spec::default();
        let mut c = crate::harden::Changes::default();
        crate::harden::resources::harden_rlimits(
            spec.process_mut().get_or_insert_with(Default::default),
            &Policy::default(),
            &mut c,
        );
        let p = Policy::default();
        let good = rl((1024, 1024), (0, 0), (0, 0));
        assert!(check_rlimits(&good, &spec, &p).is_empty());
        let bad = rl((20000, 20000), (0, 0), (0, 0));
        assert_eq!(check_rlimits(&bad, &spec, &p)[0].key, keys::NOFILE);
        // a spec that lost its rlimits is judged by the policy
        let bare = Spec::default();
        assert!(check_rlimits(&good, &bare, &p).is_empty());
        let core = rl((1024, 1024), (0, u64::MAX), (0, 0));
        assert_eq!(check_rlimits(&core, &bare, &p)[0].key, keys::CORE);
        assert_eq!(check_rlimits(&bad, &bare, &p)[0].key, keys::NOFILE);
        let rt = rl((1024, 1024), (0, 0), (99, 99));
        assert_eq!(check_rlimits(&rt, &bare, &p)[0].key, keys::PRIORITY);
    }

    #[test]
    fn cgroup_check() {
        let mut spec = crate::harden::testutil::careless_spec();
        crate::harden::resources::harden_limits(
            &mut spec,
            &Policy::default(),
            &mut Default::default(),
        );
        let ok = |s: &str| Ok::<String, String>(s.to_string());
        let good = CgroupFacts::V1 {
            pids_max: ok("512"),
            memory_limit: ok("536870912"),
            memsw_limit: Some(ok("536870912")),
        };
        assert!(check_cgroups(&good, &spec).is_empty());
        let raised = CgroupFacts::V1 {
            pids_max: ok("100000"),
            memory_limit: ok("536870912"),
            memsw_limit: None,
        };
        assert_eq!(check_cgroups(&raised, &spec)[0].key, keys::PIDS);
        let v2 = |swap: &str, programs: usize| CgroupFacts::V2 {
            pids_max: ok("512"),
            memory_max: ok("536870912"),
            swap_max: Some(ok(swap)),
            device_programs: Ok(programs),
        };
        assert!(check_cgroups(&v2("0", 2), &spec).is_empty());
        let swap = check_cgroups(&v2("max", 2), &spec);
        assert_eq!((swap.len(), swap[0].key), (1, keys::MEMORY));
        // a driver that applied no device rules (the systemd manager before libcgroups patch 0004)
        let devices = check_cgroups(&v2("0", 1), &spec);
        assert_eq!((devices.len(), devices[0].key), (1, keys::DEVICES));
        assert_eq!(check_cgroups(&CgroupFacts::None, &spec)[0].key, keys::PIDS);
    }

    fn obs_with(procs: Vec<(i32, Option<StatusFacts>)>) -> Observation {
        Observation {
            pid: 1,
            status: Ok(st(GOOD_STATUS)),
            namespaces: vec![],
            exe: crate::exeseal::Sealing::ReadOnlyMount,
            interfaces: Ok(vec![]),
            egress_filter: Some(Ok(Some(crate::network::egress::expected(&[])))),
            mounts: Ok(vec![]),
            existing_paths: Default::default(),
            rlimits: Ok(rl((1024, 1024), (0, 0), (0, 0))),
            cgroup: Ok(CgroupFacts::None),
            devices_list: None,
            cgroup_processes: procs
                .into_iter()
                .map(|(pid, status)| ProcessSeccomp { pid, status })
                .collect(),
            oom_score_adj: Ok(0),
            id_maps: Ok((vec![(0, 1 << 30, 65536)], vec![(0, 1 << 30, 65536)])),
            store: Ok(StoreFacts {
                root_fstype: "overlay".into(),
                root_source: "rloxsc-x".into(),
                upper: Some("/run/rloxsc-views/x/2-store/upper".into()),
                store_bytes: Some(256 << 20),
                expected: Some(crate::rootfs::Writes::Scratch),
                disk: None,
            }),
        }
    }

    #[test]
    fn the_root_is_what_create_made_it() {
        use crate::rootfs::Writes;
        let good = StoreFacts {
            root_fstype: "overlay".into(),
            root_source: "rloxsc-x".into(),
            upper: Some("/u".into()),
            store_bytes: Some(1 << 20),
            expected: Some(Writes::Scratch),
            disk: None,
        };
        assert!(check_store(&good).is_empty());
        let unbounded = StoreFacts {
            store_bytes: None,
            ..good.clone()
        };
        assert_eq!(check_store(&unbounded)[0].key, keys::WRITABLE);
        let bare = StoreFacts {
            root_fstype: "ext4".into(),
            root_source: "/dev/vda".into(),
            ..good.clone()
        };
        assert_eq!(check_store(&bare)[0].key, keys::WRITABLE);
        // the client's layer: rloxsc's overlay, no store
        let layer = StoreFacts {
            store_bytes: None,
            expected: Some(Writes::Layer),
            ..good.clone()
        };
        assert!(check_store(&layer).is_empty());
        // with a project quota create set: the host must show it on the upper layer
        use crate::limits::disk::{Bound, Seen};
        let quota = Bound::Quota {
            project: 1 << 30 | 7,
            bytes: 32 << 20,
            by_client: false,
        };
        let seen = Seen {
            project: 1 << 30 | 7,
            inherit: true,
            limit_bytes: 32 << 20,
            enforced: true,
        };
        let bounded = |seen: Result<Seen, String>| StoreFacts {
            disk: Some((quota.clone(), seen)),
            ..layer.clone()
        };
        assert!(check_store(&bounded(Ok(seen))).is_empty());
        for bad in [
            Ok(Seen { project: 0, ..seen }),
            Ok(Seen {
                limit_bytes: 0,
                ..seen
            }),
            Err("gone".to_string()),
        ] {
            assert_eq!(check_store(&bounded(bad))[0].key, keys::DISK);
        }
        assert!(!check_store(&StoreFacts {
            expected: Some(Writes::Layer),
            ..bare.clone()
        })
        .is_empty());
        // the client's mount: never rloxsc's overlay (a scratch root where the client's was promised)
        assert!(check_store(&StoreFacts {
            expected: Some(Writes::Mount),
            ..bare
        })
        .is_empty());
        assert!(!check_store(&StoreFacts {
            expected: Some(Writes::Mount),
            ..good
        })
        .is_empty());
    }

    #[test]
    fn every_process_of_the_cgroup_is_judged() {
        let good = st(GOOD_STATUS);
        assert!(check_processes(&obs_with(vec![(1, Some(good.clone()))]), 1).is_empty());
        // the caller's profile too: one more filter expected
        let f = check_processes(&obs_with(vec![(1, Some(good.clone()))]), 2);
        assert_eq!(f[0].key, keys::SECCOMP, "{f:?}");
        // a second process, filterless (an image's NSS module forked it inside rloxsc's init)
        let bare = st(&GOOD_STATUS
            .replace("Seccomp:\t2", "Seccomp:\t0")
            .replace("Seccomp_filters:\t1", "Seccomp_filters:\t0"));
        let f = check_processes(&obs_with(vec![(1, Some(good.clone())), (7, Some(bare))]), 1);
        assert!(
            f.iter().any(|x| x.key == keys::PROCESSES) && f.iter().any(|x| x.key == keys::SECCOMP),
            "{f:?}"
        );
        // a zombie (no address space) runs nothing
        let zombie = st(&GOOD_STATUS.replace("VmSize:\t 1000 kB\n", ""));
        assert!(check_processes(
            &obs_with(vec![(1, Some(good.clone())), (8, Some(zombie))]),
            1
        )
        .is_empty());
        // the init missing from its cgroup
        let f = check_processes(&obs_with(vec![(9, Some(good))]), 1);
        assert!(
            f.iter().any(|x| x.what.contains("not in its own cgroup")),
            "{f:?}"
        );
    }

    #[test]
    fn id_map_checks_fire() {
        let mut spec = Spec::default();
        let mut l = oci_spec::runtime::Linux::default();
        let m = vec![crate::harden::namespaces::block_mapping(1 << 30)];
        l.set_uid_mappings(Some(m.clone()));
        l.set_gid_mappings(Some(m));
        spec.set_linux(Some(l));
        let good = vec![(0, 1 << 30, 65536)];
        let st_ok = StatusFacts {
            uids: Some([1 << 30; 4]),
            ..Default::default()
        };
        assert!(check_id_maps(&good, &good, &spec, Some(&st_ok)).is_empty());
        // the host's identity map (no user namespace at all)
        let host = vec![(0, 0, 4294967295)];
        assert!(check_id_maps(&host, &good, &spec, Some(&st_ok))
            .iter()
            .any(|f| f.what.contains("host id 0")));
        let other = vec![(0, 2 << 30, 65536)];
        assert!(!check_id_maps(&other, &good, &spec, Some(&st_ok)).is_empty());
        let st_root = StatusFacts {
            uids: Some([0; 4]),
            ..Default::default()
        };
        assert!(check_id_maps(&good, &good, &spec, Some(&st_root))
            .iter()
            .any(|f| f.what.contains("host uid 0")));
    }

    #[test]
    fn devices_list_check() {
        assert!(check_devices_list("c *:* m\nb *:* m\nc 1:3 rwm\nc 136:* rwm\n").is_empty());
        assert_eq!(check_devices_list("a *:* rwm\n").len(), 1);
        assert_eq!(check_devices_list("c 10:200 rwm\n").len(), 1);
    }
}
