//! Kernel features rloxsc uses that not every supported kernel has: one function per feature, each
//! probing the running kernel (with the system call itself where that is cheap and harmless, else by
//! the kernel's version) and naming the feature, the first Linux release that has it and the policy
//! key whose promise depends on it. `rloxsc doctor` prints them all; code that must refuse a container
//! for want of one says [`Probe::refusal`], one line naming all three (never a bare `EINVAL`).
//!
//! The releases are the kernel's (from the commits that added each feature), checked against the
//! matrix (`tests/matrix`: Debian's 5.10, 6.1 and 6.12 and this project's 6.18 hosts).

use std::sync::OnceLock;

/// A kernel feature: what it is, the first Linux release with it, and the policy key it serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Feature {
    /// What the feature is, as a user would search for it.
    pub name: &'static str,
    /// The first Linux release that has it.
    pub since: (u32, u32),
    /// The policy key whose promise needs it.
    pub key: &'static str,
    /// What rloxsc does with it (what will not work without it).
    pub used_for: &'static str,
    /// Whether rloxsc refuses every container without it (`false`: it works with less, e.g. the
    /// image's files shown as nobody's, and says so).
    pub required: bool,
}

/// How a [`Probe`] decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// The system call or mount was tried on this kernel.
    Tried,
    /// Judged from the running kernel's release (trying it needs more than a probe should do).
    ByVersion,
}

/// A feature and whether the running kernel has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    pub feature: Feature,
    /// `Err` says what failed (the errno, or the release that is too old).
    pub available: Result<(), String>,
    pub method: Method,
}

impl Probe {
    pub fn ok(&self) -> bool {
        self.available.is_ok()
    }

    /// `Linux 6.3`: the release that has the feature.
    pub fn since(&self) -> String {
        format!("Linux {}.{}", self.feature.since.0, self.feature.since.1)
    }

    /// One line for a refusal: the feature, that this kernel lacks it, the release that has it, the key.
    pub fn refusal(&self) -> String {
        format!(
            "{} is not available on this kernel ({}; it needs {} or newer): {} (policy key {})",
            self.feature.name,
            running_release(),
            self.since(),
            self.feature.used_for,
            self.feature.key
        )
    }
}

pub const IDMAPPED_MOUNTS: Feature = Feature {
    name: "idmapped mounts (mount_setattr MOUNT_ATTR_IDMAP)",
    since: (5, 12),
    key: "userns.mode",
    used_for: "the rootfs and binds shown with the container's ids",
    required: true,
};
pub const IDMAPPED_OVERLAYFS_LAYERS: Feature = Feature {
    name: "idmapped overlayfs layers",
    since: (5, 19),
    key: "userns.mode",
    used_for: "an overlayfs rootfs (Docker, Podman, containerd) owned by the container's root",
    required: false,
};
pub const IDMAPPED_TMPFS: Feature = Feature {
    name: "idmapped tmpfs mounts",
    since: (6, 3),
    key: "filesystem.writable",
    used_for: "the host-side views of the writable paths that docker cp and put_archive use",
    required: false,
};
pub const MOUNT_SETATTR: Feature = Feature {
    name: "mount_setattr(2) (recursive mount attributes)",
    since: (5, 12),
    key: "mounts.writable_binds",
    used_for: "nosuid,nodev (and ro) on every submount of a bind (rnosuid, rnodev, rro)",
    required: true,
};
pub const OPEN_TREE: Feature = Feature {
    name: "open_tree(2) and move_mount(2) (detached mounts)",
    since: (5, 2),
    key: "filesystem.writable",
    used_for: "the writable paths' tmpfs, made from outside and attached into the container",
    required: true,
};
pub const FSOPEN: Feature = Feature {
    name: "fsopen(2)/fsmount(2) (the new mount API)",
    since: (5, 2),
    key: "filesystem.writable",
    used_for: "the writable paths' tmpfs",
    required: true,
};
pub const PIDFD: Feature = Feature {
    name: "pidfd_open(2)",
    since: (5, 3),
    key: "runtime.trusted_files",
    used_for: "kill and delete signal the init they recorded, by pidfd",
    required: true,
};
pub const OPENAT2: Feature = Feature {
    name: "openat2(2) RESOLVE_IN_ROOT",
    since: (5, 6),
    key: "process.home",
    used_for: "the image's /etc/passwd read from outside, resolved inside the image",
    required: true,
};
pub const CGROUP_FREEZE: Feature = Feature {
    name: "cgroup v2 freezer (cgroup.freeze)",
    since: (5, 2),
    key: "container.processes",
    used_for: "pause and resume on cgroup v2",
    required: false,
};

/// Every feature, in the order doctor prints them.
pub const ALL: &[Feature] = &[
    IDMAPPED_MOUNTS,
    IDMAPPED_OVERLAYFS_LAYERS,
    IDMAPPED_TMPFS,
    MOUNT_SETATTR,
    OPEN_TREE,
    FSOPEN,
    PIDFD,
    OPENAT2,
    CGROUP_FREEZE,
];

