//! Verification from outside: before a container's payload may run, rloxsc reads what the kernel says
//! about the container's init (`/proc/<pid>/...`, the cgroup files) and compares it with the hardened
//! spec. Any mismatch is a [`Failure`] naming what is missing and the policy key that governs it.

use std::fmt;
use std::path::{Path, PathBuf};

use oci_spec::runtime::{LinuxNamespaceType, PosixRlimitType, Spec};

use crate::facts::{ns_file, ns_id};
use crate::harden::devices::is_allowed_char_device;
use crate::harden::namespaces::required_namespaces;
use crate::harden::privileges::allowed_capability_mask;
use crate::harden::resources::{memory_limit, pids_limit};
use crate::harden::HostFacts;
use crate::policy::{keys, NetworkMode, Policy};

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

fn fail(key: &'static str, what: impl Into<String>) -> Failure {
    Failure {
        key,
        what: what.into(),
    }
}

/// Fallback tunnel devices the kernel creates in every new network namespace when the tunnel modules are
/// loaded: not connected to anything, so not a way out.
const FALLBACK_DEVICES: &[&str] = &[
    "lo", "sit0", "tunl0", "ip6tnl0", "gre0", "gretap0", "erspan0", "ip6gre0", "ip6_vti0",
    "ip_vti0",
];

/// Runs every check against the container whose init is `pid`. Returns all failures (empty = contained).
pub fn verify_container(
    pid: i32,
    spec: &Spec,
    policy: &Policy,
    facts_like: &HostFacts,
) -> Vec<Failure> {
    let proc_dir = PathBuf::from(format!("/proc/{pid}"));
    let mut out = Vec::new();
    match std::fs::read_to_string(proc_dir.join("status")) {
        Ok(status) => out.extend(check_status(&status, policy)),
        Err(e) => {
            out.push(fail(
                keys::NAMESPACES,
                format!("cannot read /proc/{pid}/status: {e}"),
            ));
            return out;
        }
    }
    out.extend(check_namespaces(&proc_dir, facts_like));
    if crate::exeseal::sealing_of(&proc_dir.join("exe")) == crate::exeseal::Sealing::Unsealed {
        out.push(fail(
            keys::EXE_SEAL,
            "the container's init maps a writable rloxsc binary (CVE-2019-5736)",
        ));
    }
    match std::fs::read_to_string(proc_dir.join("net/dev")) {
        Ok(netdev) => out.extend(check_network(&netdev, policy)),
        Err(e) => out.push(fail(
            keys::NETWORK_MODE,
            format!("cannot read the container's interfaces: {e}"),
        )),
    }
    match std::fs::read_to_string(proc_dir.join("mountinfo")) {
        Ok(mi) => out.extend(check_mounts(&mi, spec, &proc_dir)),
        Err(e) => out.push(fail(
            keys::READONLY_ROOT,
            format!("cannot read the container's mounts: {e}"),
        )),
    }
    match std::fs::read_to_string(proc_dir.join("limits")) {
        Ok(l) => out.extend(check_rlimits(&l, spec, policy)),
        Err(e) => out.push(fail(
            keys::NOFILE,
            format!("cannot read the container's rlimits: {e}"),
        )),
    }
    match std::fs::read_to_string(proc_dir.join("cgroup")) {
        Ok(cg) => out.extend(check_cgroups(&cg, spec)),
        Err(e) => out.push(fail(
            keys::PIDS,
            format!("cannot read the container's cgroups: {e}"),
        )),
    }
    out
}

fn status_field<'a>(status: &'a str, name: &str) -> Option<&'a str> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(name))
        .map(str::trim)
}

