//! rloxsc's own directories under `--root`: libcontainer's state and the private bundles.
//!
//! libcontainer reads the spec only from `<bundle>/config.json`, so the hardened spec lives in a bundle
//! directory of rloxsc's own (`<root>/bundles/<id>`), never in the caller's. Next to it,
//! `rloxsc.json` ([`ContainerRecord`]) keeps what rloxsc needs after create: the caller's bundle path
//! (reported by `state` and to hooks), the list of changes, and the container's effective policy,
//! which every later verb on the container applies.

use std::fs;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use oci_spec::runtime::Spec;
use serde::{Deserialize, Serialize};

use crate::fsutil;
use crate::policy::Policy;

/// The directories rloxsc keeps under its root.
#[derive(Debug, Clone)]
pub struct Layout {
    root: PathBuf,
}

/// What rloxsc remembers about a container besides libcontainer's state (`rloxsc.json`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ContainerRecord {
    /// The bundle directory the caller gave.
    pub caller_bundle: PathBuf,
    /// Every tightening applied to the caller's spec.
    pub changes: Vec<String>,
    /// The container's effective policy (the policy in force at create, tightened by the spec's
    /// annotations): what `start`, `exec`, `update`, `events` and `delete` apply to it.
    pub policy: Policy,
    /// The init process, by pid *and* start time (set once the create is verified): a pid alone can
    /// be recycled by another process after the init is gone, and must not then be signalled.
    #[serde(default)]
    pub init: Option<ProcessIdentity>,
    /// The egress allowlist in force when `update --egress-allow` changed it (never wider than the
    /// policy's); `None`: the policy's own.
    #[serde(default)]
    pub egress_in_force: Option<Vec<crate::egress_rule::EgressRule>>,
    /// What bounds the bytes the container writes (`limits.disk`, or its store), as create set it.
    #[serde(default)]
    pub disk: Option<crate::limits::disk::Bound>,
}

impl ContainerRecord {
    /// The effective policy with the egress allowlist in force now: what verification judges.
    pub fn policy_in_force(&self) -> Policy {
        let mut p = self.policy.clone();
        if let Some(list) = &self.egress_in_force {
            p.egress_allow = list.clone();
        }
        p
    }
}

/// A process named so that a recycled pid is not mistaken for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessIdentity {
    /// Its pid (in the host's pid namespace).
    pub pid: i32,
    /// Its start time (`/proc/<pid>/stat` field 22, clock ticks since boot).
    pub start_time: u64,
}

impl ProcessIdentity {
    /// The identity of the running process `pid`.
    pub fn of(pid: i32) -> Option<ProcessIdentity> {
        start_time(pid).map(|start_time| ProcessIdentity { pid, start_time })
    }

    /// Whether `pid` is still this process (same pid, same start time).
    pub fn is_alive(&self) -> bool {
        start_time(self.pid) == Some(self.start_time)
    }
}

/// The start time of process `pid`, if it exists.
pub fn start_time(pid: i32) -> Option<u64> {
    procfs::process::Process::new(pid)
        .ok()?
        .stat()
        .ok()
        .map(|s| s.starttime)
}