/// The running kernel's release, e.g. `6.1.0-57-amd64`.
pub fn running_release() -> String {
    crate::fsutil::read_small_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown release".into())
}

/// `(major, minor)` of a release string (`6.12.95+deb12-amd64` -> (6, 12)).
pub fn parse_release(release: &str) -> (u32, u32) {
    let mut it = release
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|s| s.parse().ok());
    (it.next().unwrap_or(0), it.next().unwrap_or(0))
}

/// `(major, minor)` of the running kernel.
pub fn running_version() -> (u32, u32) {
    static V: OnceLock<(u32, u32)> = OnceLock::new();
    *V.get_or_init(|| parse_release(&running_release()))
}

fn by_version(feature: Feature) -> Probe {
    let v = running_version();
    Probe {
        feature,
        available: if v >= feature.since {
            Ok(())
        } else {
            Err(format!("Linux {}.{} is older", v.0, v.1))
        },
        method: Method::ByVersion,
    }
}

/// Calls a system call with arguments it must reject, to tell ENOSYS (absent) from any other error.
fn syscall_exists(nr: libc::c_long, args: [libc::c_long; 5]) -> Result<(), String> {
    // SAFETY: every probe passes an invalid fd (-1) or a null pointer with a zero size, so the kernel
    // rejects the call before it touches memory or changes anything; the result is only inspected.
    let r = unsafe { libc::syscall(nr, args[0], args[1], args[2], args[3], args[4]) };
    if r >= 0 {
        // SAFETY: a successful probe returned an fd we own (it never does with these arguments).
        unsafe { libc::close(r as i32) };
        return Ok(());
    }
    match std::io::Error::last_os_error().raw_os_error() {
        Some(libc::ENOSYS) => Err("the system call is absent (ENOSYS)".into()),
        _ => Ok(()),
    }
}

fn tried(feature: Feature, available: Result<(), String>) -> Probe {
    Probe {
        feature,
        available,
        method: Method::Tried,
    }
}

/// Idmapped mounts (5.12): `mount_setattr` exists (it came with `MOUNT_ATTR_IDMAP`).
pub fn idmapped_mounts() -> Probe {
    tried(IDMAPPED_MOUNTS, mount_setattr_exists())
}

fn mount_setattr_exists() -> Result<(), String> {
    syscall_exists(libc::SYS_mount_setattr, [-1, 0, 0, 0, 0])
}

/// Idmapped overlayfs layers (5.19), judged by version (a probe would need an overlay mount).
pub fn idmapped_overlayfs_layers() -> Probe {
    by_version(IDMAPPED_OVERLAYFS_LAYERS)
}

/// Idmapped tmpfs (6.3): a small detached tmpfs is idmapped onto a new user namespace.
pub fn idmapped_tmpfs() -> Probe {
    static R: OnceLock<Result<(), String>> = OnceLock::new();
    let r = R.get_or_init(|| {
        if mount_setattr_exists().is_err() {
            return Err("no idmapped mounts at all (mount_setattr is absent)".into());
        }
        // a tmpfs of its own: idmapping the root filesystem says nothing of tmpfs (6.12 idmaps
        // both; 5.19 ext4 and not tmpfs)
        crate::userns::probe_tmpfs().map_err(|e| format!("{e:#}"))
    });
    tried(IDMAPPED_TMPFS, r.clone())
}

/// `mount_setattr` (5.12).
pub fn mount_setattr() -> Probe {
    tried(MOUNT_SETATTR, mount_setattr_exists())
}

/// `open_tree` (5.2).
pub fn open_tree() -> Probe {
    tried(
        OPEN_TREE,
        syscall_exists(libc::SYS_open_tree, [-1, 0, 0, 0, 0]),
    )
}

/// `fsopen` (5.2).
pub fn fsopen() -> Probe {
    tried(FSOPEN, syscall_exists(libc::SYS_fsopen, [0, -1, 0, 0, 0]))
}

/// `pidfd_open` (5.3).
pub fn pidfd() -> Probe {
    tried(
        PIDFD,
        syscall_exists(libc::SYS_pidfd_open, [-1, 0, 0, 0, 0]),
    )
}

/// `openat2` (5.6).
pub fn openat2() -> Probe {
    tried(OPENAT2, syscall_exists(libc::SYS_openat2, [-1, 0, 0, 0, 0]))
}

/// The v2 freezer (5.2), judged by version (on v1 hosts the v1 freezer is used instead).
pub fn cgroup_freeze() -> Probe {
    by_version(CGROUP_FREEZE)
}

/// The first feature rloxsc cannot create containers without that this kernel lacks, if any: what
/// `create` refuses with ([`Probe::refusal`]) before it acquires anything, instead of failing
/// halfway with a bare errno (Debian 11's 5.10 has no `mount_setattr`: `ENOSYS`). It runs on every
/// create, so it probes only the required features, each one system call that fails at once (not
/// the idmapped tmpfs probe, which makes a user namespace and a mount).
pub fn missing_required() -> Option<Probe> {
    first_missing_required(probe_required())
}

