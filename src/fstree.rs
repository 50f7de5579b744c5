//! Walking trees that a container could write, as host root, without ever following what the
//! container put there: every directory is opened by fd relative to its parent with `O_NOFOLLOW`,
//! every entry is `fstatat`'d without following, FIFOs are never opened, and the walk is bounded in
//! depth.

use std::ffi::{CStr, CString};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// Deepest directory nesting walked.
pub const MAX_DEPTH: usize = 256;

/// Converts a libc return value.
pub fn check(rc: libc::c_int) -> std::io::Result<()> {
    if rc < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// `fstatat` of `name` in `dir`, not following a symlink.
pub fn lstat_at(dir: RawFd, name: &CStr) -> std::io::Result<libc::stat> {
    // SAFETY: an all-zero stat is a valid value for the kernel to overwrite
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstatat on a valid dirfd with a NUL-terminated name into our stat buffer
    check(unsafe { libc::fstatat(dir, name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) })?;
    Ok(st)
}

/// `fstat` of an open fd.
pub fn stat_fd(fd: RawFd) -> std::io::Result<libc::stat> {
    // SAFETY: an all-zero stat is a valid value for the kernel to overwrite
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat on a valid fd into our stat buffer
    check(unsafe { libc::fstat(fd, &mut st) })?;
    Ok(st)
}

/// `openat` with `O_CLOEXEC` added.
pub fn open_at(
    dir: RawFd,
    name: &CStr,
    flags: i32,
    mode: libc::mode_t,
) -> std::io::Result<OwnedFd> {
    // SAFETY: openat on a valid dirfd with a NUL-terminated name
    let fd = unsafe { libc::openat(dir, name.as_ptr(), flags | libc::O_CLOEXEC, mode) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: openat returned a new fd that nothing else owns
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Opens directory `name` in `dir` for reading, never through a symlink.
pub fn open_dir_at(dir: RawFd, name: &CStr) -> std::io::Result<OwnedFd> {
    open_at(
        dir,
        name,
        libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW,
        0,
    )
}

/// The entry names of the directory open at `dir` (without `.` and `..`), in the order the
/// filesystem gives them.
pub fn names_in(dir: &OwnedFd) -> std::io::Result<Vec<CString>> {
    let dup = nix::unistd::dup(dir.as_raw_fd())?;
    let mut list = nix::dir::Dir::from_fd(dup)?;
    let mut out = Vec::new();
    // an error while reading (an O_PATH fd, an I/O error) is an error, never an empty directory
    for e in list.iter() {
        let n = e?.file_name().to_owned();
        if n.as_bytes() != b"." && n.as_bytes() != b".." {
            out.push(n);
        }
    }
    Ok(out)
}

/// Whether directory `dir` has no entry besides `.` and `..`: reads up to its first entry only (an
/// image directory may hold 100,000).
pub fn is_empty_dir(dir: &OwnedFd) -> std::io::Result<bool> {
    let dup = nix::unistd::dup(dir.as_raw_fd())?;
    let mut list = nix::dir::Dir::from_fd(dup)?;
    for e in list.iter() {
        let e = e?;
        let n = e.file_name().to_bytes();
        if n != b"." && n != b".." {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The kind of an inode, from its mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A directory.
    Dir,
    /// A regular file.
    File,
    /// A symbolic link.
    Symlink,
    /// Overlayfs's whiteout: a character device 0:0.
    Whiteout,
    /// A FIFO.
    Fifo,
    /// A device or a socket: never copied.
    Other,
}

/// The kind of `st`.
pub fn kind(st: &libc::stat) -> Kind {
    match st.st_mode & libc::S_IFMT {
        libc::S_IFDIR => Kind::Dir,
        libc::S_IFREG => Kind::File,
        libc::S_IFLNK => Kind::Symlink,
        libc::S_IFIFO => Kind::Fifo,
        libc::S_IFCHR if st.st_rdev == 0 => Kind::Whiteout,
        _ => Kind::Other,
    }
}

/// Removes `name` in `dir` and, for a directory, everything below it, never following a symlink.
/// Bounded in depth; counts what it removed into `removed`.
pub fn remove_entry(
    dir: RawFd,
    name: &CStr,
    depth: usize,
    removed: &mut u64,
) -> std::io::Result<()> {
    let st = match lstat_at(dir, name) {
        Ok(st) => st,
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(()),
        Err(e) => return Err(e),
    };
    if kind(&st) == Kind::Dir {
        if depth > MAX_DEPTH {
            return Err(std::io::Error::other("nested too deep to remove"));
        }
        let d = open_dir_at(dir, name)?;
        for n in names_in(&d)? {
            remove_entry(d.as_raw_fd(), &n, depth + 1, removed)?;
        }
        // SAFETY: unlinkat on a valid dirfd with a NUL-terminated name
        check(unsafe { libc::unlinkat(dir, name.as_ptr(), libc::AT_REMOVEDIR) })?;
    } else {
        // SAFETY: unlinkat on a valid dirfd with a NUL-terminated name
        check(unsafe { libc::unlinkat(dir, name.as_ptr(), 0) })?;
    }
    *removed += 1;
    Ok(())
}
