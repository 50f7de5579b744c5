//! Where a container's cgroup is, and who manages it: the one owner of that question for every verb.
//!
//! A container's cgroup is named by its hardened spec's `cgroupsPath` and by the **driver** its caller
//! chose at create: with the cgroupfs driver (runc's default) the path is a directory below each
//! hierarchy's root (`/rloxsc/<id>`, `/docker/<id>`); with the systemd driver (`--systemd-cgroup`,
//! Docker's and kubelet's default on systemd hosts) it is `slice:prefix:name`, and the cgroup is the
//! transient scope `prefix-name.scope` systemd makes below that slice
//! (`system.slice:docker:<id>` is `/system.slice/docker-<id>.scope`), its limits set as unit
//! properties, so that systemd itself keeps them. The driver is chosen once, at create, and recorded
//! in the container's footprint: every later verb (`update`, `pause`, `events`, `delete`, the
//! custodian) finds the same cgroup whether or not its own caller repeats `--systemd-cgroup`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Result};
use serde::{Deserialize, Serialize};

use super::{procs_in, ROOT};

/// Who makes the container's cgroup and sets its limits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Driver {
    /// rloxsc writes cgroupfs itself (runc's default).
    #[default]
    Cgroupfs,
    /// systemd makes a transient scope and keeps its limits as unit properties (`--systemd-cgroup`).
    Systemd,
}

/// A container's cgroup: the spec's `cgroupsPath` and the driver that manages it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    /// The hardened spec's `cgroupsPath`.
    pub path: PathBuf,
    /// The driver chosen at create.
    #[serde(default)]
    pub driver: Driver,
}

/// How long killing a cgroup's processes or removing it may take at most.
const STEP_LIMIT: Duration = Duration::from_secs(10);

/// How long an OOM-killed container's cgroup is kept after its last process is gone, so that a
/// watcher of its memory events (containerd's shim, for Docker's `State.OOMKilled` and Kubernetes'
/// `OOMKilled` reason) reads the kill before the files go: cgroup v2 delivers file notifications up
/// to 10 ms late (`CGROUP_FILE_NOTIFY_MIN_INTV`), and a read after the rmdir fails. runc's slower
/// delete left that time by accident; only OOM-killed containers wait.
const OOM_NOTICE: Duration = Duration::from_millis(50);

/// Why the systemd driver cannot be used on this host, if it cannot: systemd must run as PID 1
/// (`/run/systemd/system`, as `sd_booted` checks) and the cgroups must be pure v2, where rloxsc's
/// mechanics (libcgroups) drive systemd. runc refuses `--systemd-cgroup` without systemd too.
pub fn systemd_driver_unavailable() -> Option<String> {
    if !Path::new("/run/systemd/system").is_dir() {
        return Some(
            "systemd is not running as PID 1 on this host (/run/systemd/system is missing)".into(),
        );
    }
    if super::host_is_v1() {
        return Some("this host's cgroups are v1 or hybrid, and rloxsc drives systemd on pure cgroup v2 only".into());
    }
    None
}

/// The transient scope a systemd `cgroupsPath` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SystemdUnit {
    /// The slice it is made in (`system.slice`).
    pub slice: String,
    /// The scope's prefix (`docker`).
    pub prefix: String,
    /// The scope's name (the container id).
    pub name: String,
    /// The scope's directory below the cgroup root (`/system.slice/docker-<id>.scope`).
    pub dir: PathBuf,
}

impl SystemdUnit {
    /// The unit, `prefix-name.scope`.
    pub fn unit(&self) -> String {
        format!("{}-{}.scope", self.prefix, self.name)
    }

    /// The `cgroupsPath` written out in full: `slice:prefix:name`.
    pub fn cgroups_path(&self) -> String {
        format!("{}:{}:{}", self.slice, self.prefix, self.name)
    }
}

