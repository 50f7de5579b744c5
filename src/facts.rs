//! Gathers the [`HostFacts`] the pure hardening transformation needs: the runtime's own namespace
//! inodes, the inodes of namespace paths the caller wants to join, canonical bind sources, symlinks in
//! the image, the cgroup layout.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use anyhow::{bail, Context, Result};
use oci_spec::runtime::{LinuxNamespaceType, Spec};

use crate::harden::filesystem::SYMLINK_SENSITIVE_DESTINATIONS;
use crate::harden::{HomeLookup, HostFacts};
use crate::policy::keys;

/// `/proc/self/ns` file name of a namespace type.
pub fn ns_file(t: LinuxNamespaceType) -> &'static str {
    match t {
        LinuxNamespaceType::Mount => "mnt",
        LinuxNamespaceType::Cgroup => "cgroup",
        LinuxNamespaceType::Uts => "uts",
        LinuxNamespaceType::Ipc => "ipc",
        LinuxNamespaceType::User => "user",
        LinuxNamespaceType::Pid => "pid",
        LinuxNamespaceType::Network => "net",
        LinuxNamespaceType::Time => "time",
    }
}

/// All namespace types rloxsc knows.
pub const ALL_NAMESPACES: [LinuxNamespaceType; 8] = [
    LinuxNamespaceType::Mount,
    LinuxNamespaceType::Cgroup,
    LinuxNamespaceType::Uts,
    LinuxNamespaceType::Ipc,
    LinuxNamespaceType::User,
    LinuxNamespaceType::Pid,
    LinuxNamespaceType::Network,
    LinuxNamespaceType::Time,
];

/// (device, inode) of a namespace file.
pub fn ns_id(path: &Path) -> Option<(u64, u64)> {
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// Opens a caller's namespace path for an `ioctl`: only a regular file (namespace files are; a FIFO
/// or a device would block or act on open), non-blocking, close-on-exec.
fn open_namespace_file(path: &Path) -> Option<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    if !std::fs::metadata(path).ok()?.is_file() {
        return None;
    }
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(path)
        .ok()
}

/// What kind of namespace the file at `path` is (`NS_GET_NSTYPE`): `Some(None)` when it exists but
/// is not a namespace file, `None` when it cannot be opened.
pub fn namespace_type(path: &Path) -> Option<Option<LinuxNamespaceType>> {
    use std::os::fd::AsRawFd;
    const NS_GET_NSTYPE: libc::c_ulong = 0xb703;
    std::fs::metadata(path).ok()?;
    let Some(f) = open_namespace_file(path) else {
        return Some(None);
    };
    // SAFETY: NS_GET_NSTYPE on an fd we own returns a CLONE_NEW* flag (or -1); no memory is passed
    let t = unsafe { libc::ioctl(f.as_raw_fd(), NS_GET_NSTYPE as _) };
    Some(ALL_NAMESPACES.into_iter().find(|n| clone_flag(*n) == t))
}

/// The `CLONE_NEW*` flag of a namespace type.
fn clone_flag(t: LinuxNamespaceType) -> libc::c_int {
    match t {
        LinuxNamespaceType::Mount => libc::CLONE_NEWNS,
        LinuxNamespaceType::Cgroup => libc::CLONE_NEWCGROUP,
        LinuxNamespaceType::Uts => libc::CLONE_NEWUTS,
        LinuxNamespaceType::Ipc => libc::CLONE_NEWIPC,
        LinuxNamespaceType::User => libc::CLONE_NEWUSER,
        LinuxNamespaceType::Pid => libc::CLONE_NEWPID,
        LinuxNamespaceType::Network => libc::CLONE_NEWNET,
        LinuxNamespaceType::Time => 0x80, // CLONE_NEWTIME
    }
}

