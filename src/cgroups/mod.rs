//! Where a container's cgroups are on this host: from a process's `/proc/<pid>/cgroup` (parsed by
//! `procfs`), or from the container's [`Placement`] (its spec's cgroups path and the driver chosen at
//! create). One place for the v1-or-v2 and cgroupfs-or-systemd decisions that verification, `kill
//! --all`, records, `events`, `update` and `delete` all need, and one reader of the counters
//! ([`counters`]).

pub mod counters;
pub mod placement;

pub use counters::CgroupReadings;
pub use placement::{Driver, Placement};

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context as _};

use procfs::FromBufRead;

/// The cgroup filesystem root.
pub const ROOT: &str = "/sys/fs/cgroup";

/// A process's cgroups: the v1 hierarchies it is in (controllers, path) and its v2 path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcessCgroups {
    v1: Vec<(Vec<String>, String)>,
    v2: Option<String>,
}

impl ProcessCgroups {
    /// Reads `/proc/<pid>/cgroup`.
    pub fn of(pid: i32) -> Option<ProcessCgroups> {
        let text = crate::fsutil::read_small(format!("/proc/{pid}/cgroup")).ok()?;
        Some(Self::parse(&text))
    }

    /// Parses the text of a `/proc/<pid>/cgroup` file.
    pub fn parse(text: &[u8]) -> ProcessCgroups {
        let Ok(cgs) = procfs::ProcessCGroups::from_buf_read(text) else {
            return ProcessCgroups::default();
        };
        let mut out = ProcessCgroups::default();
        for cg in cgs.0 {
            let controllers: Vec<String> = cg
                .controllers
                .into_iter()
                .filter(|c| !c.is_empty())
                .collect();
            if cg.hierarchy == 0 && controllers.is_empty() {
                out.v2 = Some(cg.pathname);
            } else {
                out.v1.push((controllers, cg.pathname));
            }
        }
        out
    }

    /// The directory of v1 `controller` (e.g. `pids`), if the process is in that hierarchy.
    pub fn v1_dir(&self, controller: &str) -> Option<PathBuf> {
        self.v1
            .iter()
            .find(|(cs, _)| cs.iter().any(|c| c == controller))
            .map(|(_, p)| {
                Path::new(ROOT)
                    .join(controller)
                    .join(p.trim_start_matches('/'))
            })
    }

    /// Whether the process is in cgroup v1 hierarchies (a v1 or hybrid host).
    pub fn is_v1(&self) -> bool {
        self.v1.iter().any(|(cs, _)| !cs.is_empty())
    }

    /// The v2 directory, on a pure cgroup v2 host (on a hybrid host the v1 controllers hold the limits).
    pub fn v2_dir(&self) -> Option<PathBuf> {
        if self.is_v1() {
            return None;
        }
        self.v2
            .as_ref()
            .map(|p| Path::new(ROOT).join(p.trim_start_matches('/')))
    }

    /// The `cgroup.procs` files a sub-cgroup `sub` of the process's cgroup would be joined through
    /// (`exec --cgroup`): for `controllers` (v1; empty: every v1 hierarchy with a controller), or the
    /// v2 cgroup's.
    pub fn sub_procs(&self, controllers: &[&str], sub: &str) -> Vec<PathBuf> {
        if let Some(v2) = self.v2_dir() {
            return vec![v2.join(sub).join("cgroup.procs")];
        }
        self.v1
            .iter()
            .filter(|(cs, _)| !cs.is_empty() && !cs.iter().any(|c| c.starts_with("name=")))
            .filter(|(cs, _)| {
                controllers.is_empty() || cs.iter().any(|c| controllers.contains(&c.as_str()))
            })
            .filter_map(|(cs, _)| self.v1_dir(&cs[0]))
            .map(|d| d.join(sub).join("cgroup.procs"))
            .collect()
    }

    /// The directory whose `cgroup.procs` lists every process of the container: the v1 pids
    /// hierarchy, else the v2 cgroup.
    pub fn procs_dir(&self) -> Option<PathBuf> {
        self.v1_dir("pids").or_else(|| self.v2_dir())
    }
}

/// Whether this host has cgroup v1 hierarchies (v1 or hybrid).
pub fn host_is_v1() -> bool {
    Path::new(ROOT)
        .join("memory")
        .join("memory.limit_in_bytes")
        .exists()
        || Path::new(ROOT).join("pids").is_dir()
}

/// The pids listed in `<dir>/cgroup.procs`.
pub fn procs_in(dir: &Path) -> Vec<i32> {
    crate::fsutil::read_small_string(dir.join("cgroup.procs"))
        .map(|s| s.lines().filter_map(|l| l.trim().parse().ok()).collect())
        .unwrap_or_default()
}

/// Reads `key N` from a flat-keyed cgroup file (`memory.events`, `pids.events`, `memory.oom_control`).
pub fn read_key(path: &Path, key: &str) -> Option<u64> {
    crate::fsutil::read_small_string(path)
        .ok()?
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(' ')?;
            (k == key).then(|| v.trim().parse().ok()).flatten()
        })
}

/// Reads a single-number cgroup file.
pub fn read_u64(path: &Path) -> Option<u64> {
    crate::fsutil::read_small_string(path)
        .ok()?
        .trim()
        .parse()
        .ok()
}

// What libcontainer leaves out of cgroup setup, done from outside once the init exists.