/// The unit a systemd `cgroupsPath` (`slice:prefix:name`, or `prefix:name` in `system.slice`)
/// names, and its directory below the cgroup root: `system.slice:docker:abc` is
/// `/system.slice/docker-abc.scope`; a slice `a-b.slice` is nested as systemd nests it
/// (`/a.slice/a-b.slice`). Refused: anything else, a name that is itself a slice (the container gets
/// a scope of its own), characters systemd does not take in unit names.
pub fn systemd_unit(path: &str) -> Result<SystemdUnit, String> {
    let parts: Vec<&str> = path.split(':').collect();
    let (slice, prefix, name) = match parts.as_slice() {
        [p, n] => ("system.slice", *p, *n),
        ["", p, n] => ("system.slice", *p, *n),
        [s, p, n] => (*s, *p, *n),
        _ => return Err(format!("{path:?} is not slice:prefix:name")),
    };
    let unit_char = |c: char| c.is_ascii_alphanumeric() || "_.-@+".contains(c);
    for (what, v) in [("prefix", prefix), ("name", name), ("slice", slice)] {
        if v.is_empty() || !v.chars().all(unit_char) {
            return Err(format!(
                "the {what} {v:?} of {path:?} is empty or not a unit name"
            ));
        }
    }
    if name.ends_with(".slice") {
        return Err(format!(
            "{path:?} names a slice, not a scope for the container"
        ));
    }
    let stem = slice
        .strip_suffix(".slice")
        .filter(|s| !s.is_empty())
        .ok_or_else(|| format!("{slice:?} in {path:?} is not a slice"))?;
    let mut dir = PathBuf::from("/");
    if stem != "-" {
        let mut nested = String::new();
        for part in stem.split('-') {
            if part.is_empty() {
                return Err(format!("{slice:?} in {path:?} is not a slice"));
            }
            nested.push_str(part);
            dir.push(format!("{nested}.slice"));
            nested.push('-');
        }
    }
    dir.push(format!("{prefix}-{name}.scope"));
    Ok(SystemdUnit {
        slice: slice.to_string(),
        prefix: prefix.to_string(),
        name: name.to_string(),
        dir,
    })
}

impl Placement {
    /// A cgroupfs placement of `path`.
    pub fn cgroupfs(path: impl Into<PathBuf>) -> Placement {
        Placement {
            path: path.into(),
            driver: Driver::Cgroupfs,
        }
    }

    /// The cgroup's path below each hierarchy's root (`/rloxsc/c1`, `/system.slice/docker-c1.scope`).
    /// A systemd path the hardening did not let through stays as given (it then names nothing).
    pub fn rel(&self) -> PathBuf {
        match self.driver {
            Driver::Cgroupfs => self.path.clone(),
            Driver::Systemd => systemd_unit(&self.path.to_string_lossy())
                .map(|u| u.dir)
                .unwrap_or_else(|_| self.path.clone()),
        }
    }

    fn below(&self, base: &Path) -> PathBuf {
        let rel = self.rel();
        base.join(rel.strip_prefix("/").unwrap_or(&rel))
    }

    /// The directory of v1 controller `controller` (e.g. `pids`).
    pub fn v1_dir(&self, controller: &str) -> PathBuf {
        self.below(&Path::new(ROOT).join(controller))
    }

    /// The v2 directory.
    pub fn v2_dir(&self) -> PathBuf {
        self.below(Path::new(ROOT))
    }

    /// The directory whose `cgroup.procs` lists every process of the container: the v1 pids
    /// hierarchy on a v1 or hybrid host, else the v2 cgroup (as [`super::ProcessCgroups::procs_dir`]
    /// finds it for a process).
    pub fn procs_dir(&self) -> PathBuf {
        if super::host_is_v1() {
            self.v1_dir("pids")
        } else {
            self.v2_dir()
        }
    }

    /// The pids of every process in the cgroup (v1 pids hierarchy, or v2), without libcgroups.
    pub fn procs(&self) -> Vec<i32> {
        let v1 = self.v1_dir("pids");
        if v1.is_dir() {
            return procs_in(&v1);
        }
        procs_in(&self.v2_dir())
    }

    /// Whether any v1 hierarchy or the v2 tree still has the cgroup.
    pub fn exists(&self) -> bool {
        let Ok(rd) = std::fs::read_dir(ROOT) else {
            return false;
        };
        let mut dirs: Vec<PathBuf> = rd.flatten().map(|e| self.below(&e.path())).collect();
        dirs.push(self.v2_dir());
        dirs.iter().any(|d| d.join("cgroup.procs").exists())
    }

    /// The cgroup directories (`cgroup.procs` in each) a process joins to be charged as the
    /// container: the v1 memory and pids hierarchies, or the v2 cgroup; only those that exist.
    pub fn charge_dirs(&self) -> Vec<PathBuf> {
        let dirs = if super::host_is_v1() {
            vec![self.v1_dir("memory"), self.v1_dir("pids")]
        } else {
            vec![self.v2_dir()]
        };
        dirs.into_iter()
            .filter(|d| d.join("cgroup.procs").exists())
            .collect()
    }

