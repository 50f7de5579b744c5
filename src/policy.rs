//! The hardening policy: every default and ceiling of rloxsc's mandatory hardened default, in one place.
//!
//! The policy says *what* the hardened spec must be; [`crate::harden`] applies it to a caller's spec and
//! [`crate::verify`] checks that the running container really got it. Policy keys (the dotted names in
//! [`keys`]) are quoted in every log line and error so that a user knows which setting governs a decision.

use oci_spec::runtime::Capability;

/// Names of the policy keys quoted in changes, refusals and verification errors.
pub mod keys {
    /// Which namespaces every container gets (pid, mount, ipc, uts, network, cgroup).
    pub const NAMESPACES: &str = "namespaces.required";
    /// Every container's root is an unprivileged host uid: its own user namespace and id block.
    pub const USERNS: &str = "userns.mode";
    /// Joining an existing namespace by path (allowed unless it is the host's).
    pub const NAMESPACES_JOIN: &str = "namespaces.join";
    /// What the container's network namespace may hold and where its traffic may go
    /// (`inbound-only` by default: reachable through the caller's interfaces, never reaching out).
    pub const NETWORK_MODE: &str = "network.mode";
    /// The destinations (addresses or CIDRs, optional port) an `inbound-only` container may reach.
    pub const EGRESS_ALLOW: &str = "network.egress_allow";
    /// rloxsc's own seccomp allowlist, stacked under the caller's profile.
    pub const SECCOMP: &str = "seccomp.profile";
    /// The container's root filesystem is mounted read-only.
    pub const READONLY_ROOT: &str = "filesystem.readonly_root";
    /// Paths masked inside the container (`/proc/kcore`, `/sys/firmware`, ...).
    pub const MASKED_PATHS: &str = "filesystem.masked_paths";
    /// Paths made read-only inside the container (`/proc/sys`, `/sys`, cgroupfs, ...).
    pub const READONLY_PATHS: &str = "filesystem.readonly_paths";
    /// Writable scratch space: size-limited `nosuid,nodev` tmpfs only.
    pub const TMPFS: &str = "filesystem.tmpfs_size";
    /// The paths a container may write (its workdir, HOME, `/tmp`, ...): windows onto the container's
    /// root overlay, whose writes land in the container's store; never a system path nor a directory
    /// holding one. The rest of the line, kept for the key list:
    /// a copy of what the image has there, never a system path.
    pub const WRITABLE: &str = "filesystem.writable";
    /// Mount types a caller may ask for.
    pub const MOUNT_TYPES: &str = "mounts.allowed_types";
    /// Host paths that may never be bind-mounted into a container.
    pub const SENSITIVE_BINDS: &str = "mounts.sensitive_sources";
    /// Whether a caller's bind mounts may be writable.
    pub const WRITABLE_BINDS: &str = "mounts.writable_binds";
    /// The pids cgroup limit.
    pub const PIDS: &str = "limits.pids";
    /// The memory cgroup limit (and swap, never above it).
    pub const MEMORY: &str = "limits.memory";
    /// RLIMIT_NOFILE.
    pub const NOFILE: &str = "limits.nofile";
    /// RLIMIT_CORE (always 0).
    pub const CORE: &str = "limits.core";
    /// RLIMIT_RTPRIO and RLIMIT_NICE (always 0: no real-time or raised priority).
    pub const PRIORITY: &str = "limits.priority";
    /// The ptys a container's devpts instance may hold (`max=`).
    pub const PTYS: &str = "limits.ptys";
    /// How long a create may take before everything it started is killed.
    pub const CREATE_TIMEOUT: &str = "limits.create_timeout";
    /// CPU time of the whole container (every process, from its cgroup): it is killed when spent.
    pub const CPU_TIME: &str = "limits.cpu_time";
    /// RLIMIT_FSIZE of every process of the container, exec'd ones included.
    pub const FILE_SIZE: &str = "limits.file_size";
    /// What a container may write into the client's writable layer: a project quota where its
    /// filesystem enforces one (a policy may require it).
    pub const DISK: &str = "limits.disk";
    /// Raw cgroup v2 `unified` keys a caller may set.
    pub const UNIFIED: &str = "limits.unified";
    /// The capability set a container may hold.
    pub const CAPABILITIES: &str = "capabilities.allowed";
    /// no_new_privileges (always on).
    pub const NO_NEW_PRIVS: &str = "process.no_new_privileges";
    /// oom_score_adj never below 0.
    pub const OOM_SCORE_ADJ: &str = "process.oom_score_adj";
    /// `HOME` is resolved by rloxsc from outside (never by NSS inside the container).
    pub const HOME: &str = "process.home";
    /// Device nodes and device cgroup rules.
    pub const DEVICES: &str = "devices.allowed";
    /// Sysctls a caller may set (namespaced ones only).
    pub const SYSCTL: &str = "sysctl.allowed";
    /// Where containers' cgroups are placed when the caller gives no absolute path.
    pub const CGROUP_PARENT: &str = "cgroups.parent";
    /// The container's root filesystem itself (must exist, must not be a symlink).
    pub const ROOTFS: &str = "filesystem.rootfs";
    /// The runtime binary is sealed (read-only overlay or sealed memfd) before containers see it.
    pub const EXE_SEAL: &str = "runtime.sealed_binary";
    /// Before the payload runs, the container's cgroup holds only its init, every process filtered.
    pub const PROCESSES: &str = "container.processes";
    /// Host files root's rloxsc trusts (policy files, the state root, the records directory) are
    /// root's and writable only by root, like every directory above them.
    pub const TRUSTED_FILES: &str = "runtime.trusted_files";
    /// Runtime options that would weaken containment (e.g. `--no-pivot`).
    pub const CLI: &str = "cli.weakening_options";
    /// Syscalls a policy allows on top of rloxsc's allowlist (never a forbidden one).
    pub const EXTRA_SYSCALLS: &str = "seccomp.extra_syscalls";
    /// The hardened spec satisfies every hardening invariant (a broken one is an internal error).
    pub const INVARIANTS: &str = "hardening.invariants";

