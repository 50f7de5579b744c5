//! Files rloxsc writes on the host (pid files, records, the private bundle, logs), written so that a
//! local user who can write in the directory cannot redirect them: the final component is never
//! followed when it is a symlink, temporary files get an unpredictable name and are created
//! exclusively (`O_CREAT|O_EXCL|O_NOFOLLOW`), and a replacement is a rename over the target.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

/// Fails when `path` exists and is a symlink (a planted one would redirect root's write).
pub fn refuse_symlink(path: &Path, what: &str) -> Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => bail!(
            "refusing to write the {what} {}: it is a symlink",
            path.display()
        ),
        _ => Ok(()),
    }
}

/// Fails when resolving `path` would follow a symlink that a user other than root (and other than
/// this process's own user) owns, in any component: such a user can point it at a directory of
/// root's and have root's rloxsc write its file there (a pid file, a record, a log, a console
/// socket of the caller). A root-owned symlink (`/var/run` on Debian) is followed. The final
/// component is left to the caller's open (which refuses a symlink there).
pub fn refuse_foreign_symlinks(path: &Path, what: &str) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let me = nix::unistd::geteuid().as_raw();
    let abs = std::path::absolute(path)
        .with_context(|| format!("cannot resolve the {what} path {}", path.display()))?;
    let parent = abs.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut pending: Vec<std::ffi::OsString> = parent
        .components()
        .filter_map(|c| match c {
            std::path::Component::Normal(n) => Some(n.to_os_string()),
            _ => None,
        })
        .rev()
        .collect();
    let mut cur = PathBuf::from("/");
    let mut hops = 0;
    while let Some(name) = pending.pop() {
        if name == ".." {
            cur.pop();
            continue;
        }
        let next = cur.join(&name);
        let Ok(md) = std::fs::symlink_metadata(&next) else {
            return Ok(()); // missing: the open fails with its own error
        };
        if !md.file_type().is_symlink() {
            cur = next;
            continue;
        }
        if md.uid() != 0 && md.uid() != me {
            bail!(
                "refusing to write the {what} {}: {} is a symlink owned by uid {}, which rloxsc does not follow",
                path.display(),
                next.display(),
                md.uid()
            );
        }
        hops += 1;
        if hops > 40 {
            bail!("the {what} path {} has too many symlinks", path.display());
        }
        let target = std::fs::read_link(&next)?;
        if target.is_absolute() {
            cur = PathBuf::from("/");
        }
        for c in target.components().rev() {
            match c {
                std::path::Component::Normal(n) => pending.push(n.to_os_string()),
                std::path::Component::ParentDir => pending.push("..".into()),
                _ => {}
            }
        }
    }
    Ok(())
}

/// The `statx(2)` attributes of `path` and the mask of those its filesystem supports
/// (`stx_attributes`, `stx_attributes_mask`); `flags` as for statx (`0` follows a final symlink,
/// `AT_SYMLINK_NOFOLLOW` does not). `None` when statx fails.
pub fn statx_attributes(path: &std::ffi::CStr, flags: i32) -> Option<(u64, u64)> {
    // SAFETY: an all-zero statx is a valid buffer for the kernel to fill
    let mut stx: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: statx with a NUL-terminated path into our buffer
    let rc = unsafe {
        libc::statx(
            libc::AT_FDCWD,
            path.as_ptr(),
            flags,
            libc::STATX_BASIC_STATS,
            &mut stx,
        )
    };
    (rc == 0).then_some((stx.stx_attributes, stx.stx_attributes_mask))
}

