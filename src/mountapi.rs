//! The one wrapper of the kernel's mount API that rloxsc uses from outside its containers: detached
//! clones of mount trees (`open_tree`), their attributes (`mount_setattr`: idmapping, propagation,
//! read-only, nosuid/nodev), new filesystems made detached (`fsopen`/`fsconfig`/`fsmount`), attaching
//! a detached mount (`move_mount`) and detaching one. Every function returns the kernel's error with
//! what was being done; callers add the path and the policy key.
//!
//! Kernel requirements: the whole API is Linux 5.2+ (`open_tree`, `move_mount`, `fsopen`), 5.12+ for
//! `mount_setattr` and idmapped mounts; where a filesystem cannot be idmapped, [`idmap`] fails with
//! EINVAL and the caller falls back or refuses.

use std::ffi::{CStr, CString};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;

use anyhow::{bail, Context, Result};

const MOUNT_ATTR_IDMAP: u64 = 0x0010_0000;
/// `MOUNT_ATTR_*` values for [`set_attrs`].
pub const ATTR_RDONLY: u64 = 0x1;
/// No set-id or file capabilities honoured.
pub const ATTR_NOSUID: u64 = 0x2;
/// No device nodes opened.
pub const ATTR_NODEV: u64 = 0x4;
/// No programs executed.
pub const ATTR_NOEXEC: u64 = 0x8;
const ATTR_ATIME_MASK: u64 = 0x70;
const ATTR_NOATIME: u64 = 0x10;
const ATTR_STRICTATIME: u64 = 0x20;
const ATTR_NODIRATIME: u64 = 0x80;
const AT_RECURSIVE: libc::c_uint = 0x8000;
const OPEN_TREE_CLONE: libc::c_uint = 1;
const OPEN_TREE_CLOEXEC: libc::c_uint = libc::O_CLOEXEC as libc::c_uint;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;
const MOVE_MOUNT_T_EMPTY_PATH: libc::c_uint = 0x40;
const FSOPEN_CLOEXEC: libc::c_uint = 1;
const FSCONFIG_SET_STRING: libc::c_uint = 1;
const FSCONFIG_CMD_CREATE: libc::c_uint = 6;
const FSCONFIG_CMD_RECONFIGURE: libc::c_uint = 7;
const FSPICK_CLOEXEC: libc::c_uint = 1;
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

/// `path` as a C string.
pub fn cstr(p: &Path) -> Result<CString> {
    CString::new(p.as_os_str().as_encoded_bytes()).context("a path with a NUL byte")
}

/// A detached clone of the mount tree at `path` (with the mounts below it when `recursive`).
pub fn clone_path(path: &Path, recursive: bool) -> Result<OwnedFd> {
    let c = cstr(path)?;
    let flags = OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | if recursive { AT_RECURSIVE } else { 0 };
    // SAFETY: open_tree with a NUL-terminated path; the result is checked
    let rc = unsafe { libc::syscall(libc::SYS_open_tree, libc::AT_FDCWD, c.as_ptr(), flags) };
    fd_or_err(rc, &format!("cannot clone the mount at {}", path.display()))
}

/// The mount attached at `path` itself (not a clone), to change its attributes.
pub fn open_attached(path: &Path) -> Result<OwnedFd> {
    let c = cstr(path)?;
    // SAFETY: open_tree without OPEN_TREE_CLONE on a NUL-terminated path; the result is checked
    let rc = unsafe {
        libc::syscall(
            libc::SYS_open_tree,
            libc::AT_FDCWD,
            c.as_ptr(),
            OPEN_TREE_CLOEXEC,
        )
    };
    fd_or_err(rc, &format!("cannot open the mount at {}", path.display()))
}

/// A detached bind mount of the directory (or file) open at `fd` (any fd, `O_PATH` included): the
/// subtree of its mount that starts there, without the mounts below it.
pub fn clone_fd(fd: &OwnedFd) -> Result<OwnedFd> {
    let flags = OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | libc::AT_EMPTY_PATH as libc::c_uint;
    // SAFETY: open_tree on a valid fd with an empty path; the result is checked
    let rc = unsafe { libc::syscall(libc::SYS_open_tree, fd.as_raw_fd(), c"".as_ptr(), flags) };
    fd_or_err(rc, "cannot clone a mount")
}

