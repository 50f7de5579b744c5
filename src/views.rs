//! The container's views of host paths, made by rloxsc from outside before libcontainer creates the
//! container. libcontainer's init opens the rootfs, every bind source and every namespace path *after*
//! it entered the container's user namespace, as the container's unprivileged host uid, which cannot
//! get through the state directories clients keep them in (containerd's and Docker's are 0700/0710).
//! So rloxsc clones each of them (`open_tree(OPEN_TREE_CLONE)`: a detached mount of exactly that
//! tree, no path), idmaps the clone where the container should see host-owned files as its own and
//! the filesystem can be idmapped, and attaches it in a directory only the container's root and host
//! root can enter: a small tmpfs at `/run/rloxsc-views/<128 random bits>`, mode 0700, owned by the
//! container's host root uid. The spec then names those paths. Once the container exists (its mount
//! namespace holds its own copies), the whole directory is detached from the host in one unmount.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use oci_spec::runtime::{LinuxNamespaceType, Spec};

/// Where the per-container view directories live (mode 0711: entered, never listed).
pub const VIEWS_DIR: &str = "/run/rloxsc-views";

const MOUNT_ATTR_IDMAP: u64 = 0x0010_0000;
const MOUNT_ATTR_ATIME_MASK: u64 = 0x70;
const MOUNT_ATTR_NOATIME: u64 = 0x10;
const MOUNT_ATTR_STRICTATIME: u64 = 0x20;
const MOUNT_ATTR_NODIRATIME: u64 = 0x80;
const AT_RECURSIVE: libc::c_uint = 0x8000;
const OPEN_TREE_CLONE: libc::c_uint = 1;
const OPEN_TREE_CLOEXEC: libc::c_uint = libc::O_CLOEXEC as libc::c_uint;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;
const FSOPEN_CLOEXEC: libc::c_uint = 1;
const FSCONFIG_SET_STRING: libc::c_uint = 1;
const FSCONFIG_CMD_CREATE: libc::c_uint = 6;
const FSMOUNT_CLOEXEC: libc::c_uint = 1;

#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

fn fd_or_err(rc: libc::c_long, what: &str) -> Result<OwnedFd> {
    if rc < 0 {
        bail!("{what}: {}", std::io::Error::last_os_error());
    }
    // SAFETY: the syscall returned a new fd nothing else owns
    Ok(unsafe { OwnedFd::from_raw_fd(rc as i32) })
}

fn cstr(p: &Path) -> Result<std::ffi::CString> {
    std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).context("a path with a NUL byte")
}

/// A detached clone of the mount tree at `path` (with the mounts below it when `recursive`).
pub fn clone_tree(path: &Path, recursive: bool) -> Result<OwnedFd> {
    let c = cstr(path)?;
    let flags = OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | if recursive { AT_RECURSIVE } else { 0 };
    // SAFETY: open_tree with a NUL-terminated path; the result is checked
    let rc = unsafe { libc::syscall(libc::SYS_open_tree, libc::AT_FDCWD, c.as_ptr(), flags) };
    fd_or_err(rc, &format!("cannot clone the mount at {}", path.display()))
}

/// A detached tmpfs of `size` bytes whose root directory has `mode`, `uid` and `gid`.
pub fn detached_tmpfs(size: u64, mode: u32, uid: u32, gid: u32) -> Result<OwnedFd> {
    detached_tmpfs_with(&[
        ("size".into(), size.to_string()),
        ("mode".into(), format!("{mode:o}")),
        ("uid".into(), uid.to_string()),
        ("gid".into(), gid.to_string()),
    ])
}

/// A detached tmpfs with the given `key=value` options (nosuid and nodev).
pub fn detached_tmpfs_with(options: &[(String, String)]) -> Result<OwnedFd> {
    detached_tmpfs_attrs(options, 0)
}

/// A detached tmpfs with the given `key=value` options and mount attributes `attrs`
/// (`MOUNT_ATTR_*`; nosuid and nodev always).
pub fn detached_tmpfs_attrs(options: &[(String, String)], attrs: u64) -> Result<OwnedFd> {
    new_mount(
        c"tmpfs",
        options,
        attrs | libc::MOUNT_ATTR_NOSUID | libc::MOUNT_ATTR_NODEV,
    )
}

