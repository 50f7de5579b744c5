//! The pure half of the judge limits: how an annotation or a flag tightens `limits.cpu_time` and
//! `limits.file_size`, and the process step that puts RLIMIT_FSIZE on every process (the init and
//! every exec'd one, through [`crate::harden::harden_process`]).

use std::time::Duration;

use oci_spec::runtime::{PosixRlimit, PosixRlimitType, Process};

use crate::policy::{keys, Policy};

/// The limits a caller asks for on `run` or `create` (`--cpu-time`, `--file-size`): they tighten the
/// policy as the annotations do, never loosen it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Requested {
    /// `--cpu-time`: CPU time of the whole container.
    pub cpu_time: Option<Duration>,
    /// `--file-size`: RLIMIT_FSIZE of every process, bytes.
    pub file_size: Option<u64>,
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

/// Applies annotation `run.rloxsc.<name>` when it is one of this area's: the key it tightened, or
/// `None` when the name is not this area's or the value is unusable (then it is ignored, logged).
pub fn annotation(name: &str, v: &str, p: &mut Policy) -> Option<Option<&'static str>> {
    match name {
        "cpu_time" => Some(crate::duration::parse_duration(v).ok().map(|d| {
            p.cpu_time_ms.tighten(millis(d));
            keys::CPU_TIME
        })),
        "file_size" => Some(crate::size::parse(v).filter(|&n| n > 0).map(|n| {
            p.file_size_bytes.tighten(n);
            keys::FILE_SIZE
        })),
        "disk" => Some(crate::size::parse(v).filter(|&n| n >= 1 << 20).map(|n| {
            p.disk_bytes.default = p.disk_bytes.default.min(n);
            p.disk_bytes.ceiling = p.disk_bytes.ceiling.min(n);
            keys::DISK
        })),
        "disk_required" => Some((v.trim() == "true").then(|| {
            p.disk_required = true;
            keys::DISK
        })),
        _ => None,
    }
}

