//! Verification of the container's resource limits from outside: its rlimits
//! (`/proc/<pid>/limits`), its cgroup's limit files and device programs, and the v1 device list
//! (`limits.*`, `devices.allowed`).

use std::path::Path;

use oci_spec::runtime::{PosixRlimitType, Spec};

use super::{fail, read_text, Failure};
use crate::harden::devices::is_allowed_char_device;
use crate::harden::resources::{memory_limit, pids_limit};
use crate::policy::{keys, Policy};

/// The rlimits verification checks: (soft, hard), `u64::MAX` for unlimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RlimitFacts {
    /// RLIMIT_NOFILE.
    pub nofile: (u64, u64),
    /// RLIMIT_CORE.
    pub core: (u64, u64),
    /// RLIMIT_RTPRIO.
    pub rtprio: (u64, u64),
    /// RLIMIT_NICE.
    pub nice: (u64, u64),
    /// RLIMIT_FSIZE.
    pub fsize: (u64, u64),
}

/// The cgroup limit files of a container (their trimmed contents, or why they could not be read).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CgroupFacts {
    /// cgroup v1: pids.max, memory.limit_in_bytes, memory.memsw.limit_in_bytes (when swap accounting exists).
    V1 {
        /// pids.max
        pids_max: Result<String, String>,
        /// memory.limit_in_bytes
        memory_limit: Result<String, String>,
        /// memory.memsw.limit_in_bytes
        memsw_limit: Option<Result<String, String>>,
    },
    /// cgroup v2: pids.max, memory.max, memory.swap.max (when present), the device programs.
    V2 {
        /// pids.max
        pids_max: Result<String, String>,
        /// memory.max
        memory_max: Result<String, String>,
        /// memory.swap.max
        swap_max: Option<Result<String, String>>,
        /// How many eBPF device programs are attached to the cgroup (BPF_PROG_QUERY).
        device_programs: Result<usize, String>,
    },
    /// In no pids and memory cgroup.
    None,
}

pub(super) fn limit_pair(l: &procfs::process::Limit) -> (u64, u64) {
    use procfs::process::LimitValue;
    let v = |x: &LimitValue| match x {
        LimitValue::Unlimited => u64::MAX,
        LimitValue::Value(n) => *n,
    };
    (v(&l.soft_limit), v(&l.hard_limit))
}

pub(super) fn observe_cgroup(cg: &crate::cgroups::ProcessCgroups) -> CgroupFacts {
    let read = |d: &Path, f: &str| read_text(&d.join(f)).map(|s| s.trim().to_string());
    if let (Some(pd), Some(md)) = (cg.v1_dir("pids"), cg.v1_dir("memory")) {
        let memsw = md.join("memory.memsw.limit_in_bytes");
        return CgroupFacts::V1 {
            pids_max: read(&pd, "pids.max"),
            memory_limit: read(&md, "memory.limit_in_bytes"),
            memsw_limit: memsw
                .exists()
                .then(|| read(&md, "memory.memsw.limit_in_bytes")),
        };
    }
    if let Some(d) = cg.v2_dir() {
        let swap = d.join("memory.swap.max");
        return CgroupFacts::V2 {
            pids_max: read(&d, "pids.max"),
            memory_max: read(&d, "memory.max"),
            swap_max: swap.exists().then(|| read(&d, "memory.swap.max")),
            device_programs: crate::cgroups::device_programs(&d),
        };
    }
    CgroupFacts::None
}