/// A new detached mount of filesystem `fstype` (`fsopen`, `fsconfig` with `options`, `fsmount`
/// with the mount attributes `attrs`).
fn new_mount(fstype: &std::ffi::CStr, options: &[(String, String)], attrs: u64) -> Result<OwnedFd> {
    let name = fstype.to_string_lossy();
    // SAFETY: fsopen with a NUL-terminated name; the result is checked
    let fs = fd_or_err(
        unsafe { libc::syscall(libc::SYS_fsopen, fstype.as_ptr(), FSOPEN_CLOEXEC) },
        &format!("fsopen({name})"),
    )?;
    for (k, v) in options {
        let (k, v) = (
            std::ffi::CString::new(k.as_str())?,
            std::ffi::CString::new(v.as_str())?,
        );
        // SAFETY: fsconfig with NUL-terminated key and value on our context fd
        let rc = unsafe {
            libc::syscall(
                libc::SYS_fsconfig,
                fs.as_raw_fd(),
                FSCONFIG_SET_STRING,
                k.as_ptr(),
                v.as_ptr(),
                0,
            )
        };
        if rc < 0 {
            bail!(
                "fsconfig({name} {k:?}): {}",
                std::io::Error::last_os_error()
            );
        }
    }
    // SAFETY: the create command takes no key or value
    let rc = unsafe {
        libc::syscall(
            libc::SYS_fsconfig,
            fs.as_raw_fd(),
            FSCONFIG_CMD_CREATE,
            std::ptr::null::<u8>(),
            std::ptr::null::<u8>(),
            0,
        )
    };
    if rc < 0 {
        bail!(
            "fsconfig({name} create): {}",
            std::io::Error::last_os_error()
        );
    }
    // SAFETY: fsmount of our created context; checked
    fd_or_err(
        unsafe {
            libc::syscall(
                libc::SYS_fsmount,
                fs.as_raw_fd(),
                FSMOUNT_CLOEXEC,
                attrs as libc::c_uint,
            )
        },
        &format!("fsmount({name})"),
    )
}

/// A detached, read-only (nosuid, nodev, noexec) sysfs of the network namespace at `netns`: made
/// from outside, with the host's privileges, for a container that joins a network namespace its
/// own user namespace does not own (mounting sysfs needs CAP_SYS_ADMIN over the owner of the
/// network namespace, which the container's root does not have). It shows that namespace's network
/// devices, as the container's own sysfs mount would. The calling thread enters `netns` for the
/// creation and returns to its own network namespace.
pub fn detached_sysfs_of(netns: &Path) -> Result<OwnedFd> {
    crate::netns::in_network_namespace(netns, || {
        new_mount(
            c"sysfs",
            &[],
            libc::MOUNT_ATTR_RDONLY
                | libc::MOUNT_ATTR_NOSUID
                | libc::MOUNT_ATTR_NODEV
                | libc::MOUNT_ATTR_NOEXEC,
        )
    })
}

/// Idmaps the detached mount `mnt` (and the mounts below it when `recursive`) with the id mapping of
/// user namespace `userns`.
pub fn idmap(mnt: &OwnedFd, userns: &OwnedFd, recursive: bool) -> Result<()> {
    let attr = MountAttr {
        attr_set: MOUNT_ATTR_IDMAP,
        attr_clr: 0,
        propagation: 0,
        userns_fd: userns.as_raw_fd() as u64,
    };
    let flags = libc::AT_EMPTY_PATH as libc::c_uint | if recursive { AT_RECURSIVE } else { 0 };
    // SAFETY: mount_setattr on our detached mount with an attr struct of the size given
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            mnt.as_raw_fd(),
            c"".as_ptr(),
            flags,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if rc < 0 {
        bail!("{}", std::io::Error::last_os_error());
    }
    Ok(())
}

/// Makes the detached tree `mnt` a slave of its peers (recursively): mounts propagate into it,
/// never out of it. A tree that is not shared stays private.
pub fn make_slave(mnt: &OwnedFd) -> Result<()> {
    let attr = MountAttr {
        attr_set: 0,
        attr_clr: 0,
        propagation: libc::MS_SLAVE,
        userns_fd: 0,
    };
    // SAFETY: mount_setattr on our detached mount with an attr struct of the size given
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            mnt.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH as libc::c_uint | AT_RECURSIVE,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if rc < 0 {
        bail!(
            "cannot make the rootfs view a slave mount: {}",
            std::io::Error::last_os_error()
        );
    }
    Ok(())
}

