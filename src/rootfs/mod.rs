//! The container's filesystem: one model for every path class (docs/SPECIFICATION.md,
//! `filesystem.*` rows; SECURITY.md "What the container may write").
//!
//! - **The root** is an overlay (`R`) that rloxsc mounts from outside: its lower layers are the
//!   image's (a client's overlay layers, its upper layer included as the topmost lower, or a bundle's
//!   rootfs directory), each idmapped onto the container's block of host ids where the kernel can
//!   (overlayfs layers on Linux 5.19+, a directory on 5.12+), so the container's root owns the image's
//!   files; its upper layer is the container's **store**: one tmpfs per container, sized by
//!   `[limits] store` (never above half the container's memory limit), whose pages are
//!   charged to the writing process's memory cgroup. Nothing of the image is copied at create; the
//!   kernel copies a file up when the container first writes it.
//! - The root is mounted **read-only** by libcontainer; what the container may write
//!   (`filesystem.writable`: its workdir, HOME, `/tmp`, ...) are **writable paths**, each a bind of
//!   `R`'s own subtree there (a *window*: its writes land in the store), or, on a client's rootfs on
//!   a kernel that can idmap tmpfs (6.3+) when the image holds little there, a directory of the store
//!   of its own seeded with the image's content (a *store path*), which the client's copy API sees
//!   with the container's ids translated to its own.
//! - **Mount targets** the image lacks (Docker's `/sbin/docker-init`, a bind to a new path under
//!   `/usr`) are made in `R` from outside, so they land in the store, and the path stays read-only.
//! - On a **client's rootfs** (a mount of its own) the client looks at the rootfs from the host:
//!   [`hostview`] attaches `R` there too (the same instance, so what either side writes the other
//!   sees at once), and at delete [`commit`] writes what the store holds into the client's own layer,
//!   as runc would have left it (linear, holes and hard links kept, bounded by the store, charged to
//!   the container, under the deadline). On a bundle directory the store is scratch, gone at delete.
//!
//! What rloxsc creates from outside belongs to the container's root. Every path the image controls
//! is resolved inside `R` (`openat2` `RESOLVE_IN_ROOT`), never on the host.

pub mod adopt;
pub mod commit;
pub mod hostview;
pub mod layers;
pub mod tree;

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Component, Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::fsutil::{openat2, RESOLVE_IN_ROOT, RESOLVE_NO_MAGICLINKS, RESOLVE_NO_SYMLINKS};
use crate::idmap::IdMap;
use crate::mountapi;
use crate::policy::keys;
use crate::views::ViewDir;
use layers::Source;

/// Most entries of the image's content a store path is seeded with; more makes it a window.
pub const SEED_ENTRIES: u64 = 4096;
/// Most data bytes a store path is seeded with; more makes it a window.
pub const SEED_BYTES: u64 = 16 << 20;

/// The container's store: its size in bytes and inodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoreSize {
    /// Bytes.
    pub bytes: u64,
    /// Inodes (files, directories, links).
    pub inodes: u64,
}

impl StoreSize {
    /// A store of `bytes`, with one inode per 4 KiB of it (at least 4096).
    pub fn of_bytes(bytes: u64) -> StoreSize {
        StoreSize {
            bytes,
            inodes: (bytes / 4096).max(4096),
        }
    }
}

/// A writable path to make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WritableRequest {
    /// Where (absolute, normal).
    pub dest: PathBuf,
    /// Mode and owner (container ids) of the directory when the image lacks it.
    pub create_mode: u32,
    /// Owner (container uid, gid) of the directory when the image lacks it.
    pub create_owner: (u32, u32),
}

/// A caller's tmpfs with `tmpcopyup` (runc's extension: the image's content there shows in it):
/// an overlay of the image's directory under that tmpfs, nothing copied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyupRequest {
    /// Where (absolute, normal).
    pub dest: PathBuf,
    /// The tmpfs's `key=value` options (size, mode, ...).
    pub data: Vec<(String, String)>,
}