    /// Why the cgroup cannot be the container's, if it cannot: it already exists and holds
    /// processes, or cgroups below it, in one of the v1 `hierarchies` (directory names under
    /// /sys/fs/cgroup, e.g. `cpu,cpuacct`) or on v2. A container's end kills everything in its cgroup
    /// and removes it (under systemd: stops its unit), and `pause` freezes everything below it: that
    /// must only ever be the container's own.
    pub fn occupied(&self, hierarchies: &[String]) -> Option<String> {
        let mut dirs: Vec<PathBuf> = hierarchies.iter().map(|h| self.v1_dir(h)).collect();
        if hierarchies.is_empty() {
            dirs.push(self.v2_dir());
        }
        for d in dirs {
            if !d.is_dir() {
                continue;
            }
            let procs = procs_in(&d);
            if !procs.is_empty() {
                return Some(format!(
                    "the cgroup {} already holds {} process(es) (pid {})",
                    d.display(),
                    procs.len(),
                    procs[0]
                ));
            }
            let child = std::fs::read_dir(&d).ok().and_then(|rd| {
                rd.flatten()
                    .find(|e| e.path().join("cgroup.procs").exists())
            });
            if let Some(c) = child {
                return Some(format!(
                    "the cgroup {} already has the cgroup {} below it",
                    d.display(),
                    c.path().display()
                ));
            }
        }
        None
    }

    /// Whether the cgroup (or, when it does not exist yet, the nearest existing cgroup above it,
    /// which a new one inherits its state from) is frozen or freezing: v1 `freezer.state`, v2
    /// `cgroup.freeze`. A process entering a frozen cgroup stops there, unkillable until it is thawed
    /// (libcontainer's intermediate process slept forever), so create refuses first, as runc does
    /// (`container's cgroup unexpectedly frozen`). Names the cgroup that is frozen.
    pub fn frozen(&self, hierarchies: &[String]) -> Option<String> {
        self.frozen_under(Path::new(ROOT), hierarchies)
    }

    fn frozen_under(&self, root: &Path, hierarchies: &[String]) -> Option<String> {
        let (base, file, frozen_when): (PathBuf, &str, &[&str]) =
            if hierarchies.iter().any(|h| h == "freezer") {
                (
                    root.join("freezer"),
                    "freezer.state",
                    &["FROZEN", "FREEZING"],
                )
            } else if hierarchies.is_empty() {
                (root.to_path_buf(), "cgroup.freeze", &["1"])
            } else {
                return None; // v1 without a freezer hierarchy: nothing can freeze it
            };
        let mut dir = self.below(&base);
        loop {
            if dir.is_dir() {
                let state = crate::fsutil::read_small_string(dir.join(file)).ok()?;
                let state = state.trim();
                return frozen_when
                    .contains(&state)
                    .then(|| format!("{} is {state}", dir.join(file).display()));
            }
            if dir == base || !dir.pop() {
                return None;
            }
        }
    }

    /// libcgroups' manager of the cgroup (under systemd: its unit, through systemd's bus).
    pub fn manager(&self, id: &str) -> Result<libcgroups::common::AnyCgroupManager> {
        libcgroups::common::create_cgroup_manager(libcgroups::common::CgroupConfig {
            cgroup_path: self.path.clone(),
            systemd_cgroup: self.driver == Driver::Systemd,
            container_name: id.to_string(),
        })
        .map_err(|e| {
            anyhow!(
                "cannot open the cgroup {} of container {id:?}: {e}",
                self.path.display()
            )
        })
    }