/// The user namespace owning the namespace at `path` (`NS_GET_USERNS`), and a path to it when
/// `path` is `/proc/<pid>/ns/<type>` and process `<pid>` is in that user namespace.
pub fn namespace_owner(path: &Path) -> Option<crate::harden::NamespaceOwner> {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    const NS_GET_USERNS: libc::c_ulong = 0xb701;
    let f = open_namespace_file(path)?;
    // SAFETY: NS_GET_USERNS on an fd we own returns a new fd (or -1)
    let fd = unsafe { libc::ioctl(f.as_raw_fd(), NS_GET_USERNS as _) };
    if fd < 0 {
        return None;
    }
    // SAFETY: the ioctl returned a new fd nothing else owns
    let owner = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) });
    let md = owner.metadata().ok()?;
    let id = (md.dev(), md.ino());
    let proc_dir = path
        .parent()
        .filter(|d| d.ends_with("ns"))
        .and_then(|d| d.parent())
        .filter(|d| d.parent() == Some(Path::new("/proc")));
    let user_path = proc_dir
        .map(|d| d.join("ns/user"))
        .filter(|u| ns_id(u) == Some(id));
    let map = |file: &str| {
        user_path
            .as_ref()
            .and_then(|u| crate::fsutil::read_small_string(u.parent()?.parent()?.join(file)).ok())
            .map(|t| crate::idmap::parse_id_map(&t))
            .unwrap_or_default()
    };
    Some(crate::harden::NamespaceOwner {
        id,
        uid_map: map("uid_map"),
        gid_map: map("gid_map"),
        path: user_path,
    })
}

/// Names of the cgroup v1 hierarchies mounted under /sys/fs/cgroup (directory names), empty on v2.
pub fn cgroup_v1_hierarchies() -> Vec<String> {
    crate::mountinfo::own()
        .unwrap_or_default()
        .into_iter()
        .filter(|m| m.fstype == "cgroup")
        .filter_map(|m| {
            m.point
                .strip_prefix("/sys/fs/cgroup")
                .ok()
                .and_then(|rel| rel.to_str())
                .filter(|rel| !rel.is_empty())
                .map(str::to_string)
        })
        .collect()
}

/// Resolves `rel` inside `root` one component at a time without following symlinks; returns the first
/// component that is a symlink, if any.
pub fn first_symlink_in(root: &Path, rel: &Path) -> Option<PathBuf> {
    let mut cur = root.to_path_buf();
    let mut inside = PathBuf::from("/");
    for c in rel.components() {
        if let Component::Normal(n) = c {
            cur.push(n);
            inside.push(n);
            match std::fs::symlink_metadata(&cur) {
                Ok(m) if m.file_type().is_symlink() => return Some(inside),
                Ok(_) => {}
                Err(_) => return None,
            }
        }
    }
    None
}

/// Gathers the facts for hardening `spec` from bundle directory `bundle` under runtime root `root`
/// (`writable`: the policy's writable paths, looked for in the image).
pub fn gather(
    spec: &Spec,
    bundle: &Path,
    runtime_root: &Path,
    writable: &[crate::policy::WritablePath],
) -> Result<HostFacts> {
    let rootfs = checked_rootfs(spec, bundle)?;
    let host_namespaces = host_namespace_ids();
    let joined = joined_namespace_facts(spec);
    let symlinked_destinations = symlinked_destinations(&rootfs);
    let canonical_sources = canonical_bind_sources(spec, bundle);
    let image_home = image_home_when_unset(spec, &rootfs);
    let runtime_binaries = runtime_binaries();
    let candidates = writable_candidates(spec, writable, image_home.as_ref());
    let (image_dirs, symlinked_writable) = classify_writable_candidates(&rootfs, candidates);
    Ok(HostFacts {
        image_dirs,
        symlinked_writable,
        userns_base: None,
        userns_taken: vec![],
        runtime_binaries,
        image_home,
        host_namespaces,
        namespace_paths: joined.paths,
        namespace_owners: joined.owners,
        namespace_types: joined.types,
        canonical_sources,
        symlinked_destinations,
        rootfs,
        has_cgroup_namespace: Path::new("/proc/self/ns/cgroup").exists(),
        cgroup_v1_hierarchies: cgroup_v1_hierarchies(),
        // the caller's choice, set by create once it is known to be usable here
        cgroup_driver: Default::default(),
        runtime_root: crate::fsutil::canonical_state_root(runtime_root),
    })
}

