//! A container's cgroup counters, read in one place for the run record and `events`: CPU time, peak
//! memory, OOM kills and failed forks, from the cgroup's own files (v1 `cpuacct.usage_*`,
//! `memory.max_usage_in_bytes`, `memory.oom_control`, `pids.events`; v2 `cpu.stat`, `memory.peak`,
//! `memory.events`, `pids.events`), never guessed from an exit status.

use std::path::PathBuf;

use serde::Serialize;

use super::placement::Placement;
use super::{read_key, read_u64};

/// What a container's cgroup says about its run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CgroupReadings {
    /// `v1` or `v2`; `unavailable` when the cgroup was gone (the counters below are then zero and
    /// mean nothing: systemd removes a container's scope with its last process).
    pub version: &'static str,
    /// Whether the counters were read (the cgroup still existed).
    pub available: bool,
    /// User CPU time, nanoseconds.
    pub cpu_user_ns: u64,
    /// System CPU time, nanoseconds.
    pub cpu_system_ns: u64,
    /// CPU time in all, nanoseconds, from the precise counter (v1 `cpuacct.usage`, v2 `cpu.stat`
    /// `usage_usec`); the user/system split above is the kernel's coarser estimate, whose sum may
    /// differ from it by some ticks.
    pub cpu_total_ns: u64,
    /// Peak memory usage, bytes.
    pub peak_memory_bytes: u64,
    /// Processes killed by the OOM killer inside the container's memory cgroup.
    pub oom_kills: u64,
    /// Times a fork failed because the pids limit was reached.
    pub pids_limit_hits: u64,
}

impl Placement {
    /// The cgroup's counters now.
    pub fn counters(&self) -> CgroupReadings {
        let memory = self.v1_dir("memory");
        if memory.exists() {
            let cpu = self.v1_dir("cpuacct");
            return CgroupReadings {
                version: "v1",
                available: true,
                cpu_user_ns: read_u64(&cpu.join("cpuacct.usage_user")).unwrap_or(0),
                cpu_system_ns: read_u64(&cpu.join("cpuacct.usage_sys")).unwrap_or(0),
                cpu_total_ns: read_u64(&cpu.join("cpuacct.usage")).unwrap_or(0),
                peak_memory_bytes: read_u64(&memory.join("memory.max_usage_in_bytes")).unwrap_or(0),
                oom_kills: read_key(&memory.join("memory.oom_control"), "oom_kill").unwrap_or(0),
                pids_limit_hits: read_key(&self.v1_dir("pids").join("pids.events"), "max")
                    .unwrap_or(0),
            };
        }
        let d = self.v2_dir();
        if !d.join("cgroup.procs").exists() {
            return CgroupReadings {
                version: "unavailable",
                ..Default::default()
            };
        }
        CgroupReadings {
            version: "v2",
            available: true,
            cpu_user_ns: read_key(&d.join("cpu.stat"), "user_usec").unwrap_or(0) * 1000,
            cpu_system_ns: read_key(&d.join("cpu.stat"), "system_usec").unwrap_or(0) * 1000,
            cpu_total_ns: read_key(&d.join("cpu.stat"), "usage_usec").unwrap_or(0) * 1000,
            peak_memory_bytes: read_u64(&d.join("memory.peak")).unwrap_or(0),
            oom_kills: read_key(&d.join("memory.events"), "oom_kill").unwrap_or(0),
            pids_limit_hits: read_key(&d.join("pids.events"), "max").unwrap_or(0),
        }
    }

    /// The file and key of the cgroup's OOM-kill counter (`None` when neither exists), for a reader
    /// that polls it alone (`events`).
    pub fn oom_counter(&self) -> Option<(PathBuf, &'static str)> {
        let v1 = self.v1_dir("memory").join("memory.oom_control");
        if v1.exists() {
            return Some((v1, "oom_kill"));
        }
        let v2 = self.v2_dir().join("memory.events");
        v2.exists().then_some((v2, "oom_kill"))
    }
}