    /// SIGKILLs every process of the cgroup until it holds none (bounded). After the first round the
    /// cgroup is thawed: a frozen (paused) process takes its SIGKILL only once it runs again (v1's
    /// freezer holds it; runc thaws too), so a `delete --force` of a paused container would wait
    /// out the whole bound and leave the cgroup behind.
    pub fn kill_all(&self) {
        let until = Instant::now() + STEP_LIMIT;
        let mut thawed = false;
        loop {
            let pids = self.procs();
            if pids.is_empty() || Instant::now() >= until {
                return;
            }
            for p in pids {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(p),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            if !thawed {
                self.thaw();
                thawed = true;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Thaws the cgroup where it is frozen (v1 `freezer.state`, v2 `cgroup.freeze`); a cgroup that
    /// is not frozen, or has no freezer, is left as it is.
    fn thaw(&self) {
        let v1 = self.v1_dir("freezer").join("freezer.state");
        let v2 = self.v2_dir().join("cgroup.freeze");
        for (file, thawed) in [(v1, "THAWED"), (v2, "0")] {
            let frozen = crate::fsutil::read_small_string(&file).is_ok_and(|s| s.trim() != thawed);
            if frozen {
                if let Err(e) = std::fs::write(&file, thawed) {
                    tracing::warn!("cannot thaw {}: {e}", file.display());
                }
            }
        }
    }

    /// Whether the kernel OOM-killed a process of the cgroup (`oom_kill` in v2's `memory.events` or
    /// v1's `memory.oom_control`).
    fn oom_killed(&self) -> bool {
        let v1 = self.v1_dir("memory").join("memory.oom_control");
        let v2 = self.v2_dir().join("memory.events");
        [v1, v2].iter().any(|f| {
            crate::fsutil::read_small_string(f).is_ok_and(|s| {
                s.lines().any(|l| {
                    l.strip_prefix("oom_kill ")
                        .is_some_and(|n| n.trim().parse::<u64>().is_ok_and(|n| n > 0))
                })
            })
        })
    }

    /// Where the cgroup's directory is in every hierarchy that may have it: the v2 tree on a v2
    /// host; each v1 hierarchy (a hybrid host's cgroup2 mount among them) on a v1 host, each once
    /// (v1's `cpu` and `cpuacct` are symlinks to `cpu,cpuacct`). Not asked whether each exists: the
    /// removal's `rmdir` says so (ENOENT counts as removed), one system call where a stat and then
    /// the rmdir were two.
    fn dirs(&self) -> Vec<PathBuf> {
        // on a v2 host the directories below the root are other cgroups, not hierarchies
        if !super::host_is_v1() {
            return vec![self.v2_dir()];
        }
        let Ok(rd) = std::fs::read_dir(ROOT) else {
            return vec![];
        };
        rd.flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| self.below(&e.path()))
            .collect()
    }

    /// Removes the cgroup, bounded in time, once the caller has killed its processes
    /// ([`Placement::kill_all`], as the release does first): a process still there (exiting, or
    /// started since) is killed again before each further try; under systemd its unit is stopped.
    /// An error when it still exists at the end.
    pub fn remove(&self, id: &str) -> Result<()> {
        use libcgroups::common::CgroupManager;
        // gone already (libcontainer's delete removed it): nothing to open under cgroupfs; a
        // systemd unit may outlive its cgroup, so that driver still asks systemd below
        // under cgroupfs, an emptied cgroup is removed with one rmdir per hierarchy; the manager
        // below is for what that leaves (a process still exiting) and for systemd's units
        if self.driver == Driver::Cgroupfs {
            let dirs = self.dirs();
            if self.oom_killed() {
                std::thread::sleep(OOM_NOTICE);
            }
            if remove_dirs(&dirs) {
                return Ok(());
            }
        }
        let manager = self.manager(id);
        let until = Instant::now() + STEP_LIMIT;
        while self.exists() {
            if Instant::now() >= until {
                let procs = self.procs();
                let why = if procs.is_empty() {
                    String::new()
                } else {
                    format!(
                        ": it still holds {} process(es) after SIGKILL (pid {})",
                        procs.len(),
                        procs[0]
                    )
                };
                bail!(
                    "the cgroup {} of container {id:?} could not be removed{why}",
                    self.rel().display()
                );
            }
            self.kill_all();
            if let Ok(m) = &manager {
                let _ = m.remove();
            }
            if self.exists() {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        // a systemd unit outlives its cgroup when nothing stopped it (a killed create)
        if let Ok(m) = &manager {
            let _ = m.remove();
        }
        Ok(())
    }
}

/// Removes a cgroup's (emptied) directories `dirs` with one `rmdir` each, and the cgroups the
/// container made below its own (a nested runtime, systemd inside) deepest first: what libcgroups'
/// manager does, without building one (it reads the host's mount table and each hierarchy's
/// state). True when none is left.
fn remove_dirs(dirs: &[PathBuf]) -> bool {
    let mut all = true;
    for d in dirs {
        if let Err(e) = remove_cgroup_tree(d, 0) {
            tracing::debug!("cgroup {}: {e}", d.display());
            all = false;
        }
    }
    all
}

/// How deep below a container's cgroup its own cgroups are removed (a nesting deeper than this is
/// left to libcgroups' manager, which reports what it cannot remove).
const MAX_NESTING: usize = 32;

/// Removes cgroup directory `dir` and every cgroup below it, deepest first (a cgroup directory holds
/// only the kernel's files and its child cgroups: `rmdir` of an empty one succeeds). A cgroup that is
/// gone already counts as removed.
fn remove_cgroup_tree(dir: &Path, depth: usize) -> std::io::Result<()> {
    match std::fs::remove_dir(dir) {
        Ok(()) => return Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) if e.raw_os_error() != Some(libc::EBUSY) || depth >= MAX_NESTING => return Err(e),
        Err(_) => {}
    }
    // busy: child cgroups (or processes, which the remove then reports)
    for e in std::fs::read_dir(dir)?.flatten() {
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            remove_cgroup_tree(&e.path(), depth + 1)?;
        }
    }
    match std::fs::remove_dir(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn systemd_paths_name_the_scope_systemd_makes() {
        let dir = |p: &str| systemd_unit(p).map(|u| u.dir);
        assert_eq!(
            dir("system.slice:docker:abc").unwrap(),
            Path::new("/system.slice/docker-abc.scope")
        );
        assert_eq!(
            dir("kubepods-besteffort-pod1_2.slice:cri-containerd:f00").unwrap(),
            Path::new(
                "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1_2.slice/cri-containerd-f00.scope"
            )
        );
        assert_eq!(
            dir(":libpod:x").unwrap(),
            Path::new("/system.slice/libpod-x.scope")
        );
        assert_eq!(
            dir("docker:x").unwrap(),
            Path::new("/system.slice/docker-x.scope")
        );
        assert_eq!(dir("-.slice:p:x").unwrap(), Path::new("/p-x.scope"));
        for bad in [
            "/rloxsc/c1",
            "a:b:c:d",
            "system.slice:docker:",
            "system:docker:x",
            ".slice:docker:x",
            "a--b.slice:docker:x",
            "system.slice:../..:x",
            "system.slice:docker:x/y",
            "system.slice:docker:pod.slice",
        ] {
            assert!(systemd_unit(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn a_placement_names_its_directories_under_either_driver() {
        let fs = Placement::cgroupfs("/rloxsc/c1");
        assert_eq!(fs.v2_dir(), Path::new("/sys/fs/cgroup/rloxsc/c1"));
        assert_eq!(
            fs.v1_dir("pids"),
            Path::new("/sys/fs/cgroup/pids/rloxsc/c1")
        );
        let sd = Placement {
            path: "system.slice:docker:c1".into(),
            driver: Driver::Systemd,
        };
        assert_eq!(
            sd.v2_dir(),
            Path::new("/sys/fs/cgroup/system.slice/docker-c1.scope")
        );
        // the ledger of a container made before the driver was recorded reads as cgroupfs
        let old: Placement = serde_json::from_str(r#"{"path":"/rloxsc/c1"}"#).unwrap();
        assert_eq!(old, fs);
    }

    #[test]
    fn a_frozen_cgroup_or_frozen_parent_is_found() {
        let root = std::env::temp_dir().join(format!("rloxsc-frozen-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let v1 = vec!["freezer".to_string(), "pids".to_string()];
        let ct = root.join("freezer/pod/ct");
        std::fs::create_dir_all(&ct).unwrap();
        std::fs::write(root.join("freezer/pod/freezer.state"), "THAWED\n").unwrap();
        std::fs::write(ct.join("freezer.state"), "THAWED\n").unwrap();
        let p = |s: &str| Placement::cgroupfs(s);
        assert_eq!(p("/pod/ct").frozen_under(&root, &v1), None);
        std::fs::write(ct.join("freezer.state"), "FROZEN\n").unwrap();
        let why = p("/pod/ct").frozen_under(&root, &v1).unwrap();
        assert!(why.contains("pod/ct/freezer.state is FROZEN"), "{why}");
        // not made yet: the parent it would inherit from decides
        assert_eq!(p("/pod/new").frozen_under(&root, &v1), None);
        std::fs::write(root.join("freezer/pod/freezer.state"), "FREEZING\n").unwrap();
        assert!(p("/pod/new").frozen_under(&root, &v1).is_some());
        // v2, and a systemd scope not made yet whose slice is frozen
        let v2ct = root.join("v2/a/b");
        std::fs::create_dir_all(&v2ct).unwrap();
        std::fs::write(v2ct.join("cgroup.freeze"), "1\n").unwrap();
        assert!(p("/a/b").frozen_under(&root.join("v2"), &[]).is_some());
        std::fs::write(v2ct.join("cgroup.freeze"), "0\n").unwrap();
        assert_eq!(p("/a/b").frozen_under(&root.join("v2"), &[]), None);
        let slice = root.join("v2/pod.slice");
        std::fs::create_dir_all(&slice).unwrap();
        std::fs::write(slice.join("cgroup.freeze"), "1\n").unwrap();
        let sd = Placement {
            path: "pod.slice:cri:x".into(),
            driver: Driver::Systemd,
        };
        assert!(sd.frozen_under(&root.join("v2"), &[]).is_some());
        std::fs::remove_dir_all(&root).unwrap();
    }
}