/// Attaches the detached mount `mnt` at `target` (an existing directory or file).
pub fn attach(mnt: &OwnedFd, target: &Path) -> Result<()> {
    let t = cstr(target)?;
    // SAFETY: move_mount of our detached mount onto a NUL-terminated path
    let rc = unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            mnt.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_FDCWD,
            t.as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH,
        )
    };
    if rc < 0 {
        bail!(
            "cannot attach a view at {}: {}",
            target.display(),
            std::io::Error::last_os_error()
        );
    }
    Ok(())
}

/// Attaches the detached mount `mnt` on the directory open at `target` (an `O_PATH` fd).
pub fn attach_to_fd(mnt: &OwnedFd, target: &OwnedFd) -> Result<()> {
    const MOVE_MOUNT_T_EMPTY_PATH: libc::c_uint = 0x40;
    // SAFETY: move_mount of our detached mount onto the directory our fd holds
    let rc = unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            mnt.as_raw_fd(),
            c"".as_ptr(),
            target.as_raw_fd(),
            c"".as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH,
        )
    };
    if rc < 0 {
        bail!("cannot attach a view: {}", std::io::Error::last_os_error());
    }
    Ok(())
}

/// Detaches (lazily) the mount at `path` and everything below it.
pub fn detach(path: &Path) {
    let _ = nix::mount::umount2(path, nix::mount::MntFlags::MNT_DETACH);
}

/// The view directory of one container, until it is detached.
#[derive(Debug)]
pub struct ViewDir {
    /// `/run/rloxsc-views/<token>`.
    pub dir: PathBuf,
    next: usize,
}

impl ViewDir {
    /// Makes the directory `dir` (a [`dir_for`] path): a tmpfs only `owner` (the container's host
    /// root uid) and root can enter, holding a file `owner` that says `label` (the state root and
    /// the container id). A directory left there by a killed runtime is replaced.
    pub fn make(dir: &Path, owner: u32, label: &str) -> Result<ViewDir> {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o711)
            .create(VIEWS_DIR)
            .with_context(|| format!("cannot create {VIEWS_DIR}"))?;
        crate::trust::require_root_only(Path::new(VIEWS_DIR), "views directory")?;
        let dir = dir.to_path_buf();
        ViewDir::remove(&dir);
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        let fs = detached_tmpfs(1 << 20, 0o700, owner, owner)?;
        attach(&fs, &dir).inspect_err(|_| {
            let _ = std::fs::remove_dir(&dir);
        })?;
        // whose it is, for `doctor` and for tests that look for leftovers
        crate::fsutil::write_new(&dir.join("owner"), label.as_bytes(), 0o600)?;
        Ok(ViewDir { dir, next: 0 })
    }

    /// A new entry (directory, or empty file when `file`) to attach a view on.
    fn entry(&mut self, name: &str, file: bool) -> Result<PathBuf> {
        self.next += 1;
        let p = self.dir.join(format!("{}-{name}", self.next));
        if file {
            crate::fsutil::write_new(&p, b"", 0o644)?;
        } else {
            std::fs::DirBuilder::new().mode(0o755).create(&p)?;
        }
        Ok(p)
    }

    /// Attaches `mnt` as a new view; returns its path.
    pub fn add(&mut self, mnt: &OwnedFd, name: &str, file: bool) -> Result<PathBuf> {
        let p = self.entry(name, file)?;
        attach(mnt, &p)?;
        Ok(p)
    }

    /// Detaches the whole directory from the host (the container keeps its copies).
    pub fn remove(path: &Path) {
        detach(path);
        let _ = std::fs::remove_dir(path);
    }
}

/// The view directory of container `id` under state root `root`: named by a hash of both, so a
/// `delete --force` after a runtime killed before it recorded anything still finds (and detaches)
/// it. The name needs no secrecy: only host root and the container's own root uid can enter it.
pub fn dir_for(root: &Path, id: &str) -> PathBuf {
    let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let hash = |seed: u64| {
        let mut h = seed;
        for b in root
            .as_os_str()
            .as_encoded_bytes()
            .iter()
            .chain(&[0])
            .chain(id.as_bytes())
        {
            h = (h ^ *b as u64).wrapping_mul(0x100_0000_01b3);
        }
        h
    };
    Path::new(VIEWS_DIR).join(format!(
        "{:016x}{:016x}",
        hash(0xcbf2_9ce4_8422_2325),
        hash(0x6c62_272e_07bb_0142)
    ))
}