/// RLIMIT_NOFILE within the policy's ceiling (and the spec's value), RLIMIT_FSIZE within
/// `limits.file_size` when one is in force, RLIMIT_CORE, RLIMIT_RTPRIO and RLIMIT_NICE 0, whatever
/// the spec says: the expectation comes from the policy, so a spec that lost
/// its rlimits is still caught.
pub fn check_rlimits(got: &RlimitFacts, spec: &Spec, policy: &Policy) -> Vec<Failure> {
    let mut out = Vec::new();
    let spec_nofile = spec
        .process()
        .as_ref()
        .and_then(|p| p.rlimits().as_ref())
        .and_then(|rl| rl.iter().find(|r| r.typ() == PosixRlimitType::RlimitNofile))
        .map(|r| (r.soft(), r.hard()));
    let ceiling = policy.nofile.ceiling;
    // the hardened spec always carries RLIMIT_NOFILE; without one, the policy's default is expected
    let default = policy.nofile.default;
    let (want_soft, want_hard) = spec_nofile
        .map(|(s, h)| (s.min(ceiling), h.min(ceiling)))
        .unwrap_or((default, default));
    let (s, h) = got.nofile;
    if s > want_soft || h > want_hard {
        out.push(fail(keys::NOFILE, format!("open files limit is ({s}, {h}) in the container, expected at most ({want_soft}, {want_hard})")));
    }
    if got.core != (0, 0) {
        out.push(fail(
            keys::CORE,
            format!(
                "core file size limit is {:?} in the container, expected (0, 0)",
                got.core
            ),
        ));
    }
    if let Some(limit) = crate::limits::rules::expected_file_size(policy) {
        if got.fsize.0 > limit || got.fsize.1 > limit {
            out.push(fail(
                keys::FILE_SIZE,
                format!(
                    "file size limit is {:?} in the container, expected at most {limit}",
                    got.fsize
                ),
            ));
        }
    }
    for (label, v) in [
        ("Max realtime priority", got.rtprio),
        ("Max nice priority", got.nice),
    ] {
        if v != (0, 0) {
            out.push(fail(
                keys::PRIORITY,
                format!("{label} is {v:?} in the container, expected (0, 0)"),
            ));
        }
    }
    out
}

/// The cgroup limit files of the container's cgroup hold the hardened limits.
pub fn check_cgroups(got: &CgroupFacts, spec: &Spec) -> Vec<Failure> {
    let mut out = Vec::new();
    let pids = pids_limit(spec).unwrap_or(0);
    let mem = memory_limit(spec).unwrap_or(0);
    let page_floor = |v: i64| v / 4096 * 4096;
    let mut check =
        |key: &'static str, what: &str, got: &Result<String, String>, ok: &dyn Fn(&str) -> bool| {
            match got {
                Ok(v) if ok(v) => {}
                Ok(v) => out.push(fail(
                    key,
                    format!("{what} is {v} in the container's cgroup"),
                )),
                Err(e) => out.push(fail(key, format!("cannot read {what}: {e}"))),
            }
        };
    let is_pids = |v: &str| v.parse::<i64>().ok() == Some(pids);
    let is_mem = |v: &str| v.parse::<i64>().ok() == Some(page_floor(mem));
    match got {
        CgroupFacts::V1 {
            pids_max,
            memory_limit,
            memsw_limit,
        } => {
            check(keys::PIDS, "pids.max", pids_max, &is_pids);
            check(keys::MEMORY, "memory.limit_in_bytes", memory_limit, &is_mem);
            if let Some(m) = memsw_limit {
                check(keys::MEMORY, "memory.memsw.limit_in_bytes", m, &is_mem);
            }
        }
        CgroupFacts::V2 {
            pids_max,
            memory_max,
            swap_max,
            device_programs,
        } => {
            check(keys::PIDS, "pids.max", pids_max, &is_pids);
            check(keys::MEMORY, "memory.max", memory_max, &is_mem);
            if let Some(s) = swap_max {
                check(keys::MEMORY, "memory.swap.max", s, &|v| v == "0");
            }
            // the spec's deny-all rules (libcgroups') and rloxsc's own: a driver that applied no
            // device rules (systemd sets unit properties only) leaves one
            match device_programs {
                Ok(n) if *n >= 2 => {}
                Ok(n) => out.push(fail(
                    keys::DEVICES,
                    format!("{n} eBPF device program(s) attached to the container's cgroup, not the spec's and rloxsc's"),
                )),
                Err(e) => out.push(fail(
                    keys::DEVICES,
                    format!("cannot query the device programs of the container's cgroup: {e}"),
                )),
            }
        }
        CgroupFacts::None => out.push(fail(
            keys::PIDS,
            "the container is in no pids and memory cgroup",
        )),
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