/// The spec's rootfs (relative to `bundle` unless absolute), refused unless it is a real
/// directory, canonicalized.
fn checked_rootfs(spec: &Spec, bundle: &Path) -> Result<PathBuf> {
    let root = spec.root().as_ref().context("config.json has no root")?;
    let rootfs_given = if root.path().is_absolute() {
        root.path().clone()
    } else {
        bundle.join(root.path())
    };
    let md = std::fs::symlink_metadata(&rootfs_given).with_context(|| {
        format!(
            "rootfs {} does not exist (policy key {})",
            rootfs_given.display(),
            keys::ROOTFS
        )
    })?;
    if md.file_type().is_symlink() {
        bail!(
            "rootfs {} is a symlink; rloxsc refuses symlinked root filesystems (policy key {})",
            rootfs_given.display(),
            keys::ROOTFS
        );
    }
    if !md.is_dir() {
        bail!(
            "rootfs {} is not a directory (policy key {})",
            rootfs_given.display(),
            keys::ROOTFS
        );
    }
    std::fs::canonicalize(&rootfs_given)
        .with_context(|| format!("cannot resolve rootfs {}", rootfs_given.display()))
}

/// (device, inode) of each of the runtime's own namespaces that `/proc/self/ns` shows.
fn host_namespace_ids() -> HashMap<LinuxNamespaceType, (u64, u64)> {
    let mut host_namespaces = HashMap::new();
    for t in ALL_NAMESPACES {
        if let Some(id) = ns_id(&Path::new("/proc/self/ns").join(ns_file(t))) {
            host_namespaces.insert(t, id);
        }
    }
    host_namespaces
}

/// What [`joined_namespace_facts`] learns about the namespace paths a spec asks to join.
struct JoinedNamespaces {
    /// (device, inode) of each path, and of each owning user namespace's path.
    paths: HashMap<PathBuf, (u64, u64)>,
    /// The owning user namespace of each non-user namespace path.
    owners: HashMap<PathBuf, crate::harden::NamespaceOwner>,
    /// The namespace type each path really is.
    types: HashMap<PathBuf, Option<LinuxNamespaceType>>,
}

/// Inodes, types and owners of the namespace paths in the spec's `linux.namespaces`.
fn joined_namespace_facts(spec: &Spec) -> JoinedNamespaces {
    let mut namespace_paths = HashMap::new();
    let mut namespace_owners = HashMap::new();
    let mut namespace_types = HashMap::new();
    if let Some(nss) = spec.linux().as_ref().and_then(|l| l.namespaces().as_ref()) {
        for ns in nss {
            if let Some(p) = ns.path() {
                if let Some(id) = ns_id(p) {
                    namespace_paths.insert(p.clone(), id);
                }
                if let Some(t) = namespace_type(p) {
                    namespace_types.insert(p.clone(), t);
                }
                if ns.typ() != LinuxNamespaceType::User {
                    if let Some(o) = namespace_owner(p) {
                        if let Some(up) = &o.path {
                            namespace_paths.insert(up.clone(), o.id);
                        }
                        namespace_owners.insert(p.clone(), o);
                    }
                }
            }
        }
    }
    JoinedNamespaces {
        paths: namespace_paths,
        owners: namespace_owners,
        types: namespace_types,
    }
}

/// The first symlink (if any) on the way to each symlink-sensitive destination in the image,
/// without duplicates.
fn symlinked_destinations(rootfs: &Path) -> Vec<PathBuf> {
    let mut symlinked_destinations = Vec::new();
    for d in SYMLINK_SENSITIVE_DESTINATIONS {
        if let Some(s) = first_symlink_in(rootfs, Path::new(d)) {
            if !symlinked_destinations.contains(&s) {
                symlinked_destinations.push(s);
            }
        }
    }
    symlinked_destinations
}

/// The canonical host path of each bind mount's source that resolves, keyed by the source as given.
fn canonical_bind_sources(spec: &Spec, bundle: &Path) -> HashMap<PathBuf, PathBuf> {
    let mut canonical_sources = HashMap::new();
    // (only a bind's source is a path: "proc" or "tmpfs" names a filesystem, and looking it up in
    // the bundle would cost a path walk each)
    for m in spec
        .mounts()
        .iter()
        .flatten()
        .filter(|m| crate::specmount::is_bind(m))
    {
        if let Some(src) = m.source() {
            // OCI: a relative source is relative to the bundle (libcontainer would resolve it against
            // rloxsc's working directory, which may be `/`)
            let on_host = if src.is_absolute() {
                src.clone()
            } else {
                bundle.join(src)
            };
            if let Ok(c) = std::fs::canonicalize(&on_host) {
                canonical_sources.insert(src.clone(), c);
            }
        }
    }
    canonical_sources
}