/// The host id of the container's root in a new user namespace of the spec (its uid mapping of
/// container id 0), when it has one.
fn base_of(spec: &Spec) -> Option<u32> {
    let l = spec.linux().as_ref()?;
    let has_new = l
        .namespaces()
        .iter()
        .flatten()
        .any(|n| n.typ() == LinuxNamespaceType::User);
    if !has_new {
        return None;
    }
    l.uid_mappings()
        .iter()
        .flatten()
        .find(|m| m.container_id() == 0)
        .map(|m| m.host_id())
}

/// Whether the image's directory `dest` exists and the container's root could not open it: its
/// owner is not one of the container's ids and its "other" bits lack read and search.
fn image_dir_closed_to(rootfs: &Path, dest: &Path, ids: &crate::writable::IdMap) -> bool {
    // (never through a symlink of the image: crate::writable::open_image_dir)
    let Ok(Some(fd)) = crate::writable::open_image_dir(rootfs, dest) else {
        return false;
    };
    match nix::sys::stat::fstat(fd.as_raw_fd()) {
        Ok(st) => !ids.maps_host_uid(st.st_uid) && st.st_mode & 0o005 != 0o005,
        Err(_) => false,
    }
}

/// The container's id mapping: the spec's, for a new user namespace; otherwise the block at `base`
/// (a user namespace the container joins).
fn id_map(spec: &Spec, base: Option<u32>) -> Option<crate::writable::IdMap> {
    let lines = |v: &Option<Vec<oci_spec::runtime::LinuxIdMapping>>| -> Vec<(u32, u32, u32)> {
        v.iter()
            .flatten()
            .map(|m| (m.container_id(), m.host_id(), m.size()))
            .collect()
    };
    if base_of(spec).is_some() {
        let l = spec.linux().as_ref()?;
        let map = crate::writable::IdMap {
            uids: lines(l.uid_mappings()),
            gids: lines(l.gid_mappings()),
        };
        if !map.uids.is_empty() && !map.gids.is_empty() {
            return Some(map);
        }
    }
    let b = base?;
    Some(crate::writable::IdMap {
        uids: vec![(0, b, crate::userns::BLOCK)],
        gids: vec![(0, b, crate::userns::BLOCK)],
    })
}

/// The source name a tmpfs is made with: rloxsc's writable paths are named after the container's
/// view token (their host-side views are found by it); a caller's own tmpfs keeps the caller's
/// source, as runc shows it in `/proc/mounts` (`tmpfs /mnt tmpfs ro,...`), unless it would pass for
/// one of rloxsc's names.
fn tmpfs_source(writable: bool, caller: Option<&Path>, views: &str) -> String {
    let caller = caller
        .map(|s| s.to_string_lossy().into_owned())
        .filter(|s| !s.is_empty() && !s.starts_with("rloxsc-"));
    match caller {
        Some(s) if !writable => s,
        _ if writable => views.to_string(),
        _ => "tmpfs".to_string(),
    }
}

/// Splits a tmpfs mount's options into the filesystem's `key=value` data (uid and gid translated
/// to host ids by `base`; the root owned by the container's root unless they say otherwise), the
/// atime attributes the mount is made with (a mount a user namespace receives has its atime locked:
/// the bind could not change it), and the flags that go on the bind of it (only ones that restrict;
/// a flag that lifts one, such as `dev` or `exec`, is dropped: the mount never had them).
fn tmpfs_options(options: &[String], base: u32) -> (Vec<(String, String)>, u64, Vec<String>) {
    let mut data = Vec::new();
    let mut flags = Vec::new();
    let mut attrs = 0u64;
    let (mut uid, mut gid) = (false, false);
    for o in options {
        match o.split_once('=') {
            Some((k @ ("uid" | "gid"), v)) => {
                let host = v
                    .parse::<u32>()
                    .map(|id| id.saturating_add(base))
                    .unwrap_or(base);
                if k == "uid" {
                    uid = true;
                } else {
                    gid = true;
                }
                data.push((k.to_string(), host.to_string()));
            }
            Some((k, v)) => data.push((k.to_string(), v.to_string())),
            None => match o.as_str() {
                "strictatime" => attrs = (attrs & !MOUNT_ATTR_ATIME_MASK) | MOUNT_ATTR_STRICTATIME,
                "noatime" => attrs = (attrs & !MOUNT_ATTR_ATIME_MASK) | MOUNT_ATTR_NOATIME,
                "relatime" => attrs &= !MOUNT_ATTR_ATIME_MASK,
                "nodiratime" => attrs |= MOUNT_ATTR_NODIRATIME,
                "ro" | "rw" | "nosuid" | "nodev" | "noexec" | "private" | "rprivate" | "slave"
                | "rslave" | "shared" | "rshared" | "unbindable" | "runbindable" => {
                    flags.push(o.clone())
                }
                _ => {}
            },
        }
    }
    if !uid {
        data.push(("uid".into(), base.to_string()));
    }
    if !gid {
        data.push(("gid".into(), base.to_string()));
    }
    (data, attrs, flags)
}