/// What the rootfs phase is asked to do.
#[derive(Debug)]
pub struct Request<'a> {
    /// The caller's rootfs, canonical.
    pub rootfs: &'a Path,
    /// What it is made of.
    pub source: &'a Source,
    /// rloxsc's own mapping of the container (its layers are then idmapped); `None` when the caller
    /// brings its own user namespace, whose mapping its storage already follows.
    pub own_mapping: Option<&'a IdMap>,
    /// The container's mapping (rloxsc's or the caller's), for owners of what is created.
    pub mapping: &'a IdMap,
    /// The store's size.
    pub store: StoreSize,
    /// The writable paths.
    pub writable: Vec<WritableRequest>,
    /// Mount targets `(destination, is a file)` to make when the image lacks them.
    pub targets: Vec<(PathBuf, bool)>,
    /// The caller's `tmpcopyup` tmpfs mounts.
    pub copyups: Vec<CopyupRequest>,
}

/// How a writable path is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum WritableKind {
    /// A bind of the root overlay's own subtree: writes land in the store's upper layer.
    Window,
    /// A directory of the store of its own, seeded with the image's content after create.
    Store,
}

/// A writable path as made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Writable {
    /// Where it is inside the container.
    pub dest: PathBuf,
    /// How.
    pub kind: WritableKind,
    /// The bind source libcontainer mounts (in the view directory).
    pub source: PathBuf,
    /// For a store path: its directory in the store (on the host).
    pub store_dir: Option<PathBuf>,
}

/// What the rootfs phase made.
#[derive(Debug)]
pub struct Assembled {
    /// The root overlay, attached in the view directory: the spec's root for libcontainer.
    pub root: PathBuf,
    /// The store, attached in the view directory.
    pub store: PathBuf,
    /// The source name the root overlay and the store carry in mountinfo.
    pub tag: String,
    /// Whether the image's layers are idmapped (the container's root owns the image's files).
    pub idmapped: bool,
    /// The writable paths made.
    pub writable: Vec<Writable>,
    /// Writable paths left read-only, and why.
    pub skipped: Vec<(PathBuf, String)>,
    /// Caller tmpcopyup mounts made: destination and bind source.
    pub copyups: Vec<(PathBuf, PathBuf)>,
}

/// The source name of container view token `token`'s root overlay.
pub fn tag_of(token: &str) -> String {
    format!("rloxsc-{token}")
}

fn rel(p: &Path) -> PathBuf {
    p.components()
        .filter(|c| matches!(c, Component::Normal(_)))
        .collect()
}

fn open_root(path: &Path) -> Result<OwnedFd> {
    openat2(libc::AT_FDCWD, path, libc::O_PATH | libc::O_DIRECTORY, 0)
        .with_context(|| format!("cannot open {}", path.display()))
}

/// Resolves `dest` inside the tree open at `root` (as if it were `/`); `no_symlinks`: refuse any
/// symlink on the way (ELOOP).
fn resolve(root: &OwnedFd, dest: &Path, no_symlinks: bool, flags: i32) -> std::io::Result<OwnedFd> {
    let r = rel(dest);
    let r = if r.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        r
    };
    let mut resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
    if no_symlinks {
        resolve |= RESOLVE_NO_SYMLINKS;
    }
    openat2(root.as_raw_fd(), &r, flags, resolve)
}

/// Makes `dest` inside the tree open at `root` where it is missing: each missing directory with
/// `mode` and `owner` (host ids), and the last component as an empty file when `file`. Follows the
/// image's symlinks only inside `root` (unless `no_symlinks`). Returns an `O_PATH` fd of `dest`, or
/// `None` when something else is in the way (a dangling symlink: left to libcontainer, which
/// resolves it inside the root too).
pub fn ensure_in_root(
    root: &OwnedFd,
    dest: &Path,
    file: bool,
    mode: u32,
    owner: (u32, u32),
    no_symlinks: bool,
) -> Result<Option<OwnedFd>> {
    ensure_in_root_hops(root, dest, file, mode, owner, no_symlinks, 0)
}

