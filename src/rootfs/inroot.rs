//! Paths inside the container's root, as host root sees it from outside: every path the image
//! controls is resolved inside the root (`openat2` `RESOLVE_IN_ROOT`, never on the host), and what
//! the image lacks (mount targets, writable paths) is made there, never through a symlink out of it.

use std::ffi::{CStr, OsString};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Component, Path, PathBuf};

use anyhow::{Context, Result};

use crate::fstree;
use crate::fsutil::{openat2, RESOLVE_IN_ROOT, RESOLVE_NO_MAGICLINKS, RESOLVE_NO_SYMLINKS};
use crate::policy::keys;

/// `p` relative: its normal components only.
pub fn rel(p: &Path) -> PathBuf {
    p.components()
        .filter(|c| matches!(c, Component::Normal(_)))
        .collect()
}

/// Opens the root at `path` (`O_PATH`).
pub fn open_root(path: &Path) -> Result<OwnedFd> {
    openat2(libc::AT_FDCWD, path, libc::O_PATH | libc::O_DIRECTORY, 0)
        .with_context(|| format!("cannot open {}", path.display()))
}

/// Resolves `dest` inside the tree open at `root` (as if it were `/`); `no_symlinks`: refuse any
/// symlink on the way (ELOOP).
pub fn resolve(
    root: &OwnedFd,
    dest: &Path,
    no_symlinks: bool,
    flags: i32,
) -> std::io::Result<OwnedFd> {
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
    let make = Make {
        file,
        mode,
        owner,
        no_symlinks,
    };
    ensure_in_root_hops(root, dest, make, 0)
}

/// What [`ensure_in_root`] makes: the last component a file or not, mode, owner, no symlinks.
#[derive(Clone, Copy)]
struct Make {
    file: bool,
    mode: u32,
    owner: (u32, u32),
    no_symlinks: bool,
}

/// [`ensure_in_root`] after `hops` dangling symlinks of the image were followed towards `dest`.
fn ensure_in_root_hops(
    root: &OwnedFd,
    dest: &Path,
    make: Make,
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
        match resolve(root, &prefix, make.no_symlinks, libc::O_PATH) {
            Ok(fd) if last => return Ok(Some(fd)),
            Ok(_) => continue,
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {}
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) && make.no_symlinks => return Ok(None),
            Err(e) => {
                return Err(e)
                    .with_context(|| format!("cannot reach {} in the rootfs", dest.display()))
            }
        }
        let dir = resolve(
            root,
            &parent,
            make.no_symlinks,
            libc::O_PATH | libc::O_DIRECTORY,
        )
        .with_context(|| format!("cannot reach {} in the rootfs", dest.display()))?;
        let name = std::ffi::CString::new(part.as_encoded_bytes())?;
        let is_file = last && make.file;
        if let Err(e) = make_entry(&dir, &name, is_file, make.mode) {
            if e.raw_os_error() == Some(libc::EEXIST) {
                return follow_dangling(root, &dir, &parent, &parts[i..], make, hops);
            }
            return Err(e).with_context(|| {
                format!(
                    "cannot create {} in the container's root (policy key {})",
                    dest.display(),
                    keys::WRITABLE
                )
            });
        }
        // a directory's mode set again: mkdirat applied the umask
        set_owner_and_mode(&dir, &name, make.owner, (!is_file).then_some(make.mode))?;
    }
    // `dest` is `/`
    Ok(Some(resolve(
        root,
        Path::new("/"),
        make.no_symlinks,
        libc::O_PATH,
    )?))
}

/// Makes `name` in `dir`: an empty file when `file`, else a directory with `mode` (less the umask).
fn make_entry(dir: &OwnedFd, name: &CStr, file: bool, mode: u32) -> std::io::Result<()> {
    // SAFETY: mknodat/mkdirat on a valid dirfd with a NUL-terminated name
    let rc = unsafe {
        if file {
            libc::mknodat(dir.as_raw_fd(), name.as_ptr(), libc::S_IFREG | 0o644, 0)
        } else {
            libc::mkdirat(dir.as_raw_fd(), name.as_ptr(), mode & 0o1777)
        }
    };
    fstree::check(rc)
}

/// Gives `name`, just made in `dir`, its owner, and `mode` when given.
fn set_owner_and_mode(
    dir: &OwnedFd,
    name: &CStr,
    owner: (u32, u32),
    mode: Option<u32>,
) -> Result<()> {
    // SAFETY: fchownat/fchmodat of the entry just made, not following a symlink
    unsafe {
        fstree::check(libc::fchownat(
            dir.as_raw_fd(),
            name.as_ptr(),
            owner.0,
            owner.1,
            libc::AT_SYMLINK_NOFOLLOW,
        ))?;
        if let Some(mode) = mode {
            fstree::check(libc::fchmodat(
                dir.as_raw_fd(),
                name.as_ptr(),
                mode & 0o1777,
                0,
            ))?;
        }
    }
    Ok(())
}

/// `parts[0]` in `dir` (at `parent`) is in the way: if a symlink, the path is made where it points.
fn follow_dangling(
    root: &OwnedFd,
    dir: &OwnedFd,
    parent: &Path,
    parts: &[OsString],
    make: Make,
    hops: u32,
) -> Result<Option<OwnedFd>> {
    // a dangling symlink of the image: made where it points, inside the root (as runc's
    // securejoin does), never replaced; never for a writable path
    if make.no_symlinks || hops >= 40 {
        return Ok(None);
    }
    let Ok(target) = nix::fcntl::readlinkat(Some(dir.as_raw_fd()), parts[0].as_os_str()) else {
        return Ok(None);
    };
    let target = PathBuf::from(target);
    let mut next = if target.is_absolute() {
        target
    } else {
        parent.join(target)
    };
    for rest in &parts[1..] {
        next.push(rest);
    }
    ensure_in_root_hops(root, &crate::paths::normal_abs(&next), make, hops + 1)
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
}
