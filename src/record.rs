//! Per-run records: how a container run ended, read from the kernel, never guessed.
//!
//! `rloxsc run --record FILE` writes one JSON object when the container ends: exit code or signal, a
//! status (`ok`, `nonzero`, `signaled`, `oom_killed`, `timed_out`, `pids_limit_hit`,
//! `cpu_time_exceeded`, `output_limit_exceeded`, `file_size_exceeded`: see [`status`]), wall and CPU time,
//! peak memory, whether the OOM killer or the pids limit struck (from the cgroup's own counters: v1
//! `memory.oom_control` `oom_kill`, `pids.events` `max`; v2 `memory.events` `oom_kill`, `pids.events`),
//! the limits in force and the tightenings rloxsc applied.

use std::path::Path;

use serde::Serialize;

pub use crate::cgroups::CgroupReadings;

/// How the container's init ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// Exited with this code.
    Exited(i32),
    /// Killed by this signal.
    Signaled(i32),
}

/// What the judge limits ([`crate::limits`]) say of a run, from what the container cannot forge:
/// the watchdog's verdict in rloxsc's state, and whether a file-size limit was in force when the
/// kernel's SIGXFSZ ended the main process.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Verdicts {
    /// rloxsc killed the container at `--timeout`.
    pub timed_out: bool,
    /// The CPU-time watchdog killed the container.
    pub cpu_time_exceeded: bool,
    /// `run --output`'s relay killed the container (its count, not the container's).
    pub output_exceeded: bool,
    /// A file-size limit was in force.
    pub file_size_limited: bool,
}

/// The record's status, the first that holds: a limit rloxsc enforced by killing the container
/// (`cpu_time_exceeded`, `output_limit_exceeded`, then the wall time: `timed_out`), an OOM kill, the pids limit, the kernel's
/// SIGXFSZ under a file-size limit (`file_size_exceeded`), then the exit itself (counters that could
/// not be read decide nothing).
pub fn status(ending: Ending, timed_out: bool, c: &CgroupReadings, v: Verdicts) -> &'static str {
    if v.cpu_time_exceeded {
        "cpu_time_exceeded"
    } else if v.output_exceeded {
        "output_limit_exceeded"
    } else if timed_out {
        "timed_out"
    } else if c.oom_kills > 0 {
        "oom_killed"
    } else if c.pids_limit_hits > 0 {
        "pids_limit_hit"
    } else {
        match ending {
            Ending::Signaled(libc::SIGXFSZ) if v.file_size_limited => "file_size_exceeded",
            Ending::Exited(0) => "ok",
            Ending::Exited(_) => "nonzero",
            Ending::Signaled(_) => "signaled",
        }
    }
}

/// The status when the exit is unknown (the client reaped the init): `cpu_time_exceeded`,
/// `oom_killed`, `pids_limit_hit`, or `exited`.
pub fn status_without_exit(c: &CgroupReadings, v: Verdicts) -> &'static str {
    if v.cpu_time_exceeded {
        "cpu_time_exceeded"
    } else if c.oom_kills > 0 {
        "oom_killed"
    } else if c.pids_limit_hits > 0 {
        "pids_limit_hit"
    } else {
        "exited"
    }
}

/// The limits a run had.
#[derive(Debug, Clone, Serialize)]
pub struct Limits {
    /// pids.max.
    pub pids: Option<i64>,
    /// Memory limit, bytes.
    pub memory_bytes: Option<i64>,
    /// Wall-time limit, seconds (from --timeout).
    pub timeout_s: Option<f64>,
    /// The network mode that applied (`inbound-only`, `loopback-only`, `namespace`).
    pub network_mode: Option<&'static str>,
    /// The egress allowlist in force at the end (under `inbound-only`).
    pub egress_allow: Option<Vec<String>>,
    /// CPU time of the whole container, seconds (`limits.cpu_time`).
    pub cpu_time_s: Option<f64>,
    /// RLIMIT_FSIZE of every process, bytes (`limits.file_size`).
    pub file_size_bytes: Option<u64>,
    /// The bytes of stdout and stderr passed to the caller at most (`run --output`).
    pub output_bytes: Option<u64>,
    /// What the container could write to disk at most, bytes (`limits.disk`'s project quota on the
    /// client's layer, or the store); `null`: only the filesystem's size bounded it.
    pub disk_bytes: Option<u64>,
    /// What bounded it, in words (`disk_bytes` is `null`: why).
    pub disk: Option<String>,
}