fn ensure_in_root_hops(
    root: &OwnedFd,
    dest: &Path,
    file: bool,
    mode: u32,
    owner: (u32, u32),
    no_symlinks: bool,
    hops: u32,
) -> Result<Option<OwnedFd>> {
    let parts: Vec<_> = rel(dest)
        .components()
        .map(|c| c.as_os_str().to_owned())
        .collect();
    let mut prefix = PathBuf::new();
    for (i, part) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        let parent = prefix.clone();
        prefix.push(part);
        match resolve(root, &prefix, no_symlinks, libc::O_PATH) {
            Ok(fd) if last => return Ok(Some(fd)),
            Ok(_) => continue,
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {}
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) && no_symlinks => return Ok(None),
            Err(e) => {
                return Err(e)
                    .with_context(|| format!("cannot reach {} in the rootfs", dest.display()))
            }
        }
        let dir = resolve(root, &parent, no_symlinks, libc::O_PATH | libc::O_DIRECTORY)
            .with_context(|| format!("cannot reach {} in the rootfs", dest.display()))?;
        let name = std::ffi::CString::new(part.as_encoded_bytes())?;
        // SAFETY: mknodat/mkdirat on a valid dirfd with a NUL-terminated name
        let rc = unsafe {
            if last && file {
                libc::mknodat(dir.as_raw_fd(), name.as_ptr(), libc::S_IFREG | 0o644, 0)
            } else {
                libc::mkdirat(dir.as_raw_fd(), name.as_ptr(), mode & 0o1777)
            }
        };
        if rc < 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EEXIST) {
                // a dangling symlink of the image: made where it points, inside the root (as runc's
                // securejoin does), never replaced; never for a writable path
                if no_symlinks || hops >= 40 {
                    return Ok(None);
                }
                let Ok(target) = nix::fcntl::readlinkat(Some(dir.as_raw_fd()), part.as_os_str())
                else {
                    return Ok(None);
                };
                let target = PathBuf::from(target);
                let mut next = if target.is_absolute() {
                    target
                } else {
                    parent.join(target)
                };
                for rest in &parts[i + 1..] {
                    next.push(rest);
                }
                return ensure_in_root_hops(
                    root,
                    &crate::harden::filesystem::normal_abs(&next),
                    file,
                    mode,
                    owner,
                    no_symlinks,
                    hops + 1,
                );
            }
            return Err(e).with_context(|| {
                format!(
                    "cannot create {} in the container's root (policy key {})",
                    dest.display(),
                    keys::WRITABLE
                )
            });
        }
        // SAFETY: fchownat/fchmodat of the entry just made, not following a symlink
        unsafe {
            tree::check(libc::fchownat(
                dir.as_raw_fd(),
                name.as_ptr(),
                owner.0,
                owner.1,
                libc::AT_SYMLINK_NOFOLLOW,
            ))?;
            if !(last && file) {
                // mkdirat applied the umask
                tree::check(libc::fchmodat(
                    dir.as_raw_fd(),
                    name.as_ptr(),
                    mode & 0o1777,
                    0,
                ))?;
            }
        }
    }
    // `dest` is `/`
    Ok(Some(resolve(
        root,
        Path::new("/"),
        no_symlinks,
        libc::O_PATH,
    )?))
}

/// The layers of the root overlay, cloned (idmapped with `mapping` when given) and attached in the
/// view directory; returns their `O_PATH` fds and whether they are idmapped. One layer that cannot
/// be idmapped leaves them all as they are (the image's files then show as `nobody`), with a log
/// line naming the kernel feature.
fn stack_layers(
    layers: &[PathBuf],
    mapping: Option<&IdMap>,
    views: &mut ViewDir,
) -> Result<(Vec<OwnedFd>, bool)> {
    let ns = mapping.map(IdMap::namespace).transpose()?;
    let mut clones = Vec::with_capacity(layers.len());
    let mut idmapped = ns.is_some();
    for l in layers {
        let c = mountapi::clone_path(l, false)?;
        // a lower layer is never written through; its clone need not be writable either
        mountapi::set_attrs(&c, mountapi::ATTR_RDONLY, false)?;
        if let (Some(ns), true) = (&ns, idmapped) {
            if let Err(e) = mountapi::idmap(&c, ns, false) {
                tracing::warn!(
                    "the image's layer {} cannot be idmapped ({e}; overlayfs layers need Linux 5.19, a directory 5.12): the image's files show as nobody's inside (policy key {})",
                    l.display(),
                    keys::USERNS
                );
                idmapped = false;
            }
        }
        clones.push(c);
    }
    if ns.is_some() && !idmapped {
        // all or none: a stack mixing mapped and unmapped layers would show one file two ways
        clones = layers
            .iter()
            .map(|l| {
                let c = mountapi::clone_path(l, false)?;
                mountapi::set_attrs(&c, mountapi::ATTR_RDONLY, false)?;
                Ok(c)
            })
            .collect::<Result<_>>()?;
    }
    let mut fds = Vec::with_capacity(clones.len());
    for (i, c) in clones.iter().enumerate() {
        let at = views.add(c, &format!("l{i}"), false)?;
        fds.push(open_root(&at)?);
    }
    Ok((fds, idmapped))
}