    /// Every key above, in the order docs/SPECIFICATION.md lists them.
    pub const ALL: &[&str] = &[
        NAMESPACES,
        NAMESPACES_JOIN,
        USERNS,
        NETWORK_MODE,
        EGRESS_ALLOW,
        SECCOMP,
        EXTRA_SYSCALLS,
        PROCESSES,
        READONLY_ROOT,
        ROOTFS,
        MASKED_PATHS,
        READONLY_PATHS,
        TMPFS,
        WRITABLE,
        MOUNT_TYPES,
        SENSITIVE_BINDS,
        WRITABLE_BINDS,
        PIDS,
        MEMORY,
        NOFILE,
        CORE,
        PRIORITY,
        PTYS,
        CREATE_TIMEOUT,
        CPU_TIME,
        FILE_SIZE,
        DISK,
        UNIFIED,
        CAPABILITIES,
        NO_NEW_PRIVS,
        OOM_SCORE_ADJ,
        HOME,
        DEVICES,
        SYSCTL,
        CGROUP_PARENT,
        EXE_SEAL,
        TRUSTED_FILES,
        CLI,
        INVARIANTS,
    ];
}

/// A numeric limit: the value used when the caller gives none, and the highest value a caller may ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Limit {
    /// Applied when the caller sets no limit (or "unlimited").
    pub default: u64,
    /// The highest value a caller's request is kept at; anything above is clamped to it.
    pub ceiling: u64,
}

impl Limit {
    /// Clamps a caller's request: `None` (absent or unlimited) gives the default, anything above the
    /// ceiling gives the ceiling, anything else is kept.
    pub fn clamp(&self, requested: Option<u64>) -> u64 {
        match requested {
            None => self.default,
            Some(v) if v > self.ceiling => self.ceiling,
            Some(v) => v,
        }
    }
}

/// A limit that is off unless the policy, an annotation or a flag sets it: the value applied, and the
/// highest a request is kept at (`None`: no ceiling). A default above the ceiling is the ceiling.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct OptionalLimit {
    /// Applied when nothing tightens it; `None`: no limit.
    pub default: Option<u64>,
    /// The highest value a request is kept at.
    pub ceiling: Option<u64>,
}