/// HOME, when the spec gives none: from the image's passwd file, read here from outside.
fn image_home_when_unset(spec: &Spec, rootfs: &Path) -> Option<HomeLookup> {
    spec.process()
        .as_ref()
        .filter(|p| {
            !p.env()
                .iter()
                .flatten()
                .any(|e| e.strip_prefix("HOME=").is_some_and(|v| !v.is_empty()))
        })
        .map(|p| image_home(rootfs, p.user().uid()))
}

/// The runtime's own binaries: where it was started from (canonical) and its sealed copy.
fn runtime_binaries() -> Vec<PathBuf> {
    let mut runtime_binaries: Vec<PathBuf> = crate::exeseal::origin().into_iter().collect();
    runtime_binaries.push(PathBuf::from(crate::exeseal::SEALED_DIR).join("rloxsc"));
    runtime_binaries
}

/// The policy's absolute writable paths, then the workdir and HOME (the spec's, else the image's),
/// to be looked for in the image.
fn writable_candidates(
    spec: &Spec,
    writable: &[crate::policy::WritablePath],
    image_home: Option<&HomeLookup>,
) -> Vec<PathBuf> {
    let cwd = spec
        .process()
        .as_ref()
        .map(|p| crate::paths::normal_abs(p.cwd()));
    let env_home = spec.process().as_ref().and_then(|p| {
        p.env().iter().flatten().find_map(|e| {
            e.strip_prefix("HOME=")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        })
    });
    let home = env_home
        .or_else(|| image_home.map(|h| PathBuf::from(h.home())))
        .map(|h| crate::paths::normal_abs(&h));
    writable
        .iter()
        .filter(|w| w.path.starts_with('/'))
        .map(|w| PathBuf::from(&w.path))
        .chain(cwd)
        .chain(home)
        .collect()
}

/// Splits `candidates` into (those the image has as directories, those it reaches through a
/// symlink).
fn classify_writable_candidates(
    rootfs: &Path,
    candidates: Vec<PathBuf>,
) -> (Vec<PathBuf>, Vec<PathBuf>) {
    // which of the policy's writable paths (and the workdir) the image has as directories, and
    // which it reaches through a symlink (those never get a writable tmpfs: it would land wherever
    // the image's link points, /etc for one)
    let mut image_dirs = Vec::new();
    let mut symlinked_writable = Vec::new();
    for p in candidates {
        if first_symlink_in(rootfs, &p).is_some() {
            symlinked_writable.push(p);
        } else if std::fs::symlink_metadata(rootfs.join(p.strip_prefix("/").unwrap_or(&p)))
            .is_ok_and(|m| m.is_dir())
        {
            image_dirs.push(p);
        }
    }
    (image_dirs, symlinked_writable)
}

/// The largest `/etc/passwd` rloxsc reads in an image.
pub const MAX_PASSWD_BYTES: usize = 1 << 20;

/// Opens `rel` inside the directory tree at `root` as if `root` were `/` (`openat2` with
/// `RESOLVE_IN_ROOT`: symlinks, `..` and absolute links stay inside it; magic links are refused),
/// read-only and non-blocking (a FIFO opens without waiting for a writer).
pub fn open_in_root(root: &Path, rel: &str) -> std::io::Result<std::fs::File> {
    use crate::fsutil::{openat2, RESOLVE_IN_ROOT, RESOLVE_NO_MAGICLINKS};
    use std::os::fd::AsRawFd;
    let dir = openat2(libc::AT_FDCWD, root, libc::O_PATH | libc::O_DIRECTORY, 0)?;
    let fd = openat2(
        dir.as_raw_fd(),
        Path::new(rel),
        libc::O_RDONLY | libc::O_NONBLOCK,
        RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
    )?;
    Ok(std::fs::File::from(fd))
}