/// The probes of the required features (every feature of [`ALL`] with `required`; a unit test holds
/// the two lists together).
fn probe_required() -> Vec<Probe> {
    vec![
        idmapped_mounts(),
        mount_setattr(),
        open_tree(),
        fsopen(),
        pidfd(),
        openat2(),
    ]
}

/// The first of `probes` that is required and not available.
fn first_missing_required(probes: Vec<Probe>) -> Option<Probe> {
    probes.into_iter().find(|p| p.feature.required && !p.ok())
}

/// Every probe, in [`ALL`]'s order.
pub fn probe_all() -> Vec<Probe> {
    vec![
        idmapped_mounts(),
        idmapped_overlayfs_layers(),
        idmapped_tmpfs(),
        mount_setattr(),
        open_tree(),
        fsopen(),
        pidfd(),
        openat2(),
        cgroup_freeze(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    // Issue #33: the idmapped-tmpfs probe idmapped the root filesystem, so `doctor` said on 6.12 (a
    // guest whose root cannot be idmapped) that docker cp "will not work" while it worked. It idmaps
    // a tmpfs now: on a kernel that has the feature it is found (run as root, as the suite is).
    #[test]
    fn the_idmapped_tmpfs_probe_tries_a_tmpfs() {
        // SAFETY: geteuid has no preconditions
        if running_version() < IDMAPPED_TMPFS.since || unsafe { libc::geteuid() } != 0 {
            return;
        }
        let p = idmapped_tmpfs();
        assert!(p.ok(), "{:?}", p.available);
    }

    // Debian 11's 5.10 (measured in tests/matrix): no mount_setattr, so no idmapped mounts; rloxsc
    // refuses at create naming the feature, not ENOSYS halfway; a missing optional feature refuses
    // nothing.
    #[test]
    fn a_kernel_without_a_required_feature_is_refused_by_name() {
        let lacks = |f: Feature| Probe {
            feature: f,
            available: Err("the system call is absent (ENOSYS)".into()),
            method: Method::Tried,
        };
        let has = |f: Feature| Probe {
            feature: f,
            available: Ok(()),
            method: Method::Tried,
        };
        let on_5_10 = vec![
            lacks(IDMAPPED_MOUNTS),
            lacks(IDMAPPED_TMPFS),
            has(OPEN_TREE),
        ];
        let refused = first_missing_required(on_5_10).unwrap();
        assert_eq!(refused.feature, IDMAPPED_MOUNTS);
        assert!(
            refused.refusal().contains("Linux 5.12"),
            "{}",
            refused.refusal()
        );
        assert_eq!(
            first_missing_required(vec![lacks(IDMAPPED_TMPFS), lacks(CGROUP_FREEZE)]),
            None
        );
        assert_eq!(
            missing_required(),
            None,
            "this project's hosts have every required feature"
        );
    }

    #[test]
    fn create_probes_exactly_the_required_features() {
        let probed: Vec<Feature> = probe_required().into_iter().map(|p| p.feature).collect();
        let required: Vec<Feature> = ALL.iter().filter(|f| f.required).copied().collect();
        assert_eq!(probed, required);
    }

    #[test]
    fn releases_parse() {
        assert_eq!(parse_release("6.12.95+deb12-amd64"), (6, 12));
        assert_eq!(parse_release("5.10.0-46-amd64"), (5, 10));
        assert_eq!(parse_release("6.18.44-fc-v1045"), (6, 18));
        assert_eq!(parse_release("garbage"), (0, 0));
    }

    #[test]
    fn every_feature_is_probed_once_in_order() {
        let probes = probe_all();
        assert_eq!(probes.len(), ALL.len());
        for (p, f) in probes.iter().zip(ALL) {
            assert_eq!(&p.feature, f);
        }
    }

    #[test]
    fn a_refusal_names_the_feature_the_release_and_the_key() {
        let p = Probe {
            feature: IDMAPPED_TMPFS,
            available: Err("Invalid argument".into()),
            method: Method::Tried,
        };
        let r = p.refusal();
        assert!(r.contains("idmapped tmpfs"), "{r}");
        assert!(r.contains("Linux 6.3 or newer"), "{r}");
        assert!(r.contains("policy key filesystem.writable"), "{r}");
    }

    #[test]
    fn syscalls_this_kernel_has_are_found() {
        // the build and test hosts run Linux >= 5.10
        assert!(open_tree().ok() && fsopen().ok() && pidfd().ok() && openat2().ok());
        assert!(
            syscall_exists(100_000, [0; 5]).is_err(),
            "an unknown syscall is ENOSYS"
        );
    }

    #[test]
    fn keys_are_policy_keys() {
        for f in ALL {
            assert!(
                crate::policy::keys::ALL.contains(&f.key),
                "{} names {}",
                f.name,
                f.key
            );
        }
    }
}