impl OptionalLimit {
    /// The value in force: the default, never above the ceiling (a ceiling alone is the value).
    pub fn value(&self) -> Option<u64> {
        match (self.default, self.ceiling) {
            (Some(d), Some(c)) => Some(d.min(c)),
            (d, c) => d.or(c),
        }
    }

    /// Tightens the value in force to `v` when `v` is lower (an annotation or a flag: never looser).
    pub fn tighten(&mut self, v: u64) -> bool {
        if self.value().is_some_and(|cur| cur <= v) {
            return false;
        }
        self.default = Some(v);
        true
    }
}

/// What the container's network namespace may contain once the caller's hooks have run, and where
/// its traffic may go (see [`crate::network`]). Ordered from the strictest.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum NetworkMode {
    /// Only the loopback interface is usable.
    LoopbackOnly,
    /// The caller's interfaces are kept; connections into the container work, every connection or
    /// datagram it starts outward is refused but to the egress allowlist (the default).
    InboundOnly,
    /// Any interface the caller's hooks add, unfiltered, still in a namespace of its own.
    Namespace,
}

impl NetworkMode {
    /// The policy-file spelling of the mode.
    pub fn as_str(&self) -> &'static str {
        match self {
            NetworkMode::LoopbackOnly => "loopback-only",
            NetworkMode::InboundOnly => "inbound-only",
            NetworkMode::Namespace => "namespace",
        }
    }

    /// The mode a policy file or an annotation spells `s`.
    pub fn parse(s: &str) -> Option<NetworkMode> {
        [
            NetworkMode::LoopbackOnly,
            NetworkMode::InboundOnly,
            NetworkMode::Namespace,
        ]
        .into_iter()
        .find(|m| m.as_str() == s)
    }
}

/// The hardening policy. A container's *effective* policy (this one tightened by its annotations) is
/// stored with its state, and every later verb (`start`, `exec`, `update`, `events`, `delete`) reads
/// that one, never the policy file of the moment.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Policy {
    /// pids cgroup limit (`pids.max`).
    pub pids: Limit,
    /// memory cgroup limit in bytes; swap is never allowed above it.
    pub memory_bytes: Limit,
    /// RLIMIT_NOFILE (soft and hard).
    pub nofile: Limit,
    /// Size of each writable tmpfs, in bytes.
    pub tmpfs_bytes: Limit,
    /// Size of the container's store (the upper layer of its root overlay: everything it writes
    /// outside its tmpfs and binds), in bytes; never above half its memory limit.
    #[serde(default = "default_store")]
    pub store_bytes: Limit,
    /// ptys of the container's devpts instance (`max=`).
    pub ptys: Limit,
    /// Capabilities a container may keep; anything else is dropped from all five sets.
    pub capabilities: Vec<Capability>,
    /// What the network namespace may contain.
    pub network: NetworkMode,
    /// Where an `inbound-only` container may connect besides loopback (the most `update
    /// --egress-allow` may give it).
    #[serde(default)]
    pub egress_allow: Vec<crate::egress_rule::EgressRule>,
    /// Whether a caller's bind mounts may stay writable (they always get `nosuid,nodev`).
    pub writable_binds: bool,
    /// The paths a container may write when the caller mounts nothing at or above them (see
    /// [`WritablePath`]).
    #[serde(default = "default_writable")]
    pub writable: Vec<WritablePath>,
    /// Cgroup parent used when the caller gives no absolute `cgroupsPath`.
    pub cgroup_parent: String,
    /// Syscalls allowed on top of rloxsc's allowlist (never one of the forbidden ones).
    pub extra_syscalls: Vec<String>,
    /// Where `delete` writes a run record for every container (off when `None`).
    pub records_dir: Option<std::path::PathBuf>,
    /// CPU time of the whole container, milliseconds (every process, counted from its cgroup); off
    /// by default (see [`crate::limits`]).
    #[serde(default)]
    pub cpu_time_ms: OptionalLimit,
    /// RLIMIT_FSIZE of every process of the container, bytes; off by default.
    #[serde(default)]
    pub file_size_bytes: OptionalLimit,
    /// What a container may write into the client's writable layer, bytes: a project quota where
    /// the layer's filesystem enforces one (see [`crate::limits::disk`]).
    #[serde(default = "default_disk")]
    pub disk_bytes: Limit,
    /// Whether a container whose writes no project quota can bound is refused.
    #[serde(default)]
    pub disk_required: bool,
    /// Seconds a create may take (libcontainer's create, hooks included) before everything it
    /// started is killed and the create fails; a `run --timeout` shorter than this bounds it too.
    pub create_timeout_s: u64,
    /// The host ids containers' user-namespace blocks are taken from.
    pub userns_pool: Pool,
}

