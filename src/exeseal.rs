//! CVE-2019-5736 defence: the container must never get a writable handle to the rloxsc binary.
//!
//! A container process can reach the runtime's binary through `/proc/<pid>/exe` of the container's init
//! (a clone of rloxsc until the payload's execve) or by making the payload `#!/proc/self/exe`. A binary
//! sealed at rest is run as is: one on a read-only mount, or an immutable file (`chattr +i`, which
//! `make install` sets; nobody, root included, can open it for writing until root clears the flag).
//! Otherwise, before any verb that creates container processes, rloxsc re-executes itself from a
//! read-only bind mount of its own binary under [`SEALED_DIR`] (one execve per invocation), else from a
//! private, detached, read-only overlayfs mount of its own directory (the approach runc 1.2 took), else
//! from a sealed memfd copy (~20 ms here); `/proc/self/exe` then names a file a write cannot reach
//! (EROFS, EPERM). If all of these fail, it refuses to run.

use std::ffi::{CStr, CString};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

const OVERLAYFS_SUPER_MAGIC: i64 = 0x794c_7630;

/// How the running binary is protected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sealing {
    /// `/proc/self/exe` is on a read-only overlayfs.
    ReadOnlyOverlay,
    /// `/proc/self/exe` is on some other read-only mount (e.g. the binary was installed on a read-only
    /// bind mount): a write through it fails with EROFS, and a container can never remount it.
    ReadOnlyMount,
    /// `/proc/self/exe` is an immutable file (`chattr +i`, as `make install` leaves it): opening it for
    /// writing fails with EPERM for every process, and clearing the flag needs CAP_LINUX_IMMUTABLE in
    /// the host's user namespace, which no container has.
    Immutable,
    /// `/proc/self/exe` is a sealed memfd.
    SealedMemfd,
    /// Neither.
    Unsealed,
}

/// How `path` (normally `/proc/self/exe` or `/proc/<pid>/exe`) is protected.
pub fn sealing_of(path: &Path) -> Sealing {
    let c = CString::new(path.as_os_str().as_bytes()).expect("no NUL in a path");
    // one statfs: the mount's flags are in its f_flags (statvfs asked statfs again for them)
    let st = nix::sys::statfs::statfs(path).ok();
    let read_only = st
        .as_ref()
        .is_some_and(|s| s.flags().contains(nix::sys::statvfs::FsFlags::ST_RDONLY));
    if read_only && st.is_some_and(|s| s.filesystem_type().0 == OVERLAYFS_SUPER_MAGIC) {
        return Sealing::ReadOnlyOverlay;
    }
    if read_only {
        return Sealing::ReadOnlyMount;
    }
    if is_immutable(&c) {
        return Sealing::Immutable;
    }
    if let Ok(f) = std::fs::File::open(path) {
        // SAFETY: fcntl on an fd we own.
        let seals = unsafe { libc::fcntl(f.as_raw_fd(), libc::F_GET_SEALS) };
        let need = libc::F_SEAL_SEAL | libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_WRITE;
        if seals >= 0 && seals & need == need {
            return Sealing::SealedMemfd;
        }
    }
    Sealing::Unsealed
}

/// Whether the file `path` names (symlinks followed) has the immutable attribute, by `statx(2)`.
fn is_immutable(path: &CStr) -> bool {
    let immutable = libc::STATX_ATTR_IMMUTABLE as u64;
    crate::fsutil::statx_attributes(path, 0)
        .is_some_and(|(attrs, mask)| mask & immutable != 0 && attrs & immutable != 0)
}

fn sys(ret: libc::c_long, what: &str) -> Result<OwnedFd> {
    if ret < 0 {
        bail!("{what}: {}", std::io::Error::last_os_error());
    }
    // SAFETY: the syscall returned a new fd that we now own.
    Ok(unsafe { OwnedFd::from_raw_fd(ret as i32) })
}

/// A detached read-only overlayfs whose top layer is `dir`; returns an fd to `name` in it.
fn overlay_copy(dir: &Path, name: &CStr, empty: &Path) -> Result<OwnedFd> {
    let lower = format!("{}:{}", dir.display(), empty.display());
    let mnt = crate::mountapi::new_fs(
        c"overlay",
        &[("lowerdir".to_string(), lower)],
        crate::mountapi::ATTR_RDONLY | crate::mountapi::ATTR_NOSUID | crate::mountapi::ATTR_NODEV,
    )?;
    // SAFETY: openat relative to the detached mount, with a NUL-terminated name; checked by `sys`.
    let fd = unsafe {
        libc::openat(
            mnt.as_raw_fd(),
            name.as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC,
        )
    };
    sys(fd as libc::c_long, "open the binary in the overlay")
}