/// Makes the store (a sized tmpfs, tagged `<tag>-store`) in the view directory, with `upper` and
/// `work` for the root overlay, `upper` shaped like the image's root directory (`top`).
fn make_store(views: &mut ViewDir, tag: &str, size: StoreSize, top: &OwnedFd) -> Result<PathBuf> {
    let fs = mountapi::tmpfs(
        &[
            ("source".into(), format!("{tag}-store")),
            ("size".into(), size.bytes.to_string()),
            ("nr_inodes".into(), size.inodes.to_string()),
            ("mode".into(), "0711".into()),
            ("huge".into(), "never".into()),
        ],
        0,
    )
    .with_context(|| {
        format!(
            "cannot make the container's store (policy key {})",
            keys::WRITABLE
        )
    })?;
    let store = views.add(&fs, "store", false)?;
    let st = tree::stat_fd(top.as_raw_fd())?;
    for (d, owner, mode) in [
        ("upper", (st.st_uid, st.st_gid), st.st_mode & 0o1777),
        ("work", (0, 0), 0o700),
        ("paths", (0, 0), 0o711),
    ] {
        let p = store.join(d);
        std::fs::create_dir(&p).with_context(|| format!("cannot create {}", p.display()))?;
        std::os::unix::fs::chown(&p, Some(owner.0), Some(owner.1))?;
        std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(mode))?;
    }
    Ok(store)
}

/// Mounts a `nosuid,nodev` overlay of the `lower` layers (overlayfs' `lowerdir=` list) at `target`,
/// its upper layer and work directory `upper/` and `work/` of `dir`: no index, no redirects, no
/// metacopy (features that would make the upper layer point into the lower ones).
fn mount_overlay(tag: &str, target: &Path, lower: &str, dir: &Path) -> nix::Result<()> {
    let data = format!(
        "lowerdir={lower},upperdir={},workdir={},index=off,redirect_dir=off,metacopy=off",
        dir.join("upper").display(),
        dir.join("work").display()
    );
    nix::mount::mount(
        Some(tag),
        target,
        Some("overlay"),
        nix::mount::MsFlags::MS_NOSUID | nix::mount::MsFlags::MS_NODEV,
        Some(data.as_str()),
    )
}

/// Mounts the root overlay of `layers` (open at `fds`) over the store at `target`.
fn mount_root(tag: &str, fds: &[OwnedFd], store: &Path, target: &Path) -> Result<()> {
    // the layers by fd (/proc/self/fd/N): short, whatever their paths, so that even an image of
    // many layers fits in the page mount(2) takes
    let lower: Vec<String> = fds
        .iter()
        .map(|f| format!("/proc/self/fd/{}", f.as_raw_fd()))
        .collect();
    mount_overlay(tag, target, &lower.join(":"), store).map_err(|e| {
        anyhow!(
            "cannot mount the container's root overlay: {e} (overlayfs over the image's layers; policy key {})",
            keys::ROOTFS
        )
    })
}

/// Whether this kernel can idmap a tmpfs (Linux 6.3): tried on a clone of the store.
fn tmpfs_idmaps(store: &Path, ns: &OwnedFd) -> bool {
    mountapi::clone_path(store, false)
        .map(|c| mountapi::idmap(&c, ns, false).is_ok())
        .unwrap_or(false)
}