/// NoNewPrivs, seccomp mode and the five capability masks.
pub fn check_status(status: &str, policy: &Policy) -> Vec<Failure> {
    let mut out = Vec::new();
    if status_field(status, "NoNewPrivs:") != Some("1") {
        out.push(fail(
            keys::NO_NEW_PRIVS,
            "no_new_privs is not set on the container's init",
        ));
    }
    if status_field(status, "Seccomp:") != Some("2") {
        out.push(fail(
            keys::SECCOMP,
            format!(
                "the container's init is not in seccomp filter mode (Seccomp: {})",
                status_field(status, "Seccomp:").unwrap_or("?")
            ),
        ));
    }
    let allowed = allowed_capability_mask(policy);
    for set in ["CapInh:", "CapPrm:", "CapEff:", "CapBnd:", "CapAmb:"] {
        match status_field(status, set).and_then(|v| u64::from_str_radix(v, 16).ok()) {
            Some(mask) if mask & !allowed == 0 => {}
            Some(mask) => out.push(fail(
                keys::CAPABILITIES,
                format!(
                    "{} of the container's init holds capabilities outside the policy: {:#x}",
                    set.trim_end_matches(':'),
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
pub fn check_namespaces(proc_dir: &Path, facts: &HostFacts) -> Vec<Failure> {
    let mut out = Vec::new();
    for t in required_namespaces(facts) {
        let own = facts.host_namespaces.get(&t).copied();
        let theirs = ns_id(&proc_dir.join("ns").join(ns_file(t)));
        match (own, theirs) {
            (_, None) => out.push(fail(
                keys::NAMESPACES,
                format!("cannot read the container's {t} namespace"),
            )),
            (Some(a), Some(b)) if a == b => {
                let key = if t == LinuxNamespaceType::Network {
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

/// Interface names listed in `/proc/<pid>/net/dev`.
pub fn interfaces(netdev: &str) -> Vec<String> {
    netdev
        .lines()
        .skip(2)
        .filter_map(|l| l.split_once(':').map(|(n, _)| n.trim().to_string()))
        .collect()
}

/// Under `loopback-only`, no interface other than loopback (and inert fallback tunnels).
pub fn check_network(netdev: &str, policy: &Policy) -> Vec<Failure> {
    if policy.network == NetworkMode::Namespace {
        return vec![];
    }
    let extra: Vec<String> = interfaces(netdev)
        .into_iter()
        .filter(|i| !FALLBACK_DEVICES.contains(&i.as_str()))
        .collect();
    if extra.is_empty() {
        return vec![];
    }
    vec![fail(keys::NETWORK_MODE, format!(
        "the container's network namespace has interfaces besides loopback ({}): run it with --network=none, or set {} = \"namespace\" in the policy",
        extra.join(", "),
        keys::NETWORK_MODE
    ))]
}

/// One visible mount from mountinfo.
#[derive(Debug, Clone)]
struct MountLine {
    id: String,
    parent: String,
    point: String,
    opts: Vec<String>,
    fstype: String,
    super_opts: String,
}

/// Parses mountinfo and keeps only visible mounts: a mount with another mount stacked on the same point
/// (whose parent is it) is covered and unreachable without mount privileges.
fn visible_mounts(mi: &str) -> Vec<MountLine> {
    let all: Vec<MountLine> = mi
        .lines()
        .filter_map(|l| {
            let (pre, post) = l.split_once(" - ")?;
            let f: Vec<&str> = pre.split_whitespace().collect();
            let p: Vec<&str> = post.split_whitespace().collect();
            Some(MountLine {
                id: f.first()?.to_string(),
                parent: f.get(1)?.to_string(),
                point: unescape(f.get(4)?),
                opts: f.get(5)?.split(',').map(str::to_string).collect(),
                fstype: p.first()?.to_string(),
                super_opts: p.get(2).copied().unwrap_or("").to_string(),
            })
        })
        .collect();
    // a mount is hidden when it is covered, or when any mount it hangs below is hidden
    let covered = |m: &MountLine| all.iter().any(|o| o.parent == m.id && o.point == m.point);
    let by_id: std::collections::HashMap<&str, &MountLine> =
        all.iter().map(|m| (m.id.as_str(), m)).collect();
    let hidden = |m: &MountLine| {
        let mut cur = Some(m);
        let mut steps = 0;
        while let Some(c) = cur {
            if covered(c) {
                return true;
            }
            steps += 1;
            if steps > all.len() {
                break;
            }
            cur = by_id
                .get(c.parent.as_str())
                .copied()
                .filter(|p| p.id != c.id);
        }
        false
    };
    all.iter().filter(|m| !hidden(m)).cloned().collect()
}

fn unescape(s: &str) -> String {
    s.replace("\\040", " ")
        .replace("\\011", "\t")
        .replace("\\012", "\n")
        .replace("\\134", "\\")
}

/// The root is read-only; every sysfs and cgroupfs is read-only; `/proc/sys` is read-only; every tmpfs
/// has a size; every masked path that exists is covered by a mount.
pub fn check_mounts(mi: &str, spec: &Spec, proc_dir: &Path) -> Vec<Failure> {
    let mounts = visible_mounts(mi);
    let mut out = Vec::new();
    let ro = |o: &Vec<String>| o.iter().any(|x| x == "ro");
    let top = |mp: &str| {
        mounts
            .iter()
            .rev()
            .find(|m| m.point == mp)
            .map(|m| (m.point.clone(), m.opts.clone()))
    };
    match top("/") {
        Some(m) if ro(&m.1) => {}
        Some(_) => out.push(fail(
            keys::READONLY_ROOT,
            "the container's root filesystem is writable",
        )),
        None => out.push(fail(keys::READONLY_ROOT, "the container has no root mount")),
    }
    for m in &mounts {
        if matches!(m.fstype.as_str(), "cgroup" | "cgroup2" | "sysfs") && !ro(&m.opts) {
            out.push(fail(
                keys::READONLY_PATHS,
                format!(
                    "{} at {} is writable inside the container",
                    m.fstype, m.point
                ),
            ));
        }
        if m.fstype == "tmpfs"
            && !m.super_opts.split(',').any(|o| o.starts_with("size="))
            && !ro(&m.opts)
        {
            out.push(fail(
                keys::TMPFS,
                format!("writable tmpfs at {} has no size limit", m.point),
            ));
        }
    }
    out.extend(check_binds_and_writable(&mounts, spec));
    for p in ["/proc/sys", "/proc/sysrq-trigger"] {
        if let Some(m) = top(p) {
            if !ro(&m.1) {
                out.push(fail(
                    keys::READONLY_PATHS,
                    format!("{p} is writable inside the container"),
                ));
            }
        } else if proc_dir
            .join("root")
            .join(p.trim_start_matches('/'))
            .exists()
        {
            out.push(fail(
                keys::READONLY_PATHS,
                format!("{p} is not read-only inside the container"),
            ));
        }
    }
    let masked = spec
        .linux()
        .as_ref()
        .and_then(|l| l.masked_paths().clone())
        .unwrap_or_default();
    for p in masked {
        if top(&p).is_none()
            && proc_dir
                .join("root")
                .join(p.trim_start_matches('/'))
                .exists()
        {
            out.push(fail(
                keys::MASKED_PATHS,
                format!("{p} is not masked inside the container"),
            ));
        }
    }
    out
}

/// Every mount at or below a caller's bind destination is nosuid and nodev (and read-only when the
/// hardened spec made the bind read-only): an rbind brings the source's submounts, which the plain
/// flags do not reach. Any other writable mount must be scratch (a sized tmpfs), proc (whose
/// `/proc/sys` is checked apart), devpts, mqueue, a masked path or a device node under /dev.
fn check_binds_and_writable(mounts: &[MountLine], spec: &Spec) -> Vec<Failure> {
    let mut out = Vec::new();
    let has = |o: &Vec<String>, f: &str| o.iter().any(|x| x == f);
    let under = |point: &str, dest: &str| {
        point == dest
            || (dest == "/" && point.starts_with('/'))
            || point.starts_with(&format!("{}/", dest.trim_end_matches('/')))
    };
    let binds: Vec<(String, bool)> = spec
        .mounts()
        .iter()
        .flatten()
        .filter(|m| {
            m.typ().as_deref() == Some("bind")
                || m.options()
                    .iter()
                    .flatten()
                    .any(|o| o == "bind" || o == "rbind")
        })
        .map(|m| {
            let ro = m.options().iter().flatten().any(|o| o == "ro");
            (m.destination().display().to_string(), ro)
        })
        .collect();
    let masked: Vec<String> = spec
        .linux()
        .as_ref()
        .and_then(|l| l.masked_paths().clone())
        .unwrap_or_default();
    for m in mounts.iter().filter(|m| m.point != "/") {
        // the innermost bind destination holding this mount
        let bind = binds
            .iter()
            .filter(|(d, _)| under(&m.point, d))
            .max_by_key(|(d, _)| d.len());
        if let Some((dest, ro)) = bind {
            let mut missing: Vec<&str> = ["nosuid", "nodev"]
                .into_iter()
                .filter(|f| !has(&m.opts, f))
                .collect();
            if *ro && !has(&m.opts, "ro") {
                missing.push("ro");
            }
            if !missing.is_empty() {
                out.push(fail(
                    keys::WRITABLE_BINDS,
                    format!(
                        "mount at {} (bind mount {dest}) lacks {} inside the container",
                        m.point,
                        missing.join(",")
                    ),
                ));
            }
            continue;
        }
        let scratch_or_kernel = matches!(m.fstype.as_str(), "tmpfs" | "proc" | "devpts" | "mqueue");
        let device_node = m.point.starts_with("/dev/") && m.point.matches('/').count() == 2;
        if !has(&m.opts, "ro") && !scratch_or_kernel && !device_node && !masked.contains(&m.point) {
            out.push(fail(
                keys::READONLY_ROOT,
                format!(
                    "writable {} mount at {} inside the container is neither scratch nor a caller's bind",
                    m.fstype, m.point
                ),
            ));
        }
    }
    out
}

/// RLIMIT_NOFILE within the policy's ceiling (and the spec's value), RLIMIT_CORE, RLIMIT_RTPRIO and
/// RLIMIT_NICE 0, whatever the
/// spec says: the expectation comes from the policy, so a spec that lost its rlimits is still caught.
pub fn check_rlimits(limits: &str, spec: &Spec, policy: &Policy) -> Vec<Failure> {
    let mut out = Vec::new();
    let rl = spec
        .process()
        .as_ref()
        .and_then(|p| p.rlimits().clone())
        .unwrap_or_default();
    let spec_nofile = rl
        .iter()
        .find(|r| r.typ() == PosixRlimitType::RlimitNofile)
        .map(|r| (r.soft(), r.hard()));
    let got = |label: &str| -> Option<(u64, u64)> {
        let l = limits.lines().find(|l| l.starts_with(label))?;
        let v: Vec<&str> = l[label.len()..].split_whitespace().collect();
        let p = |s: &str| {
            if s == "unlimited" {
                Some(u64::MAX)
            } else {
                s.parse().ok()
            }
        };
        Some((p(v.first()?)?, p(v.get(1)?)?))
    };
    let ceiling = policy.nofile.ceiling;
    // the hardened spec always carries RLIMIT_NOFILE; without one, the policy's default is expected
    let default = policy.nofile.default;
    let (want_soft, want_hard) = spec_nofile
        .map(|(s, h)| (s.min(ceiling), h.min(ceiling)))
        .unwrap_or((default, default));
    match got("Max open files") {
        Some((s, h)) if s <= want_soft && h <= want_hard => {}
        g => out.push(fail(keys::NOFILE, format!("open files limit is {g:?} in the container, expected at most ({want_soft}, {want_hard})"))),
    }
    match got("Max core file size") {
        Some((0, 0)) => {}
        g => out.push(fail(
            keys::CORE,
            format!("core file size limit is {g:?} in the container, expected (0, 0)"),
        )),
    }
    for label in ["Max realtime priority", "Max nice priority"] {
        match got(label) {
            Some((0, 0)) => {}
            g => out.push(fail(
                keys::PRIORITY,
                format!("{label} is {g:?} in the container, expected (0, 0)"),
            )),
        }
    }
    out
}

/// The cgroup limit files of the container's cgroup hold the hardened limits.
pub fn check_cgroups(cgroup_file: &str, spec: &Spec) -> Vec<Failure> {
    let mut out = Vec::new();
    let paths: Vec<(String, String)> = cgroup_file
        .lines()
        .filter_map(|l| {
            let mut it = l.splitn(3, ':');
            let _ = it.next()?;
            Some((it.next()?.to_string(), it.next()?.to_string()))
        })
        .collect();
    let v1 = |ctrl: &str| {
        paths
            .iter()
            .find(|(c, _)| c.split(',').any(|x| x == ctrl))
            .map(|(_, p)| p.clone())
    };
    let v2 = paths
        .iter()
        .find(|(c, _)| c.is_empty())
        .map(|(_, p)| p.clone());
    let read = |p: PathBuf| {
        std::fs::read_to_string(&p)
            .map(|s| s.trim().to_string())
            .map_err(|e| format!("{}: {e}", p.display()))
    };
    let pids = pids_limit(spec).unwrap_or(0);
    let mem = memory_limit(spec).unwrap_or(0);

    let check = |out: &mut Vec<Failure>,
                 key: &'static str,
                 what: &str,
                 got: Result<String, String>,
                 ok: &dyn Fn(&str) -> bool| {
        match got {
            Ok(v) if ok(&v) => {}
            Ok(v) => out.push(fail(
                key,
                format!("{what} is {v} in the container's cgroup"),
            )),
            Err(e) => out.push(fail(key, format!("cannot read {what}: {e}"))),
        }
    };
    let page_floor = |v: i64| v / 4096 * 4096;
    if let (Some(pp), Some(mp)) = (v1("pids"), v1("memory")) {
        let root = Path::new("/sys/fs/cgroup");
        check(
            &mut out,
            keys::PIDS,
            "pids.max",
            read(
                root.join("pids")
                    .join(pp.trim_start_matches('/'))
                    .join("pids.max"),
            ),
            &|v| v.parse::<i64>().ok() == Some(pids),
        );
        let md = root.join("memory").join(mp.trim_start_matches('/'));
        check(
            &mut out,
            keys::MEMORY,
            "memory.limit_in_bytes",
            read(md.join("memory.limit_in_bytes")),
            &|v| v.parse::<i64>().ok() == Some(page_floor(mem)),
        );
        if md.join("memory.memsw.limit_in_bytes").exists() {
            check(
                &mut out,
                keys::MEMORY,
                "memory.memsw.limit_in_bytes",
                read(md.join("memory.memsw.limit_in_bytes")),
                &|v| v.parse::<i64>().ok() == Some(page_floor(mem)),
            );
        }
    } else if let Some(p) = v2.filter(|_| v1("pids").is_none()) {
        let d = Path::new("/sys/fs/cgroup").join(p.trim_start_matches('/'));
        check(
            &mut out,
            keys::PIDS,
            "pids.max",
            read(d.join("pids.max")),
            &|v| v.parse::<i64>().ok() == Some(pids),
        );
        check(
            &mut out,
            keys::MEMORY,
            "memory.max",
            read(d.join("memory.max")),
            &|v| v.parse::<i64>().ok() == Some(page_floor(mem)),
        );
        if d.join("memory.swap.max").exists() {
            check(
                &mut out,
                keys::MEMORY,
                "memory.swap.max",
                read(d.join("memory.swap.max")),
                &|v| v == "0",
            );
        }
    } else {
        out.push(fail(
            keys::PIDS,
            "the container is in no pids and memory cgroup",
        ));
    }
    out
}

/// v1 device cgroup rules: everything the container may open must be in the allowed set. `m`-only
/// wildcard rules (mknod, blocked by the missing CAP_MKNOD and by seccomp) are tolerated.
pub fn check_devices_list(list: &str) -> Vec<Failure> {
    let mut out = Vec::new();
    for l in list.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() != 3 {
            continue;
        }
        let (typ, num, access) = (f[0], f[1], f[2]);
        if access == "m" {
            continue;
        }
        let ok = typ == "c"
            && num.split_once(':').is_some_and(|(ma, mi)| {
                let ma = ma.parse::<i64>().unwrap_or(-1);
                if mi == "*" {
                    ma == 136
                } else {
                    is_allowed_char_device(ma, mi.parse::<i64>().unwrap_or(-1))
                }
            });
        if !ok {
            out.push(fail(keys::DEVICES, format!("the device cgroup allows {l}")));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD_STATUS: &str = "NoNewPrivs:\t1\nSeccomp:\t2\nCapInh:\t0000000000000000\nCapPrm:\t0000000000000001\nCapEff:\t0000000000000001\nCapBnd:\t0000000000000001\nCapAmb:\t0000000000000000\n";

    #[test]
    fn status_checks_fire() {
        let p = Policy::default();
        assert!(check_status(GOOD_STATUS, &p).is_empty());
        let no_seccomp = GOOD_STATUS.replace("Seccomp:\t2", "Seccomp:\t0");
        assert_eq!(check_status(&no_seccomp, &p)[0].key, keys::SECCOMP);
        let no_nnp = GOOD_STATUS.replace("NoNewPrivs:\t1", "NoNewPrivs:\t0");
        assert_eq!(check_status(&no_nnp, &p)[0].key, keys::NO_NEW_PRIVS);
        let sys_admin =
            GOOD_STATUS.replace("CapBnd:\t0000000000000001", "CapBnd:\t0000000000200001");
        assert_eq!(check_status(&sys_admin, &p)[0].key, keys::CAPABILITIES);
    }

    #[test]
    fn network_check() {
        let nd = "Inter-|\n face |\n    lo: 0 0\n  sit0: 0 0\n";
        assert!(check_network(nd, &Policy::default()).is_empty());
        let nd2 = format!("{nd}  eth0: 1 2\n");
        let f = check_network(&nd2, &Policy::default());
        assert_eq!(f.len(), 1);
        assert!(f[0].what.contains("eth0") && f[0].what.contains("--network=none"));
        let p = Policy {
            network: NetworkMode::Namespace,
            ..Policy::default()
        };
        assert!(check_network(&nd2, &p).is_empty());
    }

    #[test]
    fn mount_checks_fire() {
        let spec = Spec::default();
        let good = "1 0 0:1 / / ro,relatime - overlay overlay rw\n2 1 0:2 / /sys ro - sysfs sysfs ro\n3 1 0:3 / /tmp rw - tmpfs tmpfs rw,size=1024k\n4 1 0:4 / /proc/sys ro - proc proc rw\n5 1 0:4 / /proc/sysrq-trigger ro - proc proc rw\n7 2 0:5 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n8 7 0:5 / /sys/fs/cgroup/memory ro - cgroup cgroup rw,memory\n10 2 0:6 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n11 10 0:5 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n12 10 0:6 / /sys/fs/cgroup ro - tmpfs tmpfs rw\n13 12 0:5 / /sys/fs/cgroup/pids ro - cgroup cgroup rw,pids\n";
        assert!(
            check_mounts(good, &spec, Path::new("/nonexistent")).is_empty(),
            "{:?}",
            check_mounts(good, &spec, Path::new("/nonexistent"))
        );
        let rw_root = good.replace("/ / ro,relatime", "/ / rw,relatime");
        assert_eq!(
            check_mounts(&rw_root, &spec, Path::new("/nonexistent"))[0].key,
            keys::READONLY_ROOT
        );
        let rw_cg = format!("{good}6 1 0:5 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n");
        assert_eq!(
            check_mounts(&rw_cg, &spec, Path::new("/nonexistent"))[0].key,
            keys::READONLY_PATHS
        );
        // a submount of the root (e.g. brought by an rbind rootfs) that stayed writable
        let rw_sub = format!("{good}20 1 0:9 / /opt/data rw - ext4 /dev/vdb rw\n");
        assert_eq!(
            check_mounts(&rw_sub, &spec, Path::new("/nonexistent"))[0].key,
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
        assert!(check_mounts(&bind_ok, &bspec, Path::new("/nonexistent")).is_empty());
        let bind_sub = format!("{bind_ok}22 21 0:10 / /data/sub rw - ext4 /dev/vdc rw\n");
        let f = check_mounts(&bind_sub, &bspec, Path::new("/nonexistent"));
        assert_eq!(f[0].key, keys::WRITABLE_BINDS, "{f:?}");
        assert!(f[0].what.contains("nosuid,nodev,ro"), "{f:?}");
        let big_tmp = good.replace("rw,size=1024k", "rw");
        assert_eq!(
            check_mounts(&big_tmp, &spec, Path::new("/nonexistent"))[0].key,
            keys::TMPFS
        );
    }

    #[test]
    fn rlimit_check() {
        let mut spec = Spec::default();
        let mut c = crate::harden::Changes::default();
        crate::harden::resources::harden_rlimits(&mut spec, &Policy::default(), &mut c);
        let good = "Limit                     Soft Limit           Hard Limit           Units\nMax core file size        0                    0                    bytes\nMax open files            1024                 1024                 files\nMax nice priority         0                    0\nMax realtime priority     0                    0\n";
        let p = Policy::default();
        assert!(check_rlimits(good, &spec, &p).is_empty());
        let bad = good.replace("1024                 1024", "20000                20000");
        assert_eq!(check_rlimits(&bad, &spec, &p)[0].key, keys::NOFILE);
        // a spec that lost its rlimits is judged by the policy
        let bare = Spec::default();
        assert!(check_rlimits(good, &bare, &p).is_empty());
        let core = good.replace(
            "Max core file size        0                    0",
            "Max core file size        0                    unlimited",
        );
        assert_eq!(check_rlimits(&core, &bare, &p)[0].key, keys::CORE);
        let inherited = good.replace("1024                 1024", "20000                20000");
        assert_eq!(check_rlimits(&inherited, &bare, &p)[0].key, keys::NOFILE);
        let rt = good.replace(
            "Max realtime priority     0                    0",
            "Max realtime priority     99                   99",
        );
        assert_eq!(check_rlimits(&rt, &bare, &p)[0].key, keys::PRIORITY);
    }

    #[test]
    fn devices_list_check() {
        assert!(check_devices_list("c *:* m\nb *:* m\nc 1:3 rwm\nc 136:* rwm\n").is_empty());
        assert_eq!(check_devices_list("a *:* rwm\n").len(), 1);
        assert_eq!(check_devices_list("c 10:200 rwm\n").len(), 1);
    }
}