/// The default of [`Policy::store_bytes`]: 256 MiB, ceiling 4 GiB.
pub fn default_store() -> Limit {
    Limit {
        default: 256 * MIB,
        ceiling: 4 * GIB,
    }
}

/// The default of [`Policy::disk_bytes`]: 10 GiB (the size Docker's devicemapper and CRI-O give a
/// container's layer), ceiling 100 GiB.
pub fn default_disk() -> Limit {
    Limit {
        default: 10 * GIB,
        ceiling: 100 * GIB,
    }
}

/// Capabilities that no policy can ever grant: each one is an escape or host-control primitive.
pub const FORBIDDEN_CAPABILITIES: &[Capability] = &[
    Capability::SysAdmin,
    Capability::NetAdmin,
    Capability::NetRaw,
    Capability::SysPtrace,
    Capability::SysModule,
    Capability::SysRawio,
    Capability::SysChroot,
    Capability::DacReadSearch,
    Capability::Mknod,
    Capability::SysBoot,
    Capability::SysTime,
    Capability::SysResource,
    Capability::Bpf,
    Capability::Perfmon,
    Capability::Syslog,
    Capability::MacAdmin,
    Capability::MacOverride,
    Capability::LinuxImmutable,
    Capability::AuditControl,
    Capability::WakeAlarm,
    Capability::BlockSuspend,
    Capability::Lease,
    Capability::IpcLock,
    Capability::SysPacct,
    Capability::SysNice,
    Capability::SysTtyConfig,
    // file capabilities written through an idmapped bind are stored for host root's ids: a
    // container's CAP_SETFCAP would make host binaries that grant capabilities to whoever runs them
    Capability::Setfcap,
];

/// The default capability allowlist: Docker's default set minus MKNOD, NET_RAW, SYS_CHROOT and
/// SETFCAP (see [`FORBIDDEN_CAPABILITIES`]).
pub const DEFAULT_CAPABILITIES: &[Capability] = &[
    Capability::Chown,
    Capability::DacOverride,
    Capability::Fsetid,
    Capability::Fowner,
    Capability::Setgid,
    Capability::Setuid,
    Capability::Setpcap,
    Capability::NetBindService,
    Capability::Kill,
    Capability::AuditWrite,
];

/// Paths always masked inside a container (runc's and Docker's lists).
pub const MASKED_PATHS: &[&str] = &[
    "/proc/acpi",
    "/proc/asound",
    "/proc/interrupts",
    "/proc/kcore",
    "/proc/keys",
    "/proc/latency_stats",
    "/proc/timer_list",
    "/proc/timer_stats",
    "/proc/sched_debug",
    "/proc/scsi",
    "/sys/firmware",
    "/sys/devices/virtual/powercap",
];

/// Paths always read-only inside a container.
pub const READONLY_PATHS: &[&str] = &[
    "/proc/bus",
    "/proc/fs",
    "/proc/irq",
    "/proc/sys",
    "/proc/sysrq-trigger",
];

/// Host paths that may never be the source of a bind mount, nor lie inside one.
pub const SENSITIVE_HOST_PATHS: &[&str] = &[
    "/",
    "/proc",
    "/sys",
    "/dev",
    "/boot",
    "/run/rloxsc",
    "/run/runc",
    "/run/crun",
    "/run/containerd",
    "/var/run/containerd",
    "/var/lib/containerd",
    "/run/docker",
    "/var/run/docker",
    "/var/lib/docker",
    "/run/docker.sock",
    "/var/run/docker.sock",
    "/run/podman",
    "/var/run/podman",
    "/var/lib/containers",
    "/run/containers",
    "/run/crio",
    "/var/run/crio",
    "/etc/rloxsc",
];