/// Builds the container's root (see the module documentation) in `views`, with token `token`.
pub fn assemble(req: &Request, views: &mut ViewDir, token: &str) -> Result<Assembled> {
    let tag = tag_of(token);
    let layers = req.source.image_layers(req.rootfs);
    let (fds, idmapped) = stack_layers(&layers, req.own_mapping, views)?;
    let store = make_store(views, &tag, req.store, &fds[0])?;
    let root = views.entry("root", false)?;
    mount_root(&tag, &fds, &store, &root)?;
    drop(fds);
    let rootfd = open_root(&root)?;
    let owner_of = |(u, g): (u32, u32)| {
        (
            req.mapping.host_uid(u).unwrap_or(u),
            req.mapping.host_gid(g).unwrap_or(g),
        )
    };
    let root_owner = owner_of((0, 0));

    // mount targets the image lacks, made in the store (as runc makes them in the rootfs)
    for (dest, file) in &req.targets {
        ensure_in_root(&rootfd, dest, *file, 0o755, root_owner, false)?;
    }

    // the writable paths: a window onto the root's subtree, or (a client's rootfs whose copy API
    // then sees the container's ids as its own) a store path of their own
    let inverse_ok = req.source.is_clients()
        && match req.own_mapping {
            Some(m) => inverse_of(m)
                .namespace()
                .map(|ns| tmpfs_idmaps(&store, &ns))
                .unwrap_or(false),
            None => false,
        };
    let mut writable = Vec::new();
    let mut skipped = Vec::new();
    for (i, w) in req.writable.iter().enumerate() {
        let Some(fd) = ensure_in_root(
            &rootfd,
            &w.dest,
            false,
            w.create_mode,
            owner_of(w.create_owner),
            true,
        )?
        else {
            skipped.push((
                w.dest.clone(),
                "the image reaches it through a symlink".to_string(),
            ));
            continue;
        };
        let st = tree::stat_fd(fd.as_raw_fd())?;
        if tree::kind(&st) != tree::Kind::Dir {
            skipped.push((
                w.dest.clone(),
                "the image has no directory there".to_string(),
            ));
            continue;
        }
        let small = inverse_ok && {
            let d = resolve(&rootfd, &w.dest, true, libc::O_RDONLY | libc::O_DIRECTORY)?;
            tree::measure(
                &d,
                tree::Bounds {
                    entries: SEED_ENTRIES,
                    bytes: SEED_BYTES,
                    deadline: None,
                },
            )
            .is_ok()
        };
        let name = w
            .dest
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "root".into());
        if small {
            let dir = store.join("paths").join(i.to_string());
            std::fs::create_dir(&dir)?;
            std::os::unix::fs::chown(&dir, Some(st.st_uid), Some(st.st_gid))?;
            std::fs::set_permissions(
                &dir,
                std::os::unix::fs::PermissionsExt::from_mode(st.st_mode & 0o1777),
            )?;
            let c = mountapi::clone_path(&dir, false)?;
            let source = views.add(&c, &format!("s{i}-{name}"), false)?;
            writable.push(Writable {
                dest: w.dest.clone(),
                kind: WritableKind::Store,
                source,
                store_dir: Some(dir),
            });
        } else {
            let c = mountapi::clone_fd(&fd)?;
            let source = views.add(&c, &format!("w{i}-{name}"), false)?;
            writable.push(Writable {
                dest: w.dest.clone(),
                kind: WritableKind::Window,
                source,
                store_dir: None,
            });
        }
    }

    // the caller's tmpcopyup tmpfs: its own tmpfs as the upper layer of an overlay whose lower is
    // the root's directory there (the tmpfs alone where that directory is empty)
    let mut copyups = Vec::new();
    for (i, c) in req.copyups.iter().enumerate() {
        let Some(fd) = ensure_in_root(&rootfd, &c.dest, false, 0o755, root_owner, true)? else {
            bail!(
                "the image reaches the tmpcopyup mount {} through a symlink (policy key {})",
                c.dest.display(),
                keys::TMPFS
            );
        };
        let st = tree::stat_fd(fd.as_raw_fd())?;
        let fs = mountapi::tmpfs(&c.data, 0)?;
        let t = views.add(&fs, &format!("c{i}-tmpfs"), false)?;
        if tree::is_empty_dir(&tree::open_dir_at(fd.as_raw_fd(), c".")?)? {
            // nothing of the image to show: the caller's tmpfs itself, as runc's copy of nothing
            // leaves it, with the image directory's owner and mode unless the caller set them
            let set = |k: &str| c.data.iter().any(|(key, _)| key == k);
            if !set("uid") && !set("gid") {
                std::os::unix::fs::chown(&t, Some(st.st_uid), Some(st.st_gid))?;
            }
            if !set("mode") {
                std::fs::set_permissions(
                    &t,
                    std::os::unix::fs::PermissionsExt::from_mode(st.st_mode & 0o1777),
                )?;
            }
            copyups.push((c.dest.clone(), t));
            continue;
        }
        let lower = views.add(&mountapi::clone_fd(&fd)?, &format!("c{i}-lower"), false)?;
        for (d, mode) in [("upper", st.st_mode & 0o1777), ("work", 0o700)] {
            let p = t.join(d);
            std::fs::create_dir(&p)?;
            if d == "upper" {
                std::os::unix::fs::chown(&p, Some(st.st_uid), Some(st.st_gid))?;
            }
            std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(mode))?;
        }
        let target = views.entry(&format!("c{i}"), false)?;
        mount_overlay(&tag, &target, &lower.display().to_string(), &t).map_err(|e| {
            anyhow!(
                "cannot make the tmpcopyup mount {}: {e} (policy key {})",
                c.dest.display(),
                keys::TMPFS
            )
        })?;
        copyups.push((c.dest.clone(), target));
    }

    Ok(Assembled {
        root,
        store,
        tag,
        idmapped,
        writable,
        skipped,
        copyups,
    })
}