/// Removes the directory `dir` and everything in it, never crossing into a mount: a directory that is
/// the root of a mount (`STATX_ATTR_MOUNT_ROOT`, Linux 5.8+), at `dir` or anywhere below it, stops
/// the removal with an error naming it, before anything in it is touched. Symlinks are removed, never
/// followed. Absent is fine. `None` when the kernel cannot say what is a mount root (the caller then
/// decides another way).
pub fn remove_tree_within_mount(dir: &Path) -> Option<Result<()>> {
    use std::os::unix::ffi::OsStrExt;
    let c = match std::ffi::CString::new(dir.as_os_str().as_bytes()) {
        Ok(c) => c,
        Err(e) => return Some(Err(anyhow::anyhow!("cannot remove {}: {e}", dir.display()))),
    };
    match probe_mount_root(libc::AT_FDCWD, &c) {
        Ok(None) => return None,
        Ok(Some((_, true))) => {
            return Some(Err(anyhow::anyhow!(
                "cannot remove {}: it is a mount",
                dir.display()
            )))
        }
        Ok(Some(_)) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Some(Ok(())),
        Err(e) => return Some(Err(anyhow::anyhow!("cannot remove {}: {e}", dir.display()))),
    }
    let fd = match open_dir_at(libc::AT_FDCWD, &c) {
        Ok(fd) => fd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Some(Ok(())),
        Err(e) => return Some(Err(anyhow::anyhow!("cannot remove {}: {e}", dir.display()))),
    };
    match empty_within_mount(fd, dir)? {
        Ok(()) => {}
        Err(e) => return Some(Err(e)),
    }
    match std::fs::remove_dir(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Some(Err(e).with_context(|| format!("cannot remove {}", dir.display())))
        }
        _ => Some(Ok(())),
    }
}