/// One run's record.
#[derive(Debug, Clone, Serialize)]
pub struct RunRecord {
    /// Container id.
    pub id: String,
    /// See [`status`].
    pub status: &'static str,
    /// Exit code, when the init exited.
    pub exit_code: Option<i32>,
    /// Signal number, when a signal ended the init.
    pub signal: Option<i32>,
    /// Wall time from create to the end, seconds.
    pub wall_time_s: f64,
    /// User CPU time of every process in the container, seconds. This and the counters below are
    /// `null` when the cgroup was gone before it could be read (`cgroup` says `unavailable`).
    pub user_cpu_s: Option<f64>,
    /// System CPU time of every process in the container, seconds.
    pub system_cpu_s: Option<f64>,
    /// CPU time of every process in the container, seconds, from the cgroup's precise counter (what
    /// `limits.cpu_time` counts; the user/system split is the kernel's coarser estimate).
    pub cpu_s: Option<f64>,
    /// Peak memory of the container's cgroup, bytes.
    pub peak_memory_bytes: Option<u64>,
    /// Whether the OOM killer killed a process of the container.
    pub oom_killed: Option<bool>,
    /// How many processes the OOM killer killed.
    pub oom_kills: Option<u64>,
    /// Whether a fork failed on the pids limit.
    pub pids_limit_hit: Option<bool>,
    /// Whether rloxsc killed the container for exceeding --timeout.
    pub timed_out: bool,
    /// The limits in force.
    pub limits: Limits,
    /// The cgroup version the counters came from.
    pub cgroup: &'static str,
    /// Every tightening rloxsc applied to the caller's config.
    pub tightenings: Vec<String>,
}

impl RunRecord {
    /// Builds the record of a run; `ending` is `None` when the client reaped the init (records written
    /// at `delete`), so only the cgroup's counters tell how it went.
    pub fn new(
        id: &str,
        ending: Option<Ending>,
        wall_time_s: f64,
        c: &CgroupReadings,
        v: Verdicts,
        limits: Limits,
        tightenings: Vec<String>,
    ) -> Self {
        let timed_out = v.timed_out;
        RunRecord {
            id: id.to_string(),
            status: match ending {
                Some(e) => status(e, timed_out, c, v),
                None => status_without_exit(c, v),
            },
            exit_code: match ending {
                Some(Ending::Exited(c)) => Some(c),
                _ => None,
            },
            signal: match ending {
                Some(Ending::Signaled(s)) => Some(s),
                _ => None,
            },
            wall_time_s,
            user_cpu_s: c.available.then_some(c.cpu_user_ns as f64 / 1e9),
            system_cpu_s: c.available.then_some(c.cpu_system_ns as f64 / 1e9),
            cpu_s: c.available.then_some(c.cpu_total_ns as f64 / 1e9),
            peak_memory_bytes: c.available.then_some(c.peak_memory_bytes),
            oom_killed: c.available.then_some(c.oom_kills > 0),
            oom_kills: c.available.then_some(c.oom_kills),
            pids_limit_hit: c.available.then_some(c.pids_limit_hits > 0),
            timed_out,
            limits,
            cgroup: c.version,
            tightenings,
        }
    }
}