/// Host directories whose whole subtree is refused as a bind source (not only the directory itself).
pub const SENSITIVE_HOST_TREES: &[&str] = &["/proc", "/sys", "/dev", "/boot"];

/// File names of container-runtime control sockets, refused as bind sources wherever they live.
pub const SENSITIVE_SOCKET_NAMES: &[&str] = &[
    "docker.sock",
    "containerd.sock",
    "containerd.sock.ttrpc",
    "podman.sock",
    "crio.sock",
    "dockershim.sock",
];

const MIB: u64 = 1024 * 1024;
const GIB: u64 = 1024 * MIB;

/// Stands for the container's working directory (`process.cwd`, the image's `WORKDIR`) in
/// [`Policy::writable`]; nothing when it is `/` or a system path.
pub const WORKDIR: &str = "$WORKDIR";

/// Stands for the process's home directory (its `HOME`) in [`Policy::writable`]; nothing when it is
/// `/` or a system path.
pub const HOME: &str = "$HOME";

/// Paths (and everything below them) that can never be writable: what the image ships as its system.
pub const SYSTEM_PATHS: &[&str] = &[
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/opt",
    "/proc",
    "/sbin",
    "/sys",
    "/usr",
    "/var/lib/dpkg",
    "/var/lib/apt",
];

/// A size in whole GiB or MiB, as docs and log lines write it.
pub fn human(bytes: u64) -> String {
    if bytes % GIB == 0 {
        format!("{} GiB", bytes / GIB)
    } else {
        format!("{} MiB", bytes / MIB)
    }
}

/// A size in GiB, MiB or KiB, whichever divides it (for log lines about computed sizes).
pub fn human_any(bytes: u64) -> String {
    if bytes % MIB == 0 {
        human(bytes)
    } else {
        format!("{} KiB", bytes / 1024)
    }
}

/// Whether `path` (absolute, normalized) is `/`, lies in one of the [`SYSTEM_PATHS`], or is a
/// directory holding one (`/var` holds `/var/lib/dpkg`): a writable path there would make the system
/// writable.
pub fn is_system_path(path: &std::path::Path) -> bool {
    path == std::path::Path::new("/")
        || SYSTEM_PATHS
            .iter()
            .any(|s| path.starts_with(s) || std::path::Path::new(s).starts_with(path))
}

/// A path the container may write (see [`keys::WRITABLE`]). [`WORKDIR`], [`HOME`] and `/tmp` are
/// made when the image lacks them; any other path only when the image has that directory.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct WritablePath {
    /// An absolute path, [`WORKDIR`] or [`HOME`].
    pub path: String,
}

impl WritablePath {
    /// Whether the path is made even when the image lacks the directory.
    pub fn always(&self) -> bool {
        self.path == WORKDIR || self.path == HOME || self.path == "/tmp"
    }
}

/// The default writable paths: the workdir, HOME and `/tmp`; `/var/tmp`, `/run`, `/var/log` and the
/// state directories nginx writes at start, when the image has them.
pub fn default_writable() -> Vec<WritablePath> {
    [
        WORKDIR,
        HOME,
        "/tmp",
        "/var/tmp",
        "/run",
        "/var/cache/nginx",
        "/var/lib/nginx",
        "/var/log",
    ]
    .iter()
    .map(|p| WritablePath {
        path: p.to_string(),
    })
    .collect()
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            pids: Limit {
                default: 512,
                ceiling: 4096,
            },
            memory_bytes: Limit {
                default: 512 * MIB,
                ceiling: 16 * GIB,
            },
            nofile: Limit {
                default: 1024,
                ceiling: 65536,
            },
            tmpfs_bytes: Limit {
                default: 64 * MIB,
                ceiling: GIB,
            },
            ptys: Limit {
                default: 64,
                ceiling: 1024,
            },
            capabilities: DEFAULT_CAPABILITIES.to_vec(),
            network: NetworkMode::InboundOnly,
            egress_allow: Vec::new(),
            writable_binds: true,
            writable: default_writable(),
            store_bytes: default_store(),
            cgroup_parent: "/rloxsc".to_string(),
            extra_syscalls: Vec::new(),
            records_dir: None,
            create_timeout_s: 60,
            cpu_time_ms: OptionalLimit::default(),
            file_size_bytes: OptionalLimit::default(),
            disk_bytes: default_disk(),
            disk_required: false,
            userns_pool: Pool::default(),
        }
    }
}