/// A sealed memfd copy of the binary (the slow fallback).
fn memfd_copy(exe: &Path) -> Result<OwnedFd> {
    let fd = nix::sys::memfd::memfd_create(
        c"rloxsc",
        nix::sys::memfd::MemFdCreateFlag::MFD_CLOEXEC
            | nix::sys::memfd::MemFdCreateFlag::MFD_ALLOW_SEALING,
    )?;
    let mut src = std::fs::File::open(exe)?;
    let mut dst = std::fs::File::from(fd);
    std::io::copy(&mut src, &mut dst)?;
    let seals = libc::F_SEAL_SEAL | libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_WRITE;
    // SAFETY: fcntl on an fd we own.
    if unsafe { libc::fcntl(dst.as_raw_fd(), libc::F_ADD_SEALS, seals) } != 0 {
        bail!(
            "sealing the memfd copy: {}",
            std::io::Error::last_os_error()
        );
    }
    Ok(OwnedFd::from(dst))
}

/// Where rloxsc keeps its read-only bind mounts of its own binary, one per binary version.
pub const SEALED_DIR: &str = "/run/rloxsc-sealed";

/// A read-only bind mount of `exe` under [`SEALED_DIR`], created once per binary version and reused by
/// every later invocation (so they pay one execve, not a mount and an unmount). Returns its path.
fn persistent_readonly_copy(exe: &Path) -> Result<PathBuf> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    let md = std::fs::metadata(exe).context("cannot stat the rloxsc binary")?;
    let target = Path::new(SEALED_DIR).join(format!(
        "rloxsc-{:x}-{:x}-{}-{}",
        md.dev(),
        md.ino(),
        md.mtime(),
        md.size()
    ));
    let is_sealed_copy = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.dev() == md.dev() && m.ino() == md.ino())
            && sealing_of(p) == Sealing::ReadOnlyMount
    };
    if is_sealed_copy(&target) {
        return Ok(target);
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(SEALED_DIR)
        .with_context(|| format!("cannot create {SEALED_DIR}"))?;
    let lock = std::fs::File::open(SEALED_DIR)?;
    // SAFETY: flock on an fd we own; released when `lock` is dropped.
    if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) } != 0 {
        bail!(
            "cannot lock {SEALED_DIR}: {}",
            std::io::Error::last_os_error()
        );
    }
    if is_sealed_copy(&target) {
        return Ok(target);
    }
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(&target)
        .with_context(|| format!("cannot create {}", target.display()))?;
    use nix::mount::{mount, MsFlags};
    mount(
        Some(exe),
        &target,
        None::<&str>,
        MsFlags::MS_BIND,
        None::<&str>,
    )
    .with_context(|| format!("cannot bind-mount the binary onto {}", target.display()))?;
    let ro = MsFlags::MS_BIND
        | MsFlags::MS_REMOUNT
        | MsFlags::MS_RDONLY
        | MsFlags::MS_NOSUID
        | MsFlags::MS_NODEV;
    if let Err(e) = mount(None::<&str>, &target, None::<&str>, ro, None::<&str>) {
        let _ = nix::mount::umount2(&target, nix::mount::MntFlags::MNT_DETACH);
        return Err(e).context("cannot make the binary's bind mount read-only");
    }
    if !is_sealed_copy(&target) {
        bail!(
            "{} is not a read-only copy of the binary after mounting",
            target.display()
        );
    }
    remove_stale_copies(&target);
    Ok(target)
}

/// Detaches and removes the sealed copies of other binary versions (processes still running from one
/// keep it alive: the detach is lazy). Runs under the directory's lock.
fn remove_stale_copies(keep: &Path) {
    let Ok(rd) = std::fs::read_dir(SEALED_DIR) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        let is_copy = p
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("rloxsc-"));
        if p != keep && is_copy {
            let _ = nix::mount::umount2(&p, nix::mount::MntFlags::MNT_DETACH);
            let _ = std::fs::remove_file(&p);
        }
    }
}

/// The environment variable through which the sealed re-execution learns where the binary it was
/// started from lives (checked against its own file before it is believed).
const ORIGIN_VAR: &str = "RLOXSC_EXE_ORIGIN";