/// The inverse of a container's mapping (host ids as the ids inside, its ids as the ids outside):
/// an idmapped mount with it shows files the container's host ids own as the container's own ids,
/// and stores what a host-side writer makes as the container's host ids.
pub fn inverse_of(m: &IdMap) -> IdMap {
    let inv = |v: &[(u32, u32, u32)]| v.iter().map(|(c, h, n)| (*h, *c, *n)).collect();
    IdMap {
        uids: inv(&m.uids),
        gids: inv(&m.gids),
    }
}

/// Copies the image's content into each store path (after libcontainer created the container,
/// before it starts). Bounded by [`SEED_ENTRIES`] and [`SEED_BYTES`] per path.
pub fn seed(root: &Path, writable: &[Writable]) -> Result<()> {
    let rootfd = open_root(root)?;
    for w in writable.iter().filter(|w| w.kind == WritableKind::Store) {
        let Some(dir) = &w.store_dir else { continue };
        let from = resolve(&rootfd, &w.dest, true, libc::O_RDONLY | libc::O_DIRECTORY)
            .with_context(|| format!("cannot open the image's {}", w.dest.display()))?;
        let to = openat2(
            libc::AT_FDCWD,
            dir,
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW,
            0,
        )?;
        let mut budget = tree::Budget::new(tree::Bounds {
            entries: SEED_ENTRIES,
            bytes: SEED_BYTES,
            deadline: None,
        });
        tree::copy_tree(&from, &to, &mut budget).map_err(|e| {
            anyhow!(
                "cannot copy the image's {} into its writable path: {e} (policy key {})",
                w.dest.display(),
                keys::WRITABLE
            )
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn targets_are_made_inside_the_root_and_writable_paths_never_through_a_symlink() {
        // (not under /tmp: the image's /tmp below is a link to `outside`)
        let base = PathBuf::from("/var/tmp").join(format!("rloxsc-rootfs-{}", std::process::id()));
        let root = base.join("root");
        let outside = base.join("outside");
        std::fs::create_dir_all(root.join("usr/sbin")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::os::unix::fs::symlink("usr/sbin", root.join("sbin")).unwrap();
        // an absolute link to a directory that exists on the host (and not in the image)
        std::os::unix::fs::symlink(&outside, root.join("tmp")).unwrap();
        std::fs::create_dir_all(root.join(outside.strip_prefix("/").unwrap())).unwrap();
        let fd = open_root(&root).unwrap();
        let me = (
            nix::unistd::getuid().as_raw(),
            nix::unistd::getgid().as_raw(),
        );
        // a target through the image's own symlink lands where the image points, inside the root
        ensure_in_root(&fd, Path::new("/sbin/docker-init"), true, 0o755, me, false)
            .unwrap()
            .unwrap();
        assert!(root.join("usr/sbin/docker-init").is_file());
        // an absolute symlink resolves inside the root too: nothing is made outside
        ensure_in_root(&fd, Path::new("/tmp/x"), false, 0o755, me, false).unwrap();
        assert!(
            !outside.join("x").exists(),
            "made through a symlink out of the root"
        );
        assert!(root
            .join(outside.strip_prefix("/").unwrap())
            .join("x")
            .is_dir());
        // a writable path never follows a symlink at all
        assert!(
            ensure_in_root(&fd, Path::new("/tmp"), false, 0o1777, me, true)
                .unwrap()
                .is_none()
        );
        // a missing writable path is made with its mode
        ensure_in_root(&fd, Path::new("/work/dir"), false, 0o1777, me, true)
            .unwrap()
            .unwrap();
        assert_eq!(
            std::fs::metadata(root.join("work/dir")).unwrap().mode() & 0o7777,
            0o1777
        );
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn the_inverse_mapping_shows_host_ids_as_the_containers() {
        let m = IdMap::block(1 << 30, 65536);
        let inv = inverse_of(&m);
        assert_eq!(inv.uids, vec![(1 << 30, 0, 65536)]);
    }
}