impl RunRecord {
    /// The record of container `id` from its state: the cgroup's counters, its limits and the
    /// tightenings rloxsc made.
    pub fn of_container(
        layout: &crate::bundle::Layout,
        id: &str,
        ending: Option<Ending>,
        timed_out: bool,
        wall_time_s: f64,
        timeout: Option<std::time::Duration>,
        output: Option<(u64, bool)>,
    ) -> anyhow::Result<RunRecord> {
        use anyhow::Context as _;
        let spec = layout.read_spec(id)?;
        let cg = crate::footprint::placement(layout, id)
            .context("the hardened spec has no cgroup path")?;
        let state = layout.read_record(id).ok();
        let policy = state.as_ref().map(|m| m.policy_in_force());
        let limits = Limits {
            pids: crate::harden::resources::pids_limit(&spec),
            memory_bytes: crate::harden::resources::memory_limit(&spec),
            timeout_s: timeout.map(|t| t.as_secs_f64()),
            network_mode: policy.as_ref().map(|p| p.network.as_str()),
            egress_allow: policy
                .as_ref()
                .filter(|p| p.network == crate::policy::NetworkMode::InboundOnly)
                .map(|p| p.egress_allow.iter().map(ToString::to_string).collect()),
            cpu_time_s: policy
                .as_ref()
                .and_then(|p| p.cpu_time_ms.value())
                .map(|ms| ms as f64 / 1000.0),
            file_size_bytes: policy.as_ref().and_then(|p| p.file_size_bytes.value()),
            output_bytes: output.map(|(limit, _)| limit),
            disk_bytes: state
                .as_ref()
                .and_then(|m| m.disk.as_ref())
                .and_then(|d| d.bytes()),
            disk: state
                .as_ref()
                .and_then(|m| m.disk.as_ref())
                .map(|d| d.describe()),
        };
        let verdicts = Verdicts {
            timed_out,
            output_exceeded: output.is_some_and(|(_, exceeded)| exceeded),
            cpu_time_exceeded: crate::limits::cpu::exceeded(&layout.container_dir(id)),
            file_size_limited: limits.file_size_bytes.is_some(),
        };
        let tightenings = state.map(|m| m.changes).unwrap_or_default();
        Ok(RunRecord::new(
            id,
            ending,
            wall_time_s,
            &cg.counters(),
            verdicts,
            limits,
            tightenings,
        ))
    }

    /// The record of a run whose create did not finish in time (nothing of it ran: no exit; its
    /// cgroup was removed with it before anything read it, so the counters are `null` and `cgroup`
    /// says `unavailable`, as for any record whose cgroup was gone): status `timed_out` when the run's own
    /// `--timeout` passed, `create_timed_out` when the policy's create limit did.
    pub fn create_timed_out(
        id: &str,
        by_run_timeout: bool,
        wall_time_s: f64,
        timeout: Option<std::time::Duration>,
    ) -> RunRecord {
        RunRecord {
            id: id.to_string(),
            status: if by_run_timeout {
                "timed_out"
            } else {
                "create_timed_out"
            },
            exit_code: None,
            signal: None,
            wall_time_s,
            user_cpu_s: None,
            system_cpu_s: None,
            cpu_s: None,
            peak_memory_bytes: None,
            oom_killed: None,
            oom_kills: None,
            pids_limit_hit: None,
            timed_out: true,
            limits: Limits {
                pids: None,
                memory_bytes: None,
                timeout_s: timeout.map(|t| t.as_secs_f64()),
                network_mode: None,
                egress_allow: None,
                cpu_time_s: None,
                file_size_bytes: None,
                output_bytes: None,
                disk_bytes: None,
                disk: None,
            },
            cgroup: "unavailable",
            tightenings: vec![],
        }
    }