/// Where the running rloxsc binary is installed (not its sealed copy), canonical: the path the
/// unsealed invocation resolved, when it names the same file as `/proc/self/exe`, else
/// `/proc/self/exe`'s target (which the kernel gives canonical already).
pub fn origin() -> Option<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let me = std::fs::metadata("/proc/self/exe").ok()?;
    let same =
        |p: &Path| std::fs::metadata(p).is_ok_and(|m| m.dev() == me.dev() && m.ino() == me.ino());
    if let Some(p) = std::env::var_os(ORIGIN_VAR).map(PathBuf::from) {
        if same(&p) {
            return std::fs::canonicalize(p).ok();
        }
    }
    std::fs::read_link("/proc/self/exe")
        .ok()
        .filter(|p| same(p))
}

fn exec_args_env(origin: &Path) -> Result<(Vec<CString>, Vec<CString>)> {
    let args: Vec<CString> = std::env::args_os()
        .map(|a| CString::new(a.as_bytes()))
        .collect::<Result<_, _>>()?;
    let mut origin_var = format!("{ORIGIN_VAR}=").into_bytes();
    origin_var.extend_from_slice(origin.as_os_str().as_bytes());
    let env: Vec<CString> = std::env::vars_os()
        .filter(|(k, _)| k != ORIGIN_VAR)
        .map(|(k, v)| {
            let mut b = k.as_bytes().to_vec();
            b.push(b'=');
            b.extend_from_slice(v.as_bytes());
            b
        })
        .chain(std::iter::once(origin_var))
        .map(CString::new)
        .collect::<Result<_, _>>()?;
    Ok((args, env))
}

/// Makes sure the running binary is sealed; re-executes it from a sealed copy if not (never returns
/// then). In order: a persistent read-only bind mount of the binary under [`SEALED_DIR`] (one execve
/// per invocation), a detached read-only overlayfs (a mount per invocation), a sealed memfd copy (a copy
/// per invocation). `empty_dir` is an empty directory rloxsc owns (overlayfs needs two lower layers).
pub fn ensure_sealed(empty_dir: &Path) -> Result<()> {
    let self_exe = Path::new("/proc/self/exe");
    if sealing_of(self_exe) != Sealing::Unsealed {
        return Ok(());
    }
    let exe: PathBuf = std::fs::read_link(self_exe).context("cannot resolve /proc/self/exe")?;
    let (args, env) = exec_args_env(&exe)?;
    match persistent_readonly_copy(&exe) {
        Ok(path) => {
            let p = CString::new(path.as_os_str().as_bytes())?;
            let err = nix::unistd::execve(&p, &args, &env).unwrap_err();
            tracing::warn!(
                "re-executing from {} failed ({err}); trying an overlay",
                path.display()
            );
        }
        Err(e) => {
            tracing::warn!("read-only bind mount of the binary failed ({e:#}); trying an overlay")
        }
    }
    let dir = exe.parent().context("binary without a directory")?;
    let name = CString::new(exe.file_name().context("binary without a name")?.as_bytes())?;
    std::fs::create_dir_all(empty_dir)
        .with_context(|| format!("cannot create {}", empty_dir.display()))?;
    let fd = match overlay_copy(dir, &name, empty_dir) {
        Ok(fd) => fd,
        Err(e) => {
            tracing::warn!("read-only overlay of the binary failed ({e:#}); falling back to a sealed memfd copy");
            memfd_copy(&exe)
                .context("cannot seal a copy of the rloxsc binary (CVE-2019-5736 defence)")?
        }
    };
    let err = nix::unistd::execveat(
        Some(fd.as_raw_fd()),
        c"",
        &args,
        &env,
        nix::fcntl::AtFlags::AT_EMPTY_PATH,
    )
    .unwrap_err();
    bail!("cannot re-execute the sealed rloxsc binary: {err}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The seal at rest `make install` relies on: an immutable file counts as sealed, a writable one
    /// does not (so it still re-executes). Needs root and a filesystem with the attribute (the test's
    /// temporary directory); anything else fails the test rather than skipping it.
    #[test]
    fn an_immutable_file_is_sealed_and_a_writable_one_is_not() {
        let p = std::env::temp_dir().join(format!("rloxsc-imm-{}", std::process::id()));
        std::fs::write(&p, b"#!/bin/true\n").unwrap();
        assert_eq!(sealing_of(&p), Sealing::Unsealed, "{}", p.display());
        let chattr = |flag: &str| {
            std::process::Command::new("chattr")
                .arg(flag)
                .arg(&p)
                .status()
                .is_ok_and(|s| s.success())
        };
        assert!(
            chattr("+i"),
            "chattr +i {} failed (root and ext4/tmpfs needed)",
            p.display()
        );
        let sealed = sealing_of(&p);
        assert!(chattr("-i"), "chattr -i {}", p.display());
        std::fs::remove_file(&p).unwrap();
        assert_eq!(sealed, Sealing::Immutable);
    }
}