impl Layout {
    /// The layout under `root` (not created yet).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Layout { root: root.into() }
    }

    /// The runtime root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// libcontainer's state root: `<root>/containers`.
    pub fn containers(&self) -> PathBuf {
        self.root.join("containers")
    }

    /// The state directory of container `id`.
    pub fn container_dir(&self, id: &str) -> PathBuf {
        self.containers().join(id)
    }

    /// The private bundle of container `id`.
    pub fn bundle_dir(&self, id: &str) -> PathBuf {
        self.root.join("bundles").join(id)
    }

    /// Creates the root and its subdirectories (mode 0700).
    pub fn ensure(&self) -> Result<()> {
        for d in [
            self.root.clone(),
            self.containers(),
            self.root.join("bundles"),
        ] {
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&d)
                .with_context(|| format!("cannot create state directory {}", d.display()))?;
        }
        Ok(())
    }

    /// Writes the private bundle of `id` (its directory made by [`crate::footprint::Footprint::begin`],
    /// or here): the hardened config.json and rloxsc.json. Fails if they exist. (Compact JSON and no
    /// fsync: the state root is a tmpfs, and a crash takes the containers too.)
    pub fn write_bundle(&self, id: &str, spec: &Spec, meta: &ContainerRecord) -> Result<PathBuf> {
        let dir = self.bundle_dir(id);
        match fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => {
                return Err(e)
                    .with_context(|| format!("cannot create private bundle {}", dir.display()))
            }
        }
        fsutil::write_new(&dir.join("config.json"), &serde_json::to_vec(spec)?, 0o600)?;
        fsutil::write_new(&dir.join("rloxsc.json"), &serde_json::to_vec(meta)?, 0o600)?;
        Ok(dir)
    }

    /// Reads rloxsc.json of `id`.
    pub fn read_record(&self, id: &str) -> Result<ContainerRecord> {
        let p = self.bundle_dir(id).join("rloxsc.json");
        let data = fs::read(&p).with_context(|| format!("cannot read {}", p.display()))?;
        serde_json::from_slice(&data)
            .with_context(|| format!("{} is not rloxsc's record", p.display()))
    }

    /// Reads the hardened spec of `id`.
    pub fn read_spec(&self, id: &str) -> Result<Spec> {
        let p = self.bundle_dir(id).join("config.json");
        Spec::load(&p).with_context(|| format!("cannot read the hardened spec {}", p.display()))
    }

    /// Replaces rloxsc.json of `id`, atomically.
    pub fn rewrite_record(&self, id: &str, record: &ContainerRecord) -> Result<()> {
        let p = self.bundle_dir(id).join("rloxsc.json");
        fsutil::replace_file(&p, &serde_json::to_vec(record)?, 0o600, "container record")
    }

    /// Replaces the hardened spec of `id` (after `update`), atomically.
    pub fn rewrite_spec(&self, id: &str, spec: &Spec) -> Result<()> {
        let p = self.bundle_dir(id).join("config.json");
        fsutil::replace_file(&p, &serde_json::to_vec(spec)?, 0o600, "hardened spec")
    }

    /// Removes the private bundle of `id` (absent is fine).
    pub fn remove_bundle(&self, id: &str) -> Result<()> {
        let dir = self.bundle_dir(id);
        // never through a mount below it (the client's layer kept there): remove_dir_all would
        // empty it; each directory is asked whether it is a mount root (no mountinfo to read)
        if let Some(done) = fsutil::remove_tree_within_mount(&dir) {
            return done;
        }
        // a kernel that cannot say: mountinfo names the mounts (with the canonical path: /run, not
        // the /var/run a client may give as --root)
        let canonical = fs::canonicalize(&dir).unwrap_or_else(|_| dir.clone());
        if let Ok(mounts) = crate::mountinfo::own() {
            if let Some(m) = mounts.iter().find(|m| m.point.starts_with(&canonical)) {
                anyhow::bail!(
                    "cannot remove {}: {} is still mounted there",
                    dir.display(),
                    m.point.display()
                );
            }
        }
        match fs::remove_dir_all(&dir) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e).with_context(|| format!("cannot remove {}", dir.display())),
        }
    }
}

/// Reads and parses the caller's config.json with a clear error for every kind of bad input.
pub fn load_caller_spec(bundle: &Path) -> Result<Spec> {
    load_caller_spec_file(&bundle.join("config.json"))
}

/// [`load_caller_spec`] of a config file at any path.
pub fn load_caller_spec_file(path: &Path) -> Result<Spec> {
    use std::os::unix::fs::OpenOptionsExt;
    // non-blocking open and at most the limit + 1 bytes: a FIFO or /dev/zero as config.json must not
    // hang rloxsc or make it read without end (a symlinked config.json is the caller's business)
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let data = match fsutil::read_open_regular_bounded(f, path, MAX_CONFIG_BYTES) {
        Ok(d) => d,
        Err(e) if e.to_string().contains("larger than") => bail!(
            "{} is over 16 MiB; rloxsc refuses config files that large",
            path.display()
        ),
        Err(e) => return Err(e),
    };
    parse_caller_spec(&data, path)
}

/// The largest config.json rloxsc reads.
pub const MAX_CONFIG_BYTES: usize = 16 * 1024 * 1024;

/// Parses the bytes of a caller's config.json (read from `path`, named in errors); what
/// [`load_caller_spec_file`] does after reading, and what `fuzz/` feeds arbitrary bytes.
pub fn parse_caller_spec(data: &[u8], path: &Path) -> Result<Spec> {
    if data.len() > MAX_CONFIG_BYTES {
        bail!(
            "{} is over 16 MiB; rloxsc refuses config files that large",
            path.display()
        );
    }
    let value: serde_json::Value = serde_json::from_slice(data)
        .map_err(|e| anyhow!("{} is not valid JSON: {e}", path.display()))?;
    serde_json::from_value(value)
        .map_err(|e| anyhow!("{} is not a valid OCI runtime spec: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundle_roundtrip_and_removal() {
        let root = std::env::temp_dir().join(format!("rloxsc-layout-{}", std::process::id()));
        let l = Layout::new(&root);
        l.ensure().unwrap();
        let meta = ContainerRecord {
            caller_bundle: "/b".into(),
            changes: vec!["x".into()],
            policy: Policy::default(),
            init: None,
            egress_in_force: None,
            disk: None,
        };
        l.write_bundle("c1", &Spec::default(), &meta).unwrap();
        assert!(
            l.write_bundle("c1", &Spec::default(), &meta).is_err(),
            "exists"
        );
        let back = l.read_record("c1").unwrap();
        assert_eq!(back.caller_bundle, PathBuf::from("/b"));
        assert_eq!(back.policy, Policy::default());
        l.read_spec("c1").unwrap();
        l.remove_bundle("c1").unwrap();
        l.remove_bundle("c1").unwrap();
        assert!(!l.bundle_dir("c1").exists());
        fs::remove_dir_all(&root).unwrap();
    }
}
