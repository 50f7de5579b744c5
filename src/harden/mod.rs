//! The hardening transformation: a pure function from (caller's spec, policy, host facts) to the hardened
//! spec plus the list of changes made, or a refusal.
//!
//! Like sysbox-runc's `ConvertSpec()`, it rewrites the caller's spec in ordered steps, one module each.
//! Nothing here touches the system: what must be learned from the host (namespace inodes, canonical bind
//! sources, symlinks in the image) is gathered beforehand into [`HostFacts`] by [`crate::facts`].

use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;

use oci_spec::runtime::{LinuxNamespaceType, PosixRlimit, Process, Spec};

use crate::policy::Policy;

pub mod annotations;
pub mod devices;
pub mod filesystem;
pub mod invariants;
pub mod namespaces;
pub mod privileges;
pub mod resources;

/// One tightening applied to the caller's spec.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Change {
    /// The policy key that governs the change.
    pub key: &'static str,
    /// What was changed, in words.
    pub what: String,
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (policy key {})", self.what, self.key)
    }
}

/// A reason rloxsc will not run the caller's spec at all: something that cannot be tightened safely.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The policy key that governs the refusal.
    pub key: &'static str,
    /// Why, in words.
    pub reason: String,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (policy key {})", self.reason, self.key)
    }
}

impl std::error::Error for Refusal {}

/// Facts about the host that the transformation needs, gathered before it runs.
#[derive(Debug, Clone, Default)]
pub struct HostFacts {
    /// The runtime's own namespaces (the host's, as far as rloxsc can tell): type -> (device, inode).
    pub host_namespaces: HashMap<LinuxNamespaceType, (u64, u64)>,
    /// For each namespace path in the caller's spec, its (device, inode), if it could be resolved.
    pub namespace_paths: HashMap<PathBuf, (u64, u64)>,
    /// For each namespace path in the caller's spec (other than a user namespace's), the user
    /// namespace that owns it, if it could be found.
    pub namespace_owners: HashMap<PathBuf, NamespaceOwner>,
    /// For each namespace path in the caller's spec that exists, the type of namespace it is, or
    /// `None` when it is not a namespace file (`NS_GET_NSTYPE`).
    pub namespace_types: HashMap<PathBuf, Option<LinuxNamespaceType>>,
    /// For each bind-mount source in the caller's spec, its canonical path on the host, if it exists.
    pub canonical_sources: HashMap<PathBuf, PathBuf>,
    /// The policy's writable paths that are directories in the image (no symlink on the way).
    pub image_dirs: Vec<PathBuf>,
    /// The policy's writable paths and the workdir where the image has a symlink on the way.
    pub symlinked_writable: Vec<PathBuf>,
    /// Destinations inside the image (`/proc`, `/sys`, `/dev`, ...) that are symlinks.
    pub symlinked_destinations: Vec<PathBuf>,
    /// The canonical, absolute path of the bundle's root filesystem.
    pub rootfs: PathBuf,
    /// Whether the kernel has cgroup namespaces.
    pub has_cgroup_namespace: bool,
    /// Names of the cgroup v1 hierarchies mounted under `/sys/fs/cgroup` (empty on a pure v2 host).
    pub cgroup_v1_hierarchies: Vec<String>,
    /// The cgroup driver of this create (`--systemd-cgroup`: systemd, checked to be usable here).
    pub cgroup_driver: crate::cgroups::Driver,
    /// The runtime's state root (never bind-mountable).
    pub runtime_root: PathBuf,
    /// The rloxsc binary as installed and the directory of its sealed copies: never under a writable
    /// bind (a container could replace the runtime by rename: writes to a running binary fail,
    /// renames over it do not).
    pub runtime_binaries: Vec<PathBuf>,
    /// The first host id of the user-namespace block allocated for the container (`None` when the
    /// caller brings its own user namespace).
    pub userns_base: Option<u32>,
    /// The host id ranges other containers' blocks hold (a caller's mapping may not overlap them).
    pub userns_taken: Vec<(u64, u64)>,
    /// The home directory of the spec's user in the image, read from outside (see
    /// [`crate::facts::image_home`]); `None`: not looked up (the spec sets `HOME`).
    pub image_home: Option<HomeLookup>,
}