/// Finds uid's home in the image whose root directory is `root` (a bundle's rootfs, or
/// `/proc/<pid>/root` of a running container) by reading its `/etc/passwd` from outside: never
/// through NSS (which would load the image's modules into rloxsc), never blocking, at most
/// [`MAX_PASSWD_BYTES`], never leaving the image through a symlink.
pub fn image_home(root: &Path, uid: u32) -> HomeLookup {
    let data = open_in_root(root, "etc/passwd")
        .map_err(|e| e.to_string())
        .and_then(|f| {
            crate::fsutil::read_open_regular_bounded(f, Path::new("/etc/passwd"), MAX_PASSWD_BYTES)
                .map_err(|e| format!("{e:#}"))
        });
    match data {
        Ok(d) => match passwd_home(&String::from_utf8_lossy(&d), uid) {
            Some(h) => HomeLookup::Found(h),
            None => HomeLookup::NotListed,
        },
        Err(e) => HomeLookup::Unusable(e),
    }
}

/// The home directory of `uid` in passwd-format text: the first entry with that uid and an
/// absolute home.
pub fn passwd_home(text: &str, uid: u32) -> Option<String> {
    text.lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        (f.len() >= 7 && f[2].trim().parse::<u32>().ok() == Some(uid) && f[5].starts_with('/'))
            .then(|| f[5].to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwd_homes() {
        let t = "root:x:0:0:root:/root:/bin/sh\n# c\nbad\nnobody:x:65534:65534::/nonexistent:/bin/false\nu:x:1000:1000::relative:/bin/sh\n";
        assert_eq!(passwd_home(t, 0).as_deref(), Some("/root"));
        assert_eq!(passwd_home(t, 65534).as_deref(), Some("/nonexistent"));
        assert_eq!(passwd_home(t, 1000), None);
        assert_eq!(passwd_home(t, 5), None);
    }

    #[test]
    fn image_home_never_blocks_follows_out_or_reads_unbounded() {
        let d = std::env::temp_dir().join(format!("rloxsc-home-{}", std::process::id()));
        let outside = std::env::temp_dir().join(format!("rloxsc-home-out-{}", std::process::id()));
        std::fs::create_dir_all(d.join("etc")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("passwd"), "root:x:0:0::/escaped:/bin/sh\n").unwrap();
        // a FIFO: refused at once, no writer waited for
        nix::unistd::mkfifo(
            &d.join("etc/passwd"),
            nix::sys::stat::Mode::from_bits_truncate(0o644),
        )
        .unwrap();
        assert!(matches!(image_home(&d, 0), HomeLookup::Unusable(_)));
        std::fs::remove_file(d.join("etc/passwd")).unwrap();
        // an absolute symlink resolves inside the image, not on the host
        std::os::unix::fs::symlink(outside.join("passwd"), d.join("etc/passwd")).unwrap();
        assert!(matches!(image_home(&d, 0), HomeLookup::Unusable(_)));
        std::fs::remove_file(d.join("etc/passwd")).unwrap();
        // too large
        std::fs::write(d.join("etc/passwd"), vec![b'#'; MAX_PASSWD_BYTES + 1]).unwrap();
        assert!(matches!(image_home(&d, 0), HomeLookup::Unusable(_)));
        std::fs::write(d.join("etc/passwd"), "root:x:0:0::/root:/bin/sh\n").unwrap();
        assert_eq!(image_home(&d, 0), HomeLookup::Found("/root".into()));
        assert_eq!(image_home(&d, 7).home(), "/");
        std::fs::remove_dir_all(&d).unwrap();
        std::fs::remove_dir_all(&outside).unwrap();
    }

    #[test]
    fn finds_symlinked_component() {
        let d = std::env::temp_dir().join(format!("rloxsc-facts-{}", std::process::id()));
        std::fs::create_dir_all(d.join("dev")).unwrap();
        std::os::unix::fs::symlink("/", d.join("proc")).unwrap();
        assert_eq!(
            first_symlink_in(&d, Path::new("/proc")),
            Some(PathBuf::from("/proc"))
        );
        assert_eq!(first_symlink_in(&d, Path::new("/dev/pts")), None);
        assert_eq!(first_symlink_in(&d, Path::new("/sys")), None);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