/// Drops the idmap options and per-mount mappings from `spec`'s mounts: once the container exists
/// its mounts are made (rloxsc idmapped them, [`prepare`]), and libcontainer refuses a spec that
/// names idmapped mounts when it later reads it again (`exec` loads the container's config: found
/// through containerd 2.x, whose user-namespace pods' binds carry `idmap`).
pub fn forget_mount_idmaps(spec: &mut Spec) {
    for m in spec.mounts_mut().iter_mut().flatten() {
        if let Some(o) = m.options().clone() {
            m.set_options(Some(
                o.into_iter()
                    .filter(|o| o != "idmap" && o != "ridmap")
                    .collect(),
            ));
        }
        m.set_uid_mappings(None);
        m.set_gid_mappings(None);
    }
}

/// What [`prepare`] did, to record and undo.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Prepared {
    /// The view directory (detached after create, or by `delete`).
    pub dir: Option<PathBuf>,
    /// Whether the rootfs view is idmapped (the image's files belong to the container's root).
    pub idmapped_root: bool,
}

/// Rewrites `spec` so libcontainer reaches the rootfs, every bind source and every namespace path
/// through views in `views` (see the module documentation). `userns` is the container's id
/// mapping, for the rootfs (idmapped when its filesystem allows) and for binds that ask for one;
/// `base` the host id of its root in a user namespace it joins; `callers_mapping`: the mapping is
/// the caller's own (not a block of rloxsc's).
pub fn prepare(
    spec: &mut Spec,
    views: &mut ViewDir,
    userns: Option<&OwnedFd>,
    base: Option<u32>,
    callers_mapping: bool,
    idmapped_volumes: &[PathBuf],
) -> Result<bool> {
    // the rootfs: recursive clone (it carries rloxsc's scratch views below it), idmapped if it can
    let root = spec
        .root()
        .as_ref()
        .map(|r| r.path().clone())
        .context("the spec has no root")?;
    let clone = clone_tree(&root, true)?;
    // a clone of a shared mount (Docker's and containerd's rootfs are) is its peer: the host-side
    // writable views attached below the rootfs later would propagate into it, and unmounting the
    // view directory would take them off the host again. As a slave it still receives the host's
    // mounts, and sends nothing back.
    make_slave(&clone)?;
    let idmapped = match userns {
        Some(ns) => idmap(&clone, ns, true).is_ok(),
        None => false,
    };
    // a failed idmap (overlayfs cannot be idmapped) leaves the tree as it was: the image's files
    // then show as nobody's inside, readable by their "other" permission bits
    let rootview = views.add(&clone, "root", false)?;
    if let Some(r) = spec.root_mut().as_mut() {
        r.set_path(rootview);
    }

    // bind sources
    if let Some(mounts) = spec.mounts_mut().as_mut() {
        for m in mounts.iter_mut() {
            let opts = m.options().clone().unwrap_or_default();
            let is_bind = m.typ().as_deref() == Some("bind")
                || opts.iter().any(|o| o == "bind" || o == "rbind");
            if !is_bind {
                continue;
            }
            let Some(src) = m.source().clone() else {
                continue;
            };
            let recursive = opts.iter().any(|o| o == "rbind");
            let md = std::fs::metadata(&src).with_context(|| {
                format!(
                    "bind source {} of {}",
                    src.display(),
                    m.destination().display()
                )
            })?;
            let clone = clone_tree(&src, recursive)?;
            let wants_idmap = opts.iter().any(|o| o == "idmap" || o == "ridmap")
                || m.uid_mappings().as_ref().is_some_and(|v| !v.is_empty());
            // a client's volume, written to: the container's root owns it as root would under runc
            let writable = !opts.iter().any(|o| o == "ro" || o == "rro");
            let canonical = std::fs::canonicalize(&src).unwrap_or_else(|_| src.clone());
            if !wants_idmap && writable && idmapped_volumes.iter().any(|v| canonical.starts_with(v))
            {
                if let Some(ns) = userns {
                    if let Err(e) = idmap(&clone, ns, recursive) {
                        tracing::warn!(
                            "volume {} cannot be idmapped ({e:#}): the container writes there as its own host uids",
                            src.display()
                        );
                    }
                }
            }
            if wants_idmap {
                let ns = match (m.uid_mappings(), m.gid_mappings()) {
                    (Some(u), Some(g)) if !u.is_empty() && !g.is_empty() => {
                        let line = |v: &Vec<oci_spec::runtime::LinuxIdMapping>| {
                            v.iter()
                                .map(|x| {
                                    format!("{} {} {}\n", x.container_id(), x.host_id(), x.size())
                                })
                                .collect::<String>()
                        };
                        Some(crate::userns::namespace_fd(&line(u), &line(g))?)
                    }
                    _ => None,
                };
                let ns = ns.as_ref().or(userns).context(
                    "a bind asks for an idmap but the container has no user namespace (policy key userns.mode)",
                )?;
                idmap(&clone, ns, opts.iter().any(|o| o == "ridmap") || recursive)
                    .with_context(|| format!("cannot idmap the bind of {} (its filesystem may not support idmapped mounts)", src.display()))?;
                let kept: Vec<String> = opts
                    .into_iter()
                    .filter(|o| o != "idmap" && o != "ridmap")
                    .collect();
                m.set_options(Some(kept));
                m.set_uid_mappings(None);
                m.set_gid_mappings(None);
            }
            let name = m
                .destination()
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "mount".into());
            let view = views.add(&clone, &name, !md.is_dir())?;
            m.set_source(Some(view));
        }
    }

    // tmpfs (not /dev, which libcontainer fills): made from outside, so that it belongs to the
    // host's user namespace and a client that writes into the container as host root (podman cp
    // joins the container's mount namespace) can; its root is the container root's. `tmpcopyup`
    // (runc's extension; rloxsc's writable paths ask for it) copies the image's content in; the
    // writable paths are also shown to the client's copy API (crate::writable)
    let token = views
        .dir
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    let source = crate::writable::source_name(&token);
    let ids = id_map(spec, base);
    let host_views = crate::writable::rootfs_is_own_mount(&root);
    if host_views {
        if let Some(other) = crate::writable::views_below(&root).first() {
            bail!(
                "the rootfs {} holds another rloxsc container's writable view ({}): containers given writable paths need a rootfs each (policy key {})",
                root.display(),
                other.display(),
                crate::policy::keys::WRITABLE
            );
        }
    }
    let mut inverse: Option<OwnedFd> = None;
    let mut unreachable: Vec<PathBuf> = Vec::new();
    for m in spec.mounts_mut().iter_mut().flatten() {
        if m.typ().as_deref() != Some("tmpfs") || m.destination() == Path::new("/dev") {
            continue;
        }
        let all = m.options().clone().unwrap_or_default();
        let copyup = all.iter().any(|o| o == "tmpcopyup");
        let writable = all
            .iter()
            .any(|o| o == crate::harden::filesystem::WRITABLE_MARK);
        if writable && !idmapped {
            if let Some(ids) = &ids {
                if image_dir_closed_to(&root, m.destination(), ids) {
                    // libcontainer mounts from inside the user namespace and cannot open a
                    // directory only host root may (a 0700 /root as the workdir, under overlayfs)
                    tracing::warn!(
                        "the image's {} is closed to the container's root (the rootfs cannot be idmapped): it gets no writable tmpfs (policy key {})",
                        m.destination().display(),
                        crate::policy::keys::WRITABLE
                    );
                    unreachable.push(m.destination().clone());
                    continue;
                }
            }
        }
        let options: Vec<String> = all
            .into_iter()
            .filter(|o| o != "tmpcopyup" && o != crate::harden::filesystem::WRITABLE_MARK)
            .collect();
        let Some(ids) = &ids else {
            // no user namespace: libcontainer makes it (nothing copied in)
            m.set_options(Some(options));
            continue;
        };
        let (mut data, attrs, flags) = tmpfs_options(&options, ids.uid(0));
        data.push((
            "source".into(),
            tmpfs_source(writable, m.source().as_deref(), &source),
        ));
        let fs = detached_tmpfs_attrs(&data, attrs)
            .with_context(|| format!("cannot make the tmpfs for {}", m.destination().display()))?;
        let name = m
            .destination()
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "tmpfs".into());
        let view = views.add(&fs, &name, false)?;
        let dest = crate::harden::filesystem::normal_abs(m.destination());
        // a caller that maps the ids itself (Podman's userns=auto, Kubernetes' hostUsers: false)
        // keeps its rootfs in host ids: copied as they are, shown as they are; rloxsc's own
        // mapping is one the caller does not know: its rootfs holds the container's ids
        let identity = crate::writable::IdMap::default();
        if copyup {
            let by = if callers_mapping { &identity } else { ids };
            crate::writable::copy_image_dir(&root, &dest, &view, by, ids)?;
        }
        if writable && host_views {
            if inverse.is_none() && !callers_mapping {
                inverse = Some(ids.inverse_namespace()?);
            }
            crate::writable::attach_host_view(&root, &dest, &view, inverse.as_ref())?;
        }
        m.set_typ(Some("bind".into()));
        m.set_source(Some(view));
        let mut opts = vec!["bind".to_string()];
        opts.extend(flags);
        m.set_options(Some(opts));
    }

    if !unreachable.is_empty() {
        if let Some(ms) = spec.mounts_mut().as_mut() {
            ms.retain(|m| !unreachable.contains(m.destination()));
        }
    }

    // a joined network namespace, in a user namespace: its sysfs is made from outside (see
    // detached_sysfs_of) and bound in, read-only, where the spec mounts sysfs
    let nss = spec
        .linux()
        .as_ref()
        .and_then(|l| l.namespaces().clone())
        .unwrap_or_default();
    let has_userns = nss.iter().any(|n| n.typ() == LinuxNamespaceType::User);
    let joined_net = nss
        .iter()
        .find(|n| n.typ() == LinuxNamespaceType::Network)
        .and_then(|n| n.path().clone());
    if let (true, Some(net)) = (has_userns, joined_net) {
        // its network sysctls, written from outside (the container's root could not)
        if let Some(sysctl) = spec
            .linux_mut()
            .as_mut()
            .and_then(|l| l.sysctl_mut().as_mut())
        {
            let net_keys: Vec<(String, String)> = sysctl
                .iter()
                .filter(|(k, _)| k.starts_with("net."))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            crate::netns::write_sysctls_in(&net, &net_keys)?;
            sysctl.retain(|k, _| !k.starts_with("net."));
        }
        for m in spec.mounts_mut().iter_mut().flatten() {
            if m.typ().as_deref() != Some("sysfs") {
                continue;
            }
            let fs = detached_sysfs_of(&net)?;
            let view = views.add(&fs, "sysfs", false)?;
            m.set_typ(Some("bind".into()));
            m.set_source(Some(view));
            m.set_options(Some(
                ["bind", "ro", "nosuid", "nodev", "noexec"]
                    .map(String::from)
                    .to_vec(),
            ));
        }
    }

    // namespace paths outside /proc (a CNI's netns file, containerd's pinned namespaces)
    if let Some(nss) = spec
        .linux_mut()
        .as_mut()
        .and_then(|l| l.namespaces_mut().as_mut())
    {
        for ns in nss.iter_mut() {
            let Some(p) = ns.path().clone() else { continue };
            if p.starts_with("/proc") {
                continue;
            }
            let clone = clone_tree(&p, false)?;
            let view = views.add(&clone, &format!("ns-{}", ns.typ()), true)?;
            ns.set_path(Some(view));
        }
    }
    Ok(idmapped)
}

#[cfg(test)]
mod tmpfs_source_tests {
    use super::*;

    #[test]
    fn a_callers_tmpfs_keeps_its_source_and_rloxscs_are_named_by_token() {
        let t = "rloxsc-abc";
        assert_eq!(tmpfs_source(false, Some(Path::new("tmpfs")), t), "tmpfs");
        assert_eq!(tmpfs_source(false, Some(Path::new("shm")), t), "shm");
        assert_eq!(tmpfs_source(false, None, t), "tmpfs");
        // a caller's source never passes for one of rloxsc's view names
        assert_eq!(
            tmpfs_source(false, Some(Path::new("rloxsc-other")), t),
            "tmpfs"
        );
        assert_eq!(tmpfs_source(true, Some(Path::new("tmpfs")), t), t);
    }
}