/// (is a directory, is a mount root) of `name` under the directory fd `at` (never following a
/// symlink), or None when statx cannot tell.
fn probe_mount_root(at: i32, name: &std::ffi::CStr) -> std::io::Result<Option<(bool, bool)>> {
    // SAFETY: an all-zero statx is a valid buffer for the kernel to fill
    let mut stx: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: statx of a NUL-terminated name relative to a directory fd we hold
    let rc = unsafe {
        libc::statx(
            at,
            name.as_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
            libc::STATX_TYPE,
            &mut stx,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let root = libc::STATX_ATTR_MOUNT_ROOT as u64;
    if stx.stx_attributes_mask & root == 0 {
        return Ok(None);
    }
    let is_dir = u32::from(stx.stx_mode) & libc::S_IFMT == libc::S_IFDIR;
    Ok(Some((is_dir, stx.stx_attributes & root != 0)))
}

/// Opens the directory `name` under the directory fd `at`, refusing a symlink.
fn open_dir_at(at: i32, name: &std::ffi::CStr) -> std::io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::{FromRawFd, OwnedFd};
    let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    // SAFETY: openat of a NUL-terminated name relative to a directory fd we hold
    let fd = unsafe { libc::openat(at, name.as_ptr(), flags) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: openat just returned this fd, which nothing else owns
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Empties the directory open at `fd` (shown as `path` in errors), stopping at a mount root.
fn empty_within_mount(fd: std::os::fd::OwnedFd, path: &Path) -> Option<Result<()>> {
    use std::os::fd::{AsRawFd, IntoRawFd};
    let raw = fd.as_raw_fd();
    // the Dir owns the fd from here on (closed when it is dropped, at the end of this call)
    let mut d = match nix::dir::Dir::from_fd(fd.into_raw_fd()) {
        Ok(d) => d,
        Err(e) => return Some(Err(anyhow::anyhow!("cannot read {}: {e}", path.display()))),
    };
    let names: Vec<std::ffi::CString> = d
        .iter()
        .flatten()
        .map(|e| e.file_name().to_owned())
        .filter(|n| n.as_bytes() != b"." && n.as_bytes() != b"..")
        .collect();
    for name in names {
        match remove_entry_within_mount(raw, &name, path)? {
            Ok(()) => {}
            Err(e) => return Some(Err(e)),
        }
    }
    Some(Ok(()))
}

/// Removes the entry `name` of the directory open at `raw` (shown as `path`), emptying it first
/// when it is a directory; an entry already gone is fine.
fn remove_entry_within_mount(raw: i32, name: &std::ffi::CStr, path: &Path) -> Option<Result<()>> {
    use std::os::unix::ffi::OsStrExt;
    let shown = path.join(std::ffi::OsStr::from_bytes(name.to_bytes()));
    let (is_dir, mount_root) = match probe_mount_root(raw, name) {
        Ok(Some(p)) => p,
        Ok(None) => return None,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Some(Ok(())),
        Err(e) => {
            return Some(Err(anyhow::anyhow!(
                "cannot remove {}: {e}",
                shown.display()
            )))
        }
    };
    if mount_root {
        return Some(Err(anyhow::anyhow!(
            "cannot remove {}: {} is still mounted there",
            path.display(),
            shown.display()
        )));
    }
    let mut flags = 0;
    if is_dir {
        match open_dir_at(raw, name) {
            Ok(sub) => match empty_within_mount(sub, &shown)? {
                Ok(()) => {}
                Err(e) => return Some(Err(e)),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Some(Ok(())),
            Err(e) => {
                return Some(Err(anyhow::anyhow!(
                    "cannot remove {}: {e}",
                    shown.display()
                )))
            }
        }
        flags = libc::AT_REMOVEDIR;
    }
    // SAFETY: unlinkat of a NUL-terminated name relative to a directory fd we hold
    if unsafe { libc::unlinkat(raw, name.as_ptr(), flags) } != 0 {
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::NotFound {
            return Some(Err(anyhow::anyhow!(
                "cannot remove {}: {e}",
                shown.display()
            )));
        }
    }
    Some(Ok(()))
}

/// A random 64-bit value from the kernel (for temporary names nobody can predict).
pub fn random_u64() -> u64 {
    let mut b = [0u8; 8];
    // SAFETY: getrandom writes at most b.len() bytes into the buffer we own.
    let n = unsafe { libc::getrandom(b.as_mut_ptr().cast(), b.len(), 0) };
    if n != b.len() as isize {
        // the kernel's pool is always ready after boot; fall back to time and pid mixing anyway
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        return t ^ ((std::process::id() as u64) << 32);
    }
    u64::from_ne_bytes(b)
}

/// Reads a small file (procfs, cgroupfs, rloxsc's own state) a page at a time: no `statx` for a
/// size hint and no 32-byte first reads (procfs and cgroupfs report a size of 0), so a file of up to
/// a page costs open, read, read (end of file), close.
pub fn read_small(path: impl AsRef<Path>) -> std::io::Result<Vec<u8>> {
    let mut f = File::open(path)?;
    let mut out = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        match f.read(&mut chunk) {
            Ok(0) => return Ok(out),
            Ok(n) => out.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// [`read_small`], as UTF-8 text.
pub fn read_small_string(path: impl AsRef<Path>) -> std::io::Result<String> {
    String::from_utf8(read_small(path)?)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

/// Creates a new file exclusively (never following a symlink, failing if anything exists there).
pub fn create_new(path: &Path, mode: u32) -> std::io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
}

/// Writes `data` to a new file at `path` (it must not exist).
pub fn write_new(path: &Path, data: &[u8], mode: u32) -> Result<()> {
    let mut f =
        create_new(path, mode).with_context(|| format!("cannot create {}", path.display()))?;
    f.write_all(data)
        .with_context(|| format!("cannot write {}", path.display()))
}

/// Replaces the file at `path` with `data` atomically: an exclusive temporary file with a random name
/// in the same directory, then a rename over `path`. Refuses a symlink at `path`. `what` names the
/// file in errors ("pid file", "run record").
pub fn replace_file(path: &Path, data: &[u8], mode: u32, what: &str) -> Result<()> {
    refuse_symlink(path, what)?;
    refuse_foreign_symlinks(path, what)?;
    let name = path
        .file_name()
        .with_context(|| format!("the {what} path {} has no file name", path.display()))?;
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let tmp: PathBuf = dir.join(format!(
        ".{}.rloxsc-{:016x}",
        name.to_string_lossy(),
        random_u64()
    ));
    let res = (|| -> Result<()> {
        let mut f = create_new(&tmp, mode)
            .with_context(|| format!("cannot write the {what} {}", path.display()))?;
        f.write_all(data)
            .with_context(|| format!("cannot write the {what} {}", path.display()))?;
        drop(f);
        std::fs::rename(&tmp, path)
            .with_context(|| format!("cannot write the {what} {}", path.display()))
    })();
    if res.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    res
}

/// Opens `path` for appending (created with `mode` when absent), refusing a symlink as its final
/// component (ELOOP).
pub fn open_append_nofollow(path: &Path, mode: u32) -> std::io::Result<File> {
    refuse_foreign_symlinks(path, "log file")
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::PermissionDenied, format!("{e:#}")))?;
    OpenOptions::new()
        .create(true)
        .append(true)
        .mode(mode)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
}

/// Reads at most `limit` bytes of a regular file without blocking (a FIFO or a device is refused, not
/// waited on) and without following a symlink as the final component. More than `limit` bytes is an
/// error.
pub fn read_regular_bounded(path: &Path, limit: usize) -> Result<Vec<u8>> {
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    read_open_regular_bounded(f, path, limit)
}

/// [`read_regular_bounded`] of a file already opened.
pub fn read_open_regular_bounded(f: File, path: &Path, limit: usize) -> Result<Vec<u8>> {
    let md = f
        .metadata()
        .with_context(|| format!("cannot read {}", path.display()))?;
    if !md.is_file() {
        bail!("{} is not a regular file", path.display());
    }
    let mut data = Vec::new();
    f.take(limit as u64 + 1)
        .read_to_end(&mut data)
        .with_context(|| format!("cannot read {}", path.display()))?;
    if data.len() > limit {
        bail!(
            "{} is larger than {} bytes; rloxsc does not read it",
            path.display(),
            limit
        );
    }
    Ok(data)
}

#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}
/// `openat2` resolve flag: no magic links (`/proc/<pid>/fd/*` and the like).
pub const RESOLVE_NO_MAGICLINKS: u64 = 0x02;
/// `openat2` resolve flag: no symlinks at all.
pub const RESOLVE_NO_SYMLINKS: u64 = 0x04;
/// `openat2` resolve flag: never leave the starting directory.
pub const RESOLVE_BENEATH: u64 = 0x08;
/// `openat2` resolve flag: resolve as if the starting directory were `/`.
pub const RESOLVE_IN_ROOT: u64 = 0x10;

/// `openat2(dir, rel)` with open flags `flags` (plus `O_CLOEXEC`, and `O_NOCTTY` unless `O_PATH`)
/// and resolve flags `resolve`.
pub fn openat2(
    dir: std::os::fd::RawFd,
    rel: &Path,
    flags: i32,
    resolve: u64,
) -> std::io::Result<std::os::fd::OwnedFd> {
    let name = std::ffi::CString::new(rel.as_os_str().as_encoded_bytes())
        .map_err(|_| std::io::ErrorKind::InvalidInput)?;
    let how = OpenHow {
        // (openat2 refuses O_PATH with anything but O_DIRECTORY, O_NOFOLLOW and O_CLOEXEC)
        flags: (flags
            | libc::O_CLOEXEC
            | if flags & libc::O_PATH == 0 {
                libc::O_NOCTTY
            } else {
                0
            }) as u64,
        mode: 0,
        resolve,
    };
    // SAFETY: openat2 with a valid dirfd, a NUL-terminated path and an open_how of the size given
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir,
            name.as_ptr(),
            &how as *const OpenHow,
            std::mem::size_of::<OpenHow>(),
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: openat2 returned a new fd that nothing else owns
    Ok(unsafe { std::os::fd::FromRawFd::from_raw_fd(fd as i32) })
}

/// The state root `root` canonicalized, once per process: each verb asks for it in several steps
/// (the host facts, the footprint, the id ledger, the views' names), and each canonicalization
/// reads every component's link back. A path that cannot be canonicalized is returned as given
/// (and not remembered).
pub fn canonical_state_root(root: &Path) -> PathBuf {
    static SEEN: std::sync::Mutex<Option<(PathBuf, PathBuf)>> = std::sync::Mutex::new(None);
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((given, canonical)) = seen.as_ref() {
        if given == root {
            return canonical.clone();
        }
    }
    match std::fs::canonicalize(root) {
        Ok(canonical) => {
            *seen = Some((root.to_path_buf(), canonical.clone()));
            canonical
        }
        Err(_) => root.to_path_buf(),
    }
}

#[cfg(test)]
mod foreign_symlink_tests {
    use super::*;

    #[test]
    fn a_users_symlink_on_the_way_is_refused_roots_is_followed() {
        if !nix::unistd::geteuid().is_root() {
            eprintln!("SKIPPED: needs root");
            return;
        }
        let base = std::env::temp_dir().join(format!("rloxsc-fsym-{}", std::process::id()));
        let target = base.join("roots");
        std::fs::create_dir_all(&target).unwrap();
        std::os::unix::fs::symlink(&target, base.join("users")).unwrap();
        std::os::unix::fs::symlink(&target, base.join("mine")).unwrap();
        // the user's link
        let c = std::ffi::CString::new(base.join("users").as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: lchown of a NUL-terminated path of our own
        assert_eq!(unsafe { libc::lchown(c.as_ptr(), 1000, 1000) }, 0);
        let e = refuse_foreign_symlinks(&base.join("users/c.pid"), "pid file").unwrap_err();
        assert!(e.to_string().contains("uid 1000"), "{e}");
        refuse_foreign_symlinks(&base.join("mine/c.pid"), "pid file").unwrap();
        refuse_foreign_symlinks(&base.join("roots/c.pid"), "pid file").unwrap();
        std::fs::remove_dir_all(&base).unwrap();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tree_is_removed_without_following_a_symlink_or_entering_a_mount() {
        let base = std::env::temp_dir().join(format!("rloxsc-rmtree-{}", std::process::id()));
        let outside = base.join("outside");
        let tree = base.join("tree");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("keep"), "x").unwrap();
        std::fs::create_dir_all(tree.join("a/b")).unwrap();
        std::fs::write(tree.join("a/b/f"), "y").unwrap();
        std::os::unix::fs::symlink(&outside, tree.join("a/link")).unwrap();
        assert!(remove_tree_within_mount(&tree).unwrap().is_ok());
        assert!(!tree.exists() && outside.join("keep").exists());

        // a mount below: refused, and nothing in the mount is touched
        std::fs::create_dir_all(tree.join("m")).unwrap();
        let m = std::ffi::CString::new(tree.join("m").to_str().unwrap()).unwrap();
        // SAFETY: mount(2) of a new tmpfs on a directory this test made
        let rc = unsafe {
            libc::mount(
                c"tmpfs".as_ptr(),
                m.as_ptr(),
                c"tmpfs".as_ptr(),
                0,
                std::ptr::null(),
            )
        };
        if rc == 0 {
            std::fs::write(tree.join("m/inside"), "z").unwrap();
            let e = remove_tree_within_mount(&tree)
                .unwrap()
                .unwrap_err()
                .to_string();
            assert!(e.contains("still mounted"), "{e}");
            assert!(tree.join("m/inside").exists());
            // SAFETY: umount2 of the tmpfs mounted above
            unsafe { libc::umount2(m.as_ptr(), libc::MNT_DETACH) };
        }
        std::fs::remove_dir_all(&base).unwrap();
    }

    fn dir() -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "rloxsc-fsutil-{}-{}",
            std::process::id(),
            random_u64()
        ));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn replace_refuses_a_planted_symlink_and_leaves_its_target_alone() {
        let d = dir();
        let target = d.join("victim");
        std::fs::write(&target, "precious").unwrap();
        let p = d.join("pid");
        std::os::unix::fs::symlink(&target, &p).unwrap();
        let e = replace_file(&p, b"1", 0o644, "pid file").unwrap_err();
        assert!(e.to_string().contains("symlink"), "{e}");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "precious");
        std::fs::remove_file(&p).unwrap();
        replace_file(&p, b"42", 0o644, "pid file").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "42");
        // no temporary file is left behind
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 2);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn bounded_read_refuses_fifos_and_big_files() {
        let d = dir();
        let fifo = d.join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        assert!(read_regular_bounded(&fifo, 10).is_err());
        let big = d.join("big");
        std::fs::write(&big, vec![b'x'; 11]).unwrap();
        assert!(read_regular_bounded(&big, 10).is_err());
        assert_eq!(read_regular_bounded(&big, 11).unwrap().len(), 11);
        std::os::unix::fs::symlink(&big, d.join("link")).unwrap();
        assert!(read_regular_bounded(&d.join("link"), 100).is_err());
        std::fs::remove_dir_all(&d).unwrap();
    }
}