impl Policy {
    /// The capabilities a container may hold under this policy: the configured set minus the forbidden ones
    /// (a policy can never grant a forbidden capability).
    pub fn allowed_capabilities(&self) -> Vec<Capability> {
        self.capabilities
            .iter()
            .copied()
            .filter(|c| !FORBIDDEN_CAPABILITIES.contains(c))
            .collect()
    }
}

/// Hard bounds no policy file can exceed.
pub mod bounds {
    /// Highest pids ceiling a policy may set.
    pub const PIDS_MAX: u64 = 65536;
    /// Highest memory ceiling a policy may set (bytes).
    pub const MEMORY_MAX: u64 = 256 << 30;
    /// Lowest memory limit that still lets a process start (bytes).
    pub const MEMORY_MIN: u64 = 4 << 20;
    /// Highest RLIMIT_NOFILE a policy may set.
    pub const NOFILE_MAX: u64 = 1 << 20;
    /// Highest tmpfs size a policy may set (bytes).
    pub const TMPFS_MAX: u64 = 64 << 30;
    /// Highest `limits.disk` ceiling a policy may set (a client's layer bounded at 64 TiB).
    pub const DISK_MAX: u64 = 64 << 40;
    /// Most ptys a policy may give one container.
    pub const PTYS_MAX: u64 = 4096;
    /// Longest create a policy may allow (seconds).
    pub const CREATE_TIMEOUT_MAX: u64 = 3600;
}

/// The ids (container ids `0..BLOCK`) in one container's block.
pub const BLOCK: u32 = 65536;

/// The pool blocks are taken from: `blocks` blocks of [`BLOCK`] ids from host id `start`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Pool {
    /// First host id of the pool.
    pub start: u32,
    /// How many blocks.
    pub blocks: u32,
}

impl Default for Pool {
    /// Host ids 2^30 ..< 2^31: far above any login user, below the ids that signed 32-bit code
    /// mishandles; 16384 containers at once.
    fn default() -> Self {
        Pool {
            start: 1 << 30,
            blocks: 16384,
        }
    }
}