/// The user namespace that owns a namespace the caller joins by path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamespaceOwner {
    /// Its (device, inode).
    pub id: (u64, u64),
    /// A path to it: `/proc/<pid>/ns/user` when the joined namespace was named as
    /// `/proc/<pid>/ns/<type>` and that process's user namespace is the owner.
    pub path: Option<PathBuf>,
    /// Its uid mapping (`/proc/<pid>/uid_map`), when `path` is known: (inside, outside, count).
    pub uid_map: Vec<(u64, u64, u64)>,
    /// Its gid mapping (`/proc/<pid>/gid_map`), read with the uid mapping.
    pub gid_map: Vec<(u64, u64, u64)>,
}

/// The output of [`harden`].
#[derive(Debug, Clone)]
pub struct Hardened {
    /// The spec that libcontainer will run.
    pub spec: Spec,
    /// Every tightening applied to the caller's spec, in order.
    pub changes: Vec<Change>,
    /// The container's effective policy: the policy tightened by the spec's annotations. It is stored
    /// with the container and governs every later verb on it.
    pub policy: Policy,
    /// The size of the container's store (`filesystem.writable`).
    pub store_bytes: u64,
}

/// Collects changes while the steps run.
#[derive(Debug, Default)]
pub struct Changes(pub Vec<Change>);

impl Changes {
    /// Records one change under a policy key.
    pub fn push(&mut self, key: &'static str, what: impl Into<String>) {
        self.0.push(Change {
            key,
            what: what.into(),
        });
    }
}

/// Builds a [`Refusal`].
pub fn refuse(key: &'static str, reason: impl Into<String>) -> Refusal {
    Refusal {
        key,
        reason: reason.into(),
    }
}

/// Hardens `spec` for container `id` under `policy`: runs every step in order, then checks the result
/// against the hardening invariants ([`invariants::check`]: a bug in a step becomes a refusal, never a
/// running container), and returns the hardened spec with its list of changes and the effective
/// policy, or the first refusal.
pub fn harden(
    spec: &Spec,
    id: &str,
    policy: &Policy,
    facts: &HostFacts,
) -> Result<Hardened, Refusal> {
    let mut spec = spec.clone();
    let mut changes = Changes::default();

    validate_basics(&spec)?;
    let policy = annotations::tighten(policy, &spec, &mut changes);
    namespaces::harden_namespaces(&mut spec, &policy, facts, &mut changes)?;
    namespaces::harden_user_namespace(&mut spec, facts, &mut changes)?;
    filesystem::harden_root(&mut spec, facts, &mut changes)?;
    // the limits first: the store and every tmpfs are sized against the memory that pays for them
    resources::harden_cgroups_path(&mut spec, id, &policy, facts.cgroup_driver, &mut changes);
    resources::refuse_unified_on_v1(&spec, facts)?;
    resources::harden_limits(&mut spec, &policy, &mut changes);
    filesystem::harden_mounts(&mut spec, &policy, facts, &mut changes)?;
    filesystem::harden_masked_and_readonly_paths(&mut spec, &mut changes);
    // after the mounts: it may drop the /dev/mqueue mount harden_mounts requires
    namespaces::harden_joined_mount_pid_ipc(&mut spec, facts, &mut changes)?;
    let store_bytes = filesystem::store_bytes(&spec, &policy, &mut changes);
    resources::harden_sysctls(&mut spec, &mut changes);
    harden_process(
        spec.process_mut()
            .as_mut()
            .expect("checked by validate_basics"),
        &policy,
        None,
        facts.image_home.as_ref(),
        &mut changes,
    )?;
    devices::harden_devices(&mut spec, &mut changes);
    resources::low_ports_in_a_host_owned_network_namespace(&mut spec, facts, &mut changes);
    changes.push(
        crate::policy::keys::SECCOMP,
        "rloxsc's seccomp allowlist is installed under any profile the caller gives",
    );
    let caller_profile = spec
        .linux_mut()
        .as_mut()
        .and_then(|l| l.seccomp_mut().as_mut());
    if let Some(what) = caller_profile.and_then(crate::seccomp::caller::enosys_past_the_profile) {
        changes.push(crate::policy::keys::SECCOMP, what);
    }
    invariants::check(&spec, &policy, facts).map_err(|what| {
        refuse(
            invariants::KEY,
            format!(
                "internal error: the hardened spec breaks an invariant ({what}); nothing was run"
            ),
        )
    })?;

    Ok(Hardened {
        spec,
        changes: changes.0,
        policy,
        store_bytes,
    })
}