fn setattr(mnt: &OwnedFd, attr: &MountAttr, recursive: bool) -> std::io::Result<()> {
    let flags = libc::AT_EMPTY_PATH as libc::c_uint | if recursive { AT_RECURSIVE } else { 0 };
    // SAFETY: mount_setattr on our mount fd with an attr struct of the size given
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            mnt.as_raw_fd(),
            c"".as_ptr(),
            flags,
            attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if rc < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Idmaps the detached mount `mnt` (and the mounts below it when `recursive`) with the id mapping of
/// user namespace `userns`. Fails where the filesystem cannot be idmapped (EINVAL).
pub fn idmap(mnt: &OwnedFd, userns: &OwnedFd, recursive: bool) -> std::io::Result<()> {
    setattr(
        mnt,
        &MountAttr {
            attr_set: MOUNT_ATTR_IDMAP,
            attr_clr: 0,
            propagation: 0,
            userns_fd: userns.as_raw_fd() as u64,
        },
        recursive,
    )
}

/// Sets the `MOUNT_ATTR_*` flags `set` on `mnt` (recursively when asked).
pub fn set_attrs(mnt: &OwnedFd, set: u64, recursive: bool) -> Result<()> {
    setattr(
        mnt,
        &MountAttr {
            attr_set: set,
            attr_clr: 0,
            propagation: 0,
            userns_fd: 0,
        },
        recursive,
    )
    .map_err(|e| anyhow::anyhow!("cannot set the flags of a mount: {e}"))
}

/// Sets the propagation of `mnt` and every mount below it: `libc::MS_SLAVE` (receives, never sends),
/// `libc::MS_PRIVATE`. A tree that is not shared stays private under `MS_SLAVE`.
pub fn set_propagation(mnt: &OwnedFd, propagation: libc::c_ulong) -> Result<()> {
    setattr(
        mnt,
        &MountAttr {
            attr_set: 0,
            attr_clr: 0,
            propagation,
            userns_fd: 0,
        },
        true,
    )
    .map_err(|e| anyhow::anyhow!("cannot set the propagation of a mount: {e}"))
}

/// Sets `key=value` on the filesystem mounted at `path` (`fspick`, `fsconfig`, reconfigure): its
/// superblock only, never the mount's flags (a tmpfs's `size`).
pub fn reconfigure(path: &Path, key: &str, value: &str) -> Result<()> {
    let c = cstr(path)?;
    // SAFETY: fspick with a NUL-terminated path; the result is checked
    let fs = fd_or_err(
        unsafe { libc::syscall(libc::SYS_fspick, libc::AT_FDCWD, c.as_ptr(), FSPICK_CLOEXEC) },
        &format!("fspick({})", path.display()),
    )?;
    let (ck, cv) = (CString::new(key)?, CString::new(value)?);
    for (cmd, k, v) in [
        (FSCONFIG_SET_STRING, ck.as_ptr(), cv.as_ptr()),
        (FSCONFIG_CMD_RECONFIGURE, std::ptr::null(), std::ptr::null()),
    ] {
        // SAFETY: fsconfig on our context fd with NUL-terminated key and value (or none)
        let rc = unsafe { libc::syscall(libc::SYS_fsconfig, fs.as_raw_fd(), cmd, k, v, 0) };
        if rc < 0 {
            bail!(
                "fsconfig({} {key}={value}): {}",
                path.display(),
                std::io::Error::last_os_error()
            );
        }
    }
    Ok(())
}

/// A new detached mount of filesystem `fstype`: `fsopen`, one `fsconfig` string per `(key, value)`
/// of `options`, create, `fsmount` with the mount attributes `attrs`.
pub fn new_fs(fstype: &CStr, options: &[(String, String)], attrs: u64) -> Result<OwnedFd> {
    let name = fstype.to_string_lossy();
    // SAFETY: fsopen with a NUL-terminated name; the result is checked
    let fs = fd_or_err(
        unsafe { libc::syscall(libc::SYS_fsopen, fstype.as_ptr(), FSOPEN_CLOEXEC) },
        &format!("fsopen({name})"),
    )?;
    for (k, v) in options {
        let (ck, cv) = (CString::new(k.as_str())?, CString::new(v.as_str())?);
        // SAFETY: fsconfig with NUL-terminated key and value on our context fd
        let rc = unsafe {
            libc::syscall(
                libc::SYS_fsconfig,
                fs.as_raw_fd(),
                FSCONFIG_SET_STRING,
                ck.as_ptr(),
                cv.as_ptr(),
                0,
            )
        };
        if rc < 0 {
            bail!(
                "fsconfig({name} {k}={v}): {}",
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

/// A detached tmpfs with the given `key=value` options (`size`, `mode`, `uid`, ...) and mount
/// attributes `attrs`; always nosuid and nodev.
pub fn tmpfs(options: &[(String, String)], attrs: u64) -> Result<OwnedFd> {
    new_fs(c"tmpfs", options, attrs | ATTR_NOSUID | ATTR_NODEV)
}

/// The mount attributes and tmpfs options of OCI mount `options` (`noatime`, `strictatime`, ...):
/// the `key=value` options, the `MOUNT_ATTR_*` they set, and the plain flags left for the bind of
/// the mount (only ones that restrict: `ro`, `nosuid`, `nodev`, `noexec`, propagation).
pub fn split_mount_options(options: &[String]) -> (Vec<(String, String)>, u64, Vec<String>) {
    let mut data = Vec::new();
    let mut flags = Vec::new();
    let mut attrs = 0u64;
    for o in options {
        match o.split_once('=') {
            Some((k, v)) => data.push((k.to_string(), v.to_string())),
            None => match o.as_str() {
                "strictatime" => attrs = (attrs & !ATTR_ATIME_MASK) | ATTR_STRICTATIME,
                "noatime" => attrs = (attrs & !ATTR_ATIME_MASK) | ATTR_NOATIME,
                "relatime" => attrs &= !ATTR_ATIME_MASK,
                "nodiratime" => attrs |= ATTR_NODIRATIME,
                "ro" | "rw" | "nosuid" | "nodev" | "noexec" | "private" | "rprivate" | "slave"
                | "rslave" | "shared" | "rshared" | "unbindable" | "runbindable" => {
                    flags.push(o.clone())
                }
                _ => {}
            },
        }
    }
    (data, attrs, flags)
}

/// A detached, read-only (nosuid, nodev, noexec) sysfs of the current network namespace.
pub fn sysfs() -> Result<OwnedFd> {
    new_fs(
        c"sysfs",
        &[],
        ATTR_RDONLY | ATTR_NOSUID | ATTR_NODEV | ATTR_NOEXEC,
    )
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
            "cannot attach a mount at {}: {}",
            target.display(),
            std::io::Error::last_os_error()
        );
    }
    Ok(())
}

/// Attaches the detached mount `mnt` on the directory open at `target` (an `O_PATH` fd): no path is
/// resolved, so nothing on the way can redirect it.
pub fn attach_to_fd(mnt: &OwnedFd, target: &OwnedFd) -> Result<()> {
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
        bail!("cannot attach a mount: {}", std::io::Error::last_os_error());
    }
    Ok(())
}

/// Detaches (lazily) the mount at `path` and everything below it, never following a symlink at
/// `path` itself. Absent is fine.
pub fn detach(path: &Path) {
    let _ = nix::mount::umount2(
        path,
        nix::mount::MntFlags::MNT_DETACH | nix::mount::MntFlags::UMOUNT_NOFOLLOW,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mount_options_split_into_data_attributes_and_restricting_flags() {
        let o: Vec<String> = [
            "size=64k",
            "mode=1777",
            "noatime",
            "ro",
            "nosuid",
            "exec",
            "dev",
        ]
        .map(String::from)
        .to_vec();
        let (data, attrs, flags) = split_mount_options(&o);
        assert_eq!(
            data,
            vec![
                ("size".to_string(), "64k".to_string()),
                ("mode".to_string(), "1777".to_string())
            ]
        );
        assert_eq!(attrs, ATTR_NOATIME);
        assert_eq!(flags, vec!["ro".to_string(), "nosuid".to_string()]);
    }
}