impl Pool {
    /// Whether host id range `[first, first+len)` lies in the pool.
    pub fn contains(&self, first: u64, len: u64) -> bool {
        let lo = self.start as u64;
        let hi = lo + self.blocks as u64 * BLOCK as u64;
        first >= lo && first + len <= hi
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clamp_keeps_lower_and_clamps_higher_or_absent() {
        let l = Limit {
            default: 512,
            ceiling: 4096,
        };
        assert_eq!(l.clamp(Some(100)), 100);
        assert_eq!(l.clamp(Some(4096)), 4096);
        assert_eq!(l.clamp(Some(10_000)), 4096);
        assert_eq!(l.clamp(None), 512);
    }

    #[test]
    fn default_capabilities_contain_nothing_forbidden() {
        for c in DEFAULT_CAPABILITIES {
            assert!(!FORBIDDEN_CAPABILITIES.contains(c), "{c:?} is forbidden");
        }
    }

    // docs/SPECIFICATION.md states each promise once: every key exactly once, the numbers of
    // Policy::default(), and only functions and tests that exist (Firecracker's SPECIFICATION.md,
    // enforced by CI, is the model).
    #[test]
    fn specification_lists_every_key_with_the_numbers_of_the_code() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let doc = std::fs::read_to_string(root.join("docs/SPECIFICATION.md")).unwrap();
        let rows: Vec<(String, String)> = doc
            .lines()
            .filter_map(|l| l.strip_prefix("| `"))
            .filter_map(|l| l.split_once('`'))
            .map(|(k, rest)| (k.to_string(), rest.to_string()))
            .collect();
        for k in keys::ALL {
            let n = rows.iter().filter(|(key, _)| key == k).count();
            assert_eq!(
                n, 1,
                "policy key {k} is listed {n} times in docs/SPECIFICATION.md"
            );
        }
        for (k, _) in &rows {
            assert!(
                keys::ALL.contains(&k.as_str()),
                "docs/SPECIFICATION.md lists unknown key {k}"
            );
        }
        let row = |k: &str| rows.iter().find(|(key, _)| key == k).unwrap().1.clone();
        let p = Policy::default();
        let want: Vec<(&str, String)> = vec![
            (
                keys::PIDS,
                format!("default {}, ceiling {}", p.pids.default, p.pids.ceiling),
            ),
            (
                keys::MEMORY,
                format!(
                    "default {}, ceiling {}",
                    human(p.memory_bytes.default),
                    human(p.memory_bytes.ceiling)
                ),
            ),
            (
                keys::NOFILE,
                format!("default {}, ceiling {}", p.nofile.default, p.nofile.ceiling),
            ),
            (
                keys::TMPFS,
                format!(
                    "default {}, ceiling {}",
                    human(p.tmpfs_bytes.default),
                    human(p.tmpfs_bytes.ceiling)
                ),
            ),
            (
                keys::CAPABILITIES,
                format!(
                    "clamped to {} capabilities ({})",
                    p.capabilities.len(),
                    p.capabilities
                        .iter()
                        .map(|c| format!("CAP_{c}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ),
            (
                keys::MASKED_PATHS,
                format!("{} paths always masked", MASKED_PATHS.len()),
            ),
            (
                keys::READONLY_PATHS,
                format!("{} paths read-only", READONLY_PATHS.len()),
            ),
            (
                keys::NETWORK_MODE,
                format!("default `{}`", p.network.as_str()),
            ),
            (
                keys::EGRESS_ALLOW,
                if p.egress_allow.is_empty() {
                    "default none".to_string()
                } else {
                    crate::egress_rule::format_list(&p.egress_allow)
                },
            ),
            (
                keys::WRITABLE_BINDS,
                format!("default {}", p.writable_binds),
            ),
            (keys::CGROUP_PARENT, format!("under {} ", p.cgroup_parent)),
            (
                keys::WRITABLE,
                format!(
                    "a store of {} (ceiling {}",
                    human(p.store_bytes.default),
                    human(p.store_bytes.ceiling)
                ),
            ),
            (
                keys::EXTRA_SYSCALLS,
                if p.extra_syscalls.is_empty() {
                    "default none".to_string()
                } else {
                    p.extra_syscalls.join(", ")
                },
            ),
        ];
        for (k, text) in want {
            assert!(
                row(k).contains(&text),
                "docs/SPECIFICATION.md row {k} does not say {text:?}"
            );
        }
        // every `path.rs::name` named exists
        let mut checked = 0;
        for cell in doc.split('`').skip(1).step_by(2) {
            let Some((file, name)) = cell.split_once("::") else {
                continue;
            };
            if !file.ends_with(".rs") {
                continue;
            }
            let text = std::fs::read_to_string(root.join(file))
                .unwrap_or_else(|e| panic!("docs/SPECIFICATION.md names {file}: {e}"));
            assert!(
                text.contains(&format!("fn {name}(")) || text.contains(&format!("fn {name}<")),
                "docs/SPECIFICATION.md names {cell}, which does not exist"
            );
            checked += 1;
        }
        assert!(checked > 50, "only {checked} references checked");
    }

    #[test]
    fn forbidden_capabilities_are_filtered_even_if_configured() {
        let mut p = Policy::default();
        p.capabilities.push(Capability::SysAdmin);
        assert!(!p.allowed_capabilities().contains(&Capability::SysAdmin));
        assert!(p.allowed_capabilities().contains(&Capability::Chown));
    }
}