/// On cgroup v2, memory+swap equal to the memory limit means `memory.swap.max` = 0; libcgroups 0.7
/// computes that 0 and then skips writing it, leaving `max`. rloxsc writes it itself (verification
/// then checks it).
pub fn enforce_v2_no_swap(
    cgroups: &ProcessCgroups,
    spec: &oci_spec::runtime::Spec,
) -> anyhow::Result<()> {
    let Some(dir) = cgroups.v2_dir() else {
        return Ok(());
    };
    let f = dir.join("memory.swap.max");
    let mem = spec
        .linux()
        .as_ref()
        .and_then(|l| l.resources().as_ref())
        .and_then(|r| r.memory().as_ref().copied());
    let no_swap = mem.is_some_and(|m| m.limit().is_some() && m.swap() == m.limit());
    if no_swap && f.exists() {
        std::fs::write(&f, "0").with_context(|| {
            format!(
                "cannot write 0 to {} (policy key limits.memory)",
                f.display()
            )
        })?;
    }
    Ok(())
}

/// On cgroup v2, libcgroups' device program also allows its defaults, among them `c 10:200 rwm`
/// (/dev/net/tun), after the spec's deny-all. rloxsc attaches a second program to the container's
/// cgroup that denies them; with BPF_F_ALLOW_MULTI every attached program must allow an access.
pub fn deny_v2_default_devices(cgroups: &ProcessCgroups) -> anyhow::Result<()> {
    use libcgroups::v2::devices::{bpf::prog, emulator::Emulator, program::Program};
    use oci_spec::runtime::{LinuxDeviceCgroup, LinuxDeviceType};
    use std::os::fd::AsRawFd;
    let Some(dir) = cgroups.v2_dir() else {
        return Ok(());
    };
    let mut deny = LinuxDeviceCgroup::default();
    deny.set_allow(false);
    deny.set_typ(Some(LinuxDeviceType::C));
    deny.set_major(Some(10));
    deny.set_minor(Some(200));
    deny.set_access(Some("rwm".into()));
    let mut em = Emulator::with_default_allow(true);
    em.add_rule(&deny);
    let program = Program::from_rules(&em.rules, em.default_allow).map_err(|e| {
        anyhow!("cannot build the v2 device program: {e} (policy key devices.allowed)")
    })?;
    let _ = prog::bump_memlock_rlimit(); // kernels >= 5.11 account BPF to the memory cgroup instead
    let fd = prog::load("Apache", program.bytecodes()).map_err(|e| {
        anyhow!("cannot load the v2 device program: {e} (policy key devices.allowed)")
    })?;
    // SAFETY: the fd was just returned by BPF_PROG_LOAD and is ours.
    let prog_fd = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    let cg = std::fs::File::open(&dir).with_context(|| format!("cannot open {}", dir.display()))?;
    prog::attach(prog_fd.as_raw_fd(), cg.as_raw_fd()).map_err(|e| {
        anyhow!(
            "cannot attach the v2 device program to {}: {e} (policy key devices.allowed)",
            dir.display()
        )
    })
}

/// How many eBPF device programs are attached to the cgroup directory `dir` (BPF_PROG_QUERY).
pub fn device_programs(dir: &Path) -> Result<usize, String> {
    use std::os::fd::AsRawFd;
    let cg = std::fs::File::open(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let progs = libcgroups::v2::devices::bpf::prog::query(cg.as_raw_fd())
        .map_err(|e| format!("BPF_PROG_QUERY on {}: {e}", dir.display()))?;
    for p in &progs {
        // SAFETY: query opened each fd for us (BPF_PROG_GET_FD_BY_ID) and hands it over.
        drop(unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(p.fd) });
    }
    Ok(progs.len())
}

/// libcontainer always appends `c 10:200 rwm` (/dev/net/tun) to a v1 device cgroup; take it back.
pub fn deny_v1_default_devices(cgroups: &ProcessCgroups) -> anyhow::Result<()> {
    let Some(dir) = cgroups.v1_dir("devices") else {
        return Ok(());
    };
    std::fs::write(dir.join("devices.deny"), "c 10:200 rwm").with_context(|| {
        format!(
            "cannot deny /dev/net/tun in {} (policy key devices.allowed)",
            dir.display()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hybrid_and_pure_v2() {
        let hybrid = b"12:pids:/rloxsc/c1\n11:memory:/rloxsc/c1\n4:cpu,cpuacct:/rloxsc/c1\n1:name=systemd:/x\n0::/x\n";
        let cg = ProcessCgroups::parse(hybrid);
        assert!(cg.is_v1());
        assert_eq!(
            cg.v1_dir("pids").unwrap(),
            Path::new("/sys/fs/cgroup/pids/rloxsc/c1")
        );
        assert_eq!(
            cg.v1_dir("cpuacct").unwrap(),
            Path::new("/sys/fs/cgroup/cpuacct/rloxsc/c1")
        );
        assert_eq!(cg.v2_dir(), None);
        assert_eq!(
            cg.procs_dir().unwrap(),
            Path::new("/sys/fs/cgroup/pids/rloxsc/c1")
        );
        let v2 = ProcessCgroups::parse(b"0::/rloxsc/c1\n");
        assert!(!v2.is_v1());
        assert_eq!(v2.v2_dir().unwrap(), Path::new("/sys/fs/cgroup/rloxsc/c1"));
        assert_eq!(
            v2.procs_dir().unwrap(),
            Path::new("/sys/fs/cgroup/rloxsc/c1")
        );
    }

    #[test]
    fn keys() {
        let d = std::env::temp_dir().join(format!("rloxsc-cg-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("e"), "low 0\noom 2\noom_kill 3\n").unwrap();
        assert_eq!(read_key(&d.join("e"), "oom_kill"), Some(3));
        assert_eq!(read_key(&d.join("e"), "oom"), Some(2));
        assert_eq!(read_key(&d.join("e"), "max"), None);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