/// The process-level steps, shared by `create` (the init) and `exec` (a new process in a running
/// container), as sysbox-runc's `ConvertProcessSpec`: no_new_privileges, the five capability sets
/// clamped, oom_score_adj, the rlimits (RLIMIT_FSIZE under `limits.file_size`), and `HOME`. An exec'd process without rlimits of its own
/// gets the container init's (`inherited`) before they are clamped.
pub fn harden_process(
    process: &mut Process,
    policy: &Policy,
    inherited: Option<&[PosixRlimit]>,
    home: Option<&HomeLookup>,
    changes: &mut Changes,
) -> Result<(), Refusal> {
    if process.rlimits().is_none() {
        if let Some(rl) = inherited {
            process.set_rlimits(Some(rl.to_vec()));
        }
    }
    privileges::harden_privileges(process, policy, changes)?;
    resources::harden_rlimits(process, policy, changes);
    if let Some(what) = crate::limits::rules::harden_file_size(process, policy) {
        changes.push(crate::policy::keys::FILE_SIZE, what);
    }
    set_home(process, home, changes);
    Ok(())
}

/// Gives the process a `HOME` when its environment has none (or an empty one), from the image's
/// passwd file read by rloxsc from outside, so that libcontainer never looks the user up inside the
/// container: a lookup there goes through glibc's NSS, which loads modules the image ships into the
/// runtime's own process before rloxsc's seccomp filter is in place.
fn set_home(process: &mut Process, home: Option<&HomeLookup>, changes: &mut Changes) {
    let mut env = process.env().clone().unwrap_or_default();
    let has_home = env
        .iter()
        .any(|e| e.strip_prefix("HOME=").is_some_and(|v| !v.is_empty()));
    if has_home {
        return;
    }
    let lookup = home.cloned().unwrap_or(HomeLookup::NotListed);
    env.retain(|e| !e.starts_with("HOME="));
    env.push(format!("HOME={}", lookup.home()));
    process.set_env(Some(env));
    let why = match &lookup {
        HomeLookup::Found(_) => "from the image's /etc/passwd".to_string(),
        HomeLookup::NotListed => "the user has no entry in the image's /etc/passwd".to_string(),
        HomeLookup::Unusable(e) => format!("the image's /etc/passwd is unusable: {e}"),
    };
    changes.push(
        crate::policy::keys::HOME,
        format!(
            "HOME={} ({why}; read by rloxsc from outside, never looked up inside the container)",
            lookup.home()
        ),
    );
}

/// Checks what must be present for any container: a version 1.x spec, a root and a process with args.
fn validate_basics(spec: &Spec) -> Result<(), Refusal> {
    use crate::policy::keys;
    if !spec.version().starts_with("1.") {
        return Err(refuse(
            keys::ROOTFS,
            format!(
                "unsupported ociVersion {:?}: only 1.x specs are accepted",
                spec.version()
            ),
        ));
    }
    if spec.root().is_none() {
        return Err(refuse(keys::ROOTFS, "config.json has no root"));
    }
    let has_args = spec
        .process()
        .as_ref()
        .and_then(|p| p.args().as_ref())
        .is_some_and(|a| !a.is_empty());
    if !has_args {
        return Err(refuse(
            keys::ROOTFS,
            "config.json has no process.args: nothing to run",
        ));
    }
    Ok(())
}

/// How a process's home directory was found for its `HOME`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HomeLookup {
    /// The image's `/etc/passwd` names this home for the uid.
    Found(String),
    /// The uid has no entry (or no usable home): `/`, as runc does.
    NotListed,
    /// The file could not be used (missing, not a regular file, too large, unreadable): `/`.
    Unusable(String),
}