/// `policy` tightened by the caller's flags, and each tightening with its key.
pub fn with_flags(policy: &Policy, req: &Requested) -> (Policy, Vec<(&'static str, String)>) {
    let mut changes = Vec::new();
    let mut p = policy.clone();
    if let Some(d) = req.cpu_time {
        if p.cpu_time_ms.tighten(millis(d)) {
            changes.push((
                keys::CPU_TIME,
                format!("--cpu-time {d:?} tightens the policy for this container"),
            ));
        }
    }
    if let Some(n) = req.file_size {
        if p.file_size_bytes.tighten(n) {
            changes.push((
                keys::FILE_SIZE,
                format!("--file-size {n} tightens the policy for this container"),
            ));
        }
    }
    (p, changes)
}

/// RLIMIT_FSIZE of the process: the policy's value in force, or the caller's when lower; returns
/// what changed (logged under `limits.file_size`). With no limit in force, the caller's entries stay
/// as given.
pub fn harden_file_size(process: &mut Process, policy: &Policy) -> Option<String> {
    let limit = policy.file_size_bytes.value()?;
    let mut rl = process.rlimits().clone().unwrap_or_default();
    let given = rl
        .iter()
        .rfind(|r| r.typ() == PosixRlimitType::RlimitFsize)
        .map(|r| (r.soft(), r.hard()));
    let hard = given.map_or(limit, |(_, h)| h.min(limit));
    let soft = given.map_or(limit, |(s, _)| s.min(hard));
    let entries = rl
        .iter()
        .filter(|r| r.typ() == PosixRlimitType::RlimitFsize)
        .count();
    if given == Some((soft, hard)) && entries == 1 {
        return None;
    }
    rl.retain(|r| r.typ() != PosixRlimitType::RlimitFsize);
    rl.push(fsize(soft, hard));
    process.set_rlimits(Some(rl));
    Some(format!("RLIMIT_FSIZE -> {soft}/{hard}"))
}

fn fsize(soft: u64, hard: u64) -> PosixRlimit {
    oci_spec::runtime::PosixRlimitBuilder::default()
        .typ(PosixRlimitType::RlimitFsize)
        .soft(soft)
        .hard(hard)
        .build()
        .expect("an rlimit with all fields set is valid")
}

/// The RLIMIT_FSIZE a hardened process must carry (hard limit), for the invariant and the outside
/// check: `None` when no limit is in force.
pub fn expected_file_size(policy: &Policy) -> Option<u64> {
    policy.file_size_bytes.value()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn process_with(rl: Vec<PosixRlimit>) -> Process {
        let mut p = Process::default();
        p.set_rlimits(Some(rl));
        p
    }

    #[test]
    fn a_flag_or_an_annotation_only_tightens() {
        let mut p = Policy::default();
        assert_eq!(
            annotation("file_size", "2M", &mut p),
            Some(Some(keys::FILE_SIZE))
        );
        assert_eq!(p.file_size_bytes.value(), Some(2 << 20));
        annotation("file_size", "8M", &mut p);
        assert_eq!(
            p.file_size_bytes.value(),
            Some(2 << 20),
            "a looser value is not taken"
        );
        assert_eq!(
            annotation("cpu_time", "1.5s", &mut p),
            Some(Some(keys::CPU_TIME))
        );
        assert_eq!(p.cpu_time_ms.value(), Some(1500));
        assert_eq!(annotation("cpu_time", "soon", &mut p), Some(None));
        assert_eq!(annotation("pids", "5", &mut p), None, "not this area's");
        assert_eq!(annotation("disk", "64M", &mut p), Some(Some(keys::DISK)));
        assert_eq!(p.disk_bytes.default, 64 << 20);
        annotation("disk", "1G", &mut p);
        assert_eq!(p.disk_bytes.default, 64 << 20, "a looser disk is not taken");
        assert_eq!(annotation("disk", "4K", &mut p), Some(None), "under 1 MiB");
        assert_eq!(annotation("disk_required", "false", &mut p), Some(None));
        assert!(!p.disk_required);
        annotation("disk_required", "true", &mut p);
        assert!(p.disk_required);
        let (q, ch) = with_flags(
            &p,
            &Requested {
                cpu_time: Some(Duration::from_secs(9)),
                file_size: Some(1 << 20),
            },
        );
        assert_eq!(q.cpu_time_ms.value(), Some(1500));
        assert_eq!(q.file_size_bytes.value(), Some(1 << 20));
        assert_eq!(ch.len(), 1);
    }

    #[test]
    fn a_policy_ceiling_bounds_the_default() {
        let mut p = Policy::default();
        p.file_size_bytes.ceiling = Some(100);
        assert_eq!(p.file_size_bytes.value(), Some(100));
        p.file_size_bytes.default = Some(50);
        assert_eq!(p.file_size_bytes.value(), Some(50));
        assert!(!p.file_size_bytes.tighten(70));
        assert!(p.file_size_bytes.tighten(10));
        assert_eq!(p.file_size_bytes.value(), Some(10));
    }

    #[test]
    fn rlimit_fsize_is_the_lower_of_the_callers_and_the_policys() {
        let mut p = Policy::default();
        let mut proc_ = process_with(vec![fsize(u64::MAX, u64::MAX), fsize(5, 5)]);
        assert_eq!(harden_file_size(&mut proc_, &p), None);
        assert_eq!(
            proc_.rlimits().as_ref().unwrap().len(),
            2,
            "no limit in force: as given"
        );
        p.file_size_bytes.tighten(1000);
        let mut proc_ = process_with(vec![fsize(5, u64::MAX), fsize(u64::MAX, u64::MAX)]);
        harden_file_size(&mut proc_, &p);
        let rl = proc_.rlimits().clone().unwrap();
        assert_eq!(rl.len(), 1);
        assert_eq!((rl[0].soft(), rl[0].hard()), (1000, 1000));
        let mut proc_ = process_with(vec![fsize(10, 20)]);
        harden_file_size(&mut proc_, &p);
        let rl = proc_.rlimits().clone().unwrap();
        assert_eq!(
            (rl[0].soft(), rl[0].hard()),
            (10, 20),
            "a lower caller's value is kept"
        );
    }
}
