//! Gathers the [`HostFacts`] the pure hardening transformation needs: the runtime's own namespace
//! inodes, the inodes of namespace paths the caller wants to join, canonical bind sources, symlinks in
//! the image, the cgroup layout.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use anyhow::{bail, Context, Result};
use oci_spec::runtime::{LinuxNamespaceType, Spec};

use crate::harden::filesystem::SYMLINK_SENSITIVE_DESTINATIONS;
use crate::harden::HostFacts;
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

/// Names of the cgroup v1 hierarchies mounted under /sys/fs/cgroup (directory names), empty on v2.
pub fn cgroup_v1_hierarchies() -> Vec<String> {
    let Ok(mountinfo) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return vec![];
    };
    mountinfo
        .lines()
        .filter_map(|l| {
            let (pre, post) = l.split_once(" - ")?;
            if !post.starts_with("cgroup ") {
                return None;
            }
            let mp = pre.split_whitespace().nth(4)?;
            mp.strip_prefix("/sys/fs/cgroup/").map(str::to_string)
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

/// Gathers the facts for hardening `spec` from bundle directory `bundle` under runtime root `root`.
pub fn gather(spec: &Spec, bundle: &Path, runtime_root: &Path) -> Result<HostFacts> {
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
    let rootfs = std::fs::canonicalize(&rootfs_given)
        .with_context(|| format!("cannot resolve rootfs {}", rootfs_given.display()))?;

    let mut host_namespaces = HashMap::new();
    for t in ALL_NAMESPACES {
        if let Some(id) = ns_id(&Path::new("/proc/self/ns").join(ns_file(t))) {
            host_namespaces.insert(t, id);
        }
    }
    let mut namespace_paths = HashMap::new();
    if let Some(nss) = spec.linux().as_ref().and_then(|l| l.namespaces().as_ref()) {
        for ns in nss {
            if let Some(p) = ns.path() {
                if let Some(id) = ns_id(p) {
                    namespace_paths.insert(p.clone(), id);
                }
            }
        }
    }

    let mut canonical_sources = HashMap::new();
    let mut symlinked_destinations = Vec::new();
    for d in SYMLINK_SENSITIVE_DESTINATIONS {
        if let Some(s) = first_symlink_in(&rootfs, Path::new(d)) {
            if !symlinked_destinations.contains(&s) {
                symlinked_destinations.push(s);
            }
        }
    }
    for m in spec.mounts().iter().flatten() {
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

    // HOME, when the spec gives none: from the image's passwd file, read here from outside
    let image_home = spec
        .process()
        .as_ref()
        .filter(|p| {
            !p.env()
                .iter()
                .flatten()
                .any(|e| e.strip_prefix("HOME=").is_some_and(|v| !v.is_empty()))
        })
        .map(|p| image_home(&rootfs, p.user().uid()));
    let mut runtime_binaries: Vec<PathBuf> = crate::exeseal::origin()
        .and_then(|p| std::fs::canonicalize(p).ok())
        .into_iter()
        .collect();
    runtime_binaries.push(PathBuf::from(crate::exeseal::SEALED_DIR).join("rloxsc"));
    Ok(HostFacts {
        runtime_binaries,
        image_home,
        host_namespaces,
        namespace_paths,
        canonical_sources,
        symlinked_destinations,
        rootfs,
        has_cgroup_namespace: Path::new("/proc/self/ns/cgroup").exists(),
        cgroup_v1_hierarchies: cgroup_v1_hierarchies(),
        runtime_root: std::fs::canonicalize(runtime_root)
            .unwrap_or_else(|_| runtime_root.to_path_buf()),
    })
}

/// The largest `/etc/passwd` rloxsc reads in an image.
pub const MAX_PASSWD_BYTES: usize = 1 << 20;

/// Opens `rel` inside the directory tree at `root` as if `root` were `/` (`openat2` with
/// `RESOLVE_IN_ROOT`: symlinks, `..` and absolute links stay inside it; magic links are refused),
/// read-only and non-blocking (a FIFO opens without waiting for a writer).
pub fn open_in_root(root: &Path, rel: &str) -> std::io::Result<std::fs::File> {
    use std::os::fd::FromRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    let dir = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC)
        .open(root)?;
    let name = std::ffi::CString::new(rel).map_err(|_| std::io::ErrorKind::InvalidInput)?;
    #[repr(C)]
    struct OpenHow {
        flags: u64,
        mode: u64,
        resolve: u64,
    }
    const RESOLVE_NO_MAGICLINKS: u64 = 0x02;
    const RESOLVE_IN_ROOT: u64 = 0x10;
    let how = OpenHow {
        flags: (libc::O_RDONLY | libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY) as u64,
        mode: 0,
        resolve: RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
    };
    use std::os::fd::AsRawFd;
    // SAFETY: openat2 with a valid dirfd, a NUL-terminated path and an open_how of the size given.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir.as_raw_fd(),
            name.as_ptr(),
            &how as *const OpenHow,
            std::mem::size_of::<OpenHow>(),
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: openat2 returned a new fd that nothing else owns.
    Ok(unsafe { std::fs::File::from_raw_fd(fd as i32) })
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

/// Creates the process's working directory inside the rootfs when the image lacks it, as runc does
/// (before the root becomes read-only). Walks `cwd` one component at a time without following
/// symlinks: at the first symlink it stops and leaves the path to the container's own chdir (which
/// resolves inside the container's root), so a hostile image can never make rloxsc create a
/// directory outside the rootfs.
pub fn ensure_cwd(rootfs: &Path, cwd: &Path) -> Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    let mut cur = rootfs.to_path_buf();
    for c in cwd.components() {
        let Component::Normal(n) = c else { continue };
        cur.push(n);
        match std::fs::symlink_metadata(&cur) {
            Ok(m) if m.file_type().is_symlink() => return Ok(()),
            Ok(m) if m.is_dir() => {}
            Ok(_) => bail!(
                "the working directory {} is not a directory in the image",
                cwd.display()
            ),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::DirBuilder::new()
                    .mode(0o755)
                    .create(&cur)
                    .with_context(|| {
                        format!(
                            "cannot create the working directory {} in the image",
                            cwd.display()
                        )
                    })?;
            }
            Err(e) => return Err(e).with_context(|| format!("cannot check {}", cur.display())),
        }
    }
    Ok(())
}

#[cfg(test)]
mod cwd_tests {
    use super::*;

    #[test]
    fn creates_missing_cwd_but_never_through_a_symlink() {
        let d = std::env::temp_dir().join(format!("rloxsc-cwd-{}", std::process::id()));
        let outside =
            std::env::temp_dir().join(format!("rloxsc-cwd-outside-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        ensure_cwd(&d, Path::new("/a/b")).unwrap();
        assert!(d.join("a/b").is_dir());
        std::os::unix::fs::symlink(&outside, d.join("link")).unwrap();
        ensure_cwd(&d, Path::new("/link/x")).unwrap();
        assert!(!outside.join("x").exists(), "created through a symlink");
        std::fs::remove_dir_all(&d).unwrap();
        std::fs::remove_dir_all(&outside).unwrap();
    }
}