    /// Writes the record as one JSON object (and a newline) to `path`, replacing it atomically and
    /// never through a symlink.
    pub fn write(&self, path: &Path) -> anyhow::Result<()> {
        let mut json = serde_json::to_vec_pretty(self)?;
        json.push(b'\n');
        crate::fsutil::replace_file(path, &json, 0o644, "run record")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn readings(oom: u64, pids: u64) -> CgroupReadings {
        CgroupReadings {
            version: "v1",
            available: true,
            oom_kills: oom,
            pids_limit_hits: pids,
            ..Default::default()
        }
    }

    #[test]
    fn statuses() {
        assert_eq!(
            status(
                Ending::Exited(0),
                false,
                &readings(0, 0),
                Verdicts::default()
            ),
            "ok"
        );
        assert_eq!(
            status(
                Ending::Exited(3),
                false,
                &readings(0, 0),
                Verdicts::default()
            ),
            "nonzero"
        );
        assert_eq!(
            status(
                Ending::Signaled(15),
                false,
                &readings(0, 0),
                Verdicts::default()
            ),
            "signaled"
        );
        assert_eq!(
            status(
                Ending::Signaled(9),
                false,
                &readings(1, 0),
                Verdicts::default()
            ),
            "oom_killed"
        );
        assert_eq!(
            status(
                Ending::Exited(0),
                false,
                &readings(0, 7),
                Verdicts::default()
            ),
            "pids_limit_hit"
        );
        assert_eq!(
            status(
                Ending::Signaled(9),
                true,
                &readings(1, 7),
                Verdicts::default()
            ),
            "timed_out"
        );
    }

    // Under the systemd driver the scope is gone with the container's last process: a record says
    // it could not read the counters instead of claiming there was no OOM kill.
    #[test]
    fn judge_limit_statuses() {
        let cpu = Verdicts {
            cpu_time_exceeded: true,
            ..Default::default()
        };
        let fsize = Verdicts {
            file_size_limited: true,
            ..Default::default()
        };
        assert_eq!(
            status(Ending::Signaled(9), true, &readings(1, 0), cpu),
            "cpu_time_exceeded"
        );
        assert_eq!(
            status_without_exit(&readings(1, 0), cpu),
            "cpu_time_exceeded"
        );
        assert_eq!(
            status(
                Ending::Signaled(libc::SIGXFSZ),
                false,
                &readings(0, 0),
                fsize
            ),
            "file_size_exceeded"
        );
        // without a limit in force, SIGXFSZ is only a signal (the payload may raise it itself)
        assert_eq!(
            status(
                Ending::Signaled(libc::SIGXFSZ),
                false,
                &readings(0, 0),
                Verdicts::default()
            ),
            "signaled"
        );
    }

    #[test]
    fn counters_that_could_not_be_read_are_null_not_zero() {
        let gone = CgroupReadings {
            version: "unavailable",
            ..Default::default()
        };
        let r = RunRecord::new(
            "x",
            Some(Ending::Signaled(9)),
            1.0,
            &gone,
            Verdicts::default(),
            Limits {
                pids: None,
                memory_bytes: None,
                timeout_s: None,
                cpu_time_s: None,
                file_size_bytes: None,
                output_bytes: None,
                disk_bytes: None,
                disk: None,
                network_mode: None,
                egress_allow: None,
            },
            vec![],
        );
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["status"], "signaled");
        assert_eq!(v["cgroup"], "unavailable");
        for k in [
            "oom_killed",
            "oom_kills",
            "pids_limit_hit",
            "peak_memory_bytes",
            "user_cpu_s",
        ] {
            assert!(v[k].is_null(), "{k}: {v}");
        }
    }

    // A create that timed out leaves no counters to read: the record says so instead of zeros.
    #[test]
    fn a_create_that_timed_out_has_no_made_up_counters() {
        let v = serde_json::to_value(RunRecord::create_timed_out("x", false, 61.0, None)).unwrap();
        assert_eq!(v["status"], "create_timed_out");
        assert_eq!(v["cgroup"], "unavailable");
        for k in [
            "oom_killed",
            "peak_memory_bytes",
            "pids_limit_hit",
            "system_cpu_s",
        ] {
            assert!(v[k].is_null(), "{k}: {v}");
        }
    }

    #[test]
    fn record_fields() {
        let r = RunRecord::new(
            "x",
            Some(Ending::Signaled(9)),
            1.5,
            &readings(2, 0),
            Verdicts::default(),
            Limits {
                pids: Some(512),
                memory_bytes: Some(1),
                timeout_s: None,
                cpu_time_s: None,
                file_size_bytes: None,
                output_bytes: None,
                disk_bytes: None,
                disk: None,
                network_mode: Some("inbound-only"),
                egress_allow: Some(vec![]),
            },
            vec![],
        );
        assert_eq!(r.signal, Some(9));
        assert_eq!(r.exit_code, None);
        assert_eq!(r.oom_killed, Some(true));
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["status"], "oom_killed");
    }
}
