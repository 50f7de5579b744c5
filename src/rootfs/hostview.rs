//! What a client sees of the container from the host. Docker's archive API (`docker cp`,
//! `put_archive`/`get_archive`) and Podman's copy of a stopped container work on the rootfs in the
//! host's mount namespace, not in the container's. Where the container's root is rloxsc's overlay
//! over the client's writable layer ([`super::Writes::Layer`]), rloxsc attaches that overlay itself
//! on top of the client's mount while the container lives: the very instance the container uses,
//! so what the container writes the client reads at once, and what the client writes lands in the
//! client's layer through it (two overlay instances over one upper layer would each keep stale
//! lookups of the other's changes). The client sees the container's files with the container's host
//! ids there; in its layer they are stored with the ids it expects.
//!
//! One rootfs holds one container's view: a second create on it is refused, decided under a lock on
//! the rootfs so that two concurrent creates cannot both pass. A view is detached only when the
//! topmost mount at the rootfs carries this container's tag: never whatever else is mounted there.

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;

use anyhow::{bail, Context, Result};

use super::Writable;
use crate::fsutil::{openat2, RESOLVE_IN_ROOT, RESOLVE_NO_MAGICLINKS, RESOLVE_NO_SYMLINKS};
use crate::mountapi;
use crate::policy::keys;

/// Holds an exclusive `flock` on a directory while alive.
struct DirLock(#[allow(dead_code)] OwnedFd);

impl DirLock {
    fn take(dir: &Path) -> Result<DirLock> {
        let fd = openat2(libc::AT_FDCWD, dir, libc::O_RDONLY | libc::O_DIRECTORY, 0)
            .with_context(|| format!("cannot open the rootfs {}", dir.display()))?;
        // SAFETY: flock on an fd we own; released when it is closed
        if unsafe { libc::flock(fd.as_raw_fd(), libc::LOCK_EX) } != 0 {
            bail!(
                "cannot lock the rootfs {}: {}",
                dir.display(),
                std::io::Error::last_os_error()
            );
        }
        Ok(DirLock(fd))
    }
}

/// The tag of the rloxsc view on top of `rootfs`, if one is there.
pub fn view_on(rootfs: &Path) -> Option<String> {
    let mounts = crate::mountinfo::own().ok()?;
    crate::mountinfo::top_at(&mounts, rootfs)
        .and_then(|m| m.source.clone())
        .filter(|s| s.starts_with("rloxsc-"))
}

/// Attaches the root overlay at `root` (tagged `tag`) on `rootfs`, and each direct writable path of
/// `writable` at its place in it.
pub fn attach(rootfs: &Path, root: &Path, tag: &str, writable: &[Writable]) -> Result<()> {
    let _lock = DirLock::take(rootfs)?;
    if let Some(other) = view_on(rootfs) {
        bail!(
            "the rootfs {} already shows another rloxsc container's filesystem ({other}): two containers cannot share one client's rootfs (policy key {})",
            rootfs.display(),
            keys::ROOTFS
        );
    }
    let view = mountapi::clone_path(root, false)?;
    mountapi::set_attrs(&view, mountapi::ATTR_NOSUID | mountapi::ATTR_NODEV, false)?;
    mountapi::attach(&view, rootfs)?;
    let res = (|| -> Result<()> {
        let top = openat2(libc::AT_FDCWD, rootfs, libc::O_PATH | libc::O_DIRECTORY, 0)?;
        for w in writable {
            let Some(host) = &w.host else { continue };
            let c = mountapi::clone_path(host, false)?;
            let rel: std::path::PathBuf = w.dest.strip_prefix("/").unwrap_or(&w.dest).into();
            let at = openat2(
                top.as_raw_fd(),
                &rel,
                libc::O_PATH | libc::O_DIRECTORY,
                RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
            )
            .with_context(|| format!("cannot open {} in the client's view", w.dest.display()))?;
            mountapi::attach_to_fd(&c, &at)?;
        }
        Ok(())
    })();
    if let Err(e) = res {
        detach(rootfs, tag);
        return Err(e);
    }
    Ok(())
}

/// Detaches the view tagged `tag` from `rootfs` (with what is mounted on it), if it is the topmost
/// mount there. Returns whether a view of this container is left (another mount on top of it).
pub fn detach(rootfs: &Path, tag: &str) -> bool {
    for _ in 0..8 {
        let Ok(mounts) = crate::mountinfo::own() else {
            return false;
        };
        let ours =
            |m: &&crate::mountinfo::Mount| m.point == rootfs && m.source.as_deref() == Some(tag);
        if !mounts.iter().any(|m| ours(&m)) {
            return false;
        }
        match crate::mountinfo::top_at(&mounts, rootfs) {
            Some(top) if top.source.as_deref() == Some(tag) => mountapi::detach(rootfs),
            _ => {
                tracing::warn!(
                    "the rootfs {} has another mount on top of this container's view; it is left there",
                    rootfs.display()
                );
                return true;
            }
        }
    }
    true
}