impl HomeLookup {
    /// The `HOME` to give the process.
    pub fn home(&self) -> &str {
        match self {
            HomeLookup::Found(h) => h,
            _ => "/",
        }
    }
}

#[cfg(test)]
pub(crate) mod testutil {
    //! Helpers shared by the steps' unit tests.
    use super::*;

    /// A careless spec as a user who turned everything off would write it.
    pub fn careless_spec() -> Spec {
        let json = r#"{
          "ociVersion": "1.0.2",
          "process": {"terminal": false, "user": {"uid": 0, "gid": 0}, "args": ["sh"], "cwd": "/",
                      "env": ["PATH=/bin"],
                      "capabilities": {"bounding": ["CAP_SYS_ADMIN","CAP_CHOWN","CAP_NET_RAW"],
                                       "effective": ["CAP_SYS_ADMIN","CAP_CHOWN"],
                                       "permitted": ["CAP_SYS_ADMIN","CAP_CHOWN"]}},
          "root": {"path": "rootfs", "readonly": false},
          "mounts": [
            {"destination": "/proc", "type": "proc", "source": "proc"},
            {"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid","strictatime","mode=755","size=65536k"]},
            {"destination": "/sys", "type": "sysfs", "source": "sysfs", "options": ["nosuid","noexec","nodev"]},
            {"destination": "/sys/fs/cgroup", "type": "cgroup", "source": "cgroup", "options": ["rw"]}
          ],
          "linux": {"namespaces": [{"type": "pid"}, {"type": "mount"}]}
        }"#;
        serde_json::from_str(json).unwrap()
    }

    /// Host facts of a plain cgroup v1 host with the rootfs at /bundle/rootfs.
    pub fn facts() -> HostFacts {
        let mut host_namespaces = HashMap::new();
        for (i, t) in [
            LinuxNamespaceType::Pid,
            LinuxNamespaceType::Mount,
            LinuxNamespaceType::Network,
            LinuxNamespaceType::Ipc,
            LinuxNamespaceType::Uts,
            LinuxNamespaceType::Cgroup,
        ]
        .into_iter()
        .enumerate()
        {
            host_namespaces.insert(t, (4, 4026531830 + i as u64));
        }
        HostFacts {
            host_namespaces,
            rootfs: PathBuf::from("/bundle/rootfs"),
            has_cgroup_namespace: true,
            cgroup_v1_hierarchies: vec!["memory".into(), "pids".into(), "systemd".into()],
            runtime_root: PathBuf::from("/run/rloxsc"),
            userns_base: Some(1 << 30),
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testutil::*;
    use super::*;

    #[test]
    fn careless_spec_is_hardened_and_every_change_is_recorded() {
        let h = harden(&careless_spec(), "c1", &Policy::default(), &facts()).unwrap();
        assert!(h.changes.len() > 5, "{:?}", h.changes);
        assert_eq!(
            h.spec.process().as_ref().unwrap().no_new_privileges(),
            Some(true)
        );
        assert_eq!(h.spec.root().as_ref().unwrap().readonly(), Some(true));
    }

    #[test]
    fn hardening_is_idempotent() {
        let once = harden(&careless_spec(), "c1", &Policy::default(), &facts()).unwrap();
        let twice = harden(&once.spec, "c1", &Policy::default(), &facts()).unwrap();
        assert_eq!(once.spec, twice.spec);
        // the only change left to report is the seccomp stacking, which always applies
        assert_eq!(twice.changes.len(), 1, "{:?}", twice.changes);
    }

    #[test]
    fn missing_args_are_refused() {
        let mut s = careless_spec();
        s.process_mut().as_mut().unwrap().set_args(Some(vec![]));
        assert!(harden(&s, "c1", &Policy::default(), &facts()).is_err());
    }

    #[test]
    fn old_spec_version_is_refused() {
        let mut s = careless_spec();
        s.set_version("0.9.0".into());
        let r = harden(&s, "c1", &Policy::default(), &facts()).unwrap_err();
        assert!(r.reason.contains("ociVersion"));
    }
}
