//! Walking and copying trees that a container could write, as host root, without ever following
//! what the container put there: every directory is opened by fd relative to its parent with
//! `O_NOFOLLOW`, every entry is `fstatat`'d without following, FIFOs are never opened, devices never
//! copied, and the walk is bounded in depth, entries, bytes and time. Data is copied sparse (holes
//! stay holes) and hard links stay links, so nothing costs the host more than it cost the container.
//! Set-user-ID and set-group-ID bits are never copied.

use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::time::Instant;

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

/// Copies the data of `from` into `to`, sparse: only the data extents are copied (`SEEK_DATA` /
/// `SEEK_HOLE`), so a hole costs nothing; `to` ends at `from`'s size. Returns the bytes copied.
pub fn copy_data(from: &OwnedFd, to: &OwnedFd, size: i64) -> std::io::Result<u64> {
    let (f, t) = (from.as_raw_fd(), to.as_raw_fd());
    let mut pos: i64 = 0;
    let mut copied = 0u64;
    let mut buf = vec![0u8; 128 * 1024];
    while pos < size {
        // SAFETY: lseek on our fd
        let data = unsafe { libc::lseek(f, pos, libc::SEEK_DATA) };
        if data < 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::ENXIO) {
                break; // only a hole is left
            }
            return Err(e);
        }
        // SAFETY: lseek on our fd
        let hole = unsafe { libc::lseek(f, data, libc::SEEK_HOLE) };
        let end = if hole < 0 { size } else { hole.min(size) };
        let mut off = data;
        while off < end {
            let want = ((end - off) as usize).min(buf.len());
            // SAFETY: pread into our buffer of at least `want` bytes
            let n = unsafe { libc::pread(f, buf.as_mut_ptr().cast(), want, off) };
            if n < 0 {
                return Err(std::io::Error::last_os_error());
            }
            if n == 0 {
                break; // the file shrank under us
            }
            let mut w = 0;
            while w < n as usize {
                // SAFETY: pwrite from our buffer's initialized bytes
                let m = unsafe {
                    libc::pwrite(t, buf[w..].as_ptr().cast(), n as usize - w, off + w as i64)
                };
                if m < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                w += m as usize;
            }
            off += n as i64;
            copied += n as u64;
        }
        pos = end.max(pos + 1);
    }
    // SAFETY: ftruncate on our fd
    check(unsafe { libc::ftruncate(t, size) })?;
    Ok(copied)
}

/// The access and modification times of `st`, as futimens/utimensat take them.
fn access_and_modification_times(st: &libc::stat) -> [libc::timespec; 2] {
    [
        libc::timespec {
            tv_sec: st.st_atime,
            tv_nsec: st.st_atime_nsec,
        },
        libc::timespec {
            tv_sec: st.st_mtime,
            tv_nsec: st.st_mtime_nsec,
        },
    ]
}

/// Sets owner `(uid, gid)`, permission bits (set-id bits never), and the times of `st` on the open
/// `fd`.
pub fn set_attrs(fd: RawFd, st: &libc::stat, owner: (u32, u32)) -> std::io::Result<()> {
    // SAFETY: fchown/fchmod/futimens on an fd we own; the times array outlives the call
    unsafe {
        check(libc::fchown(fd, owner.0, owner.1))?;
        check(libc::fchmod(fd, st.st_mode & 0o1777))?;
        let times = access_and_modification_times(st);
        check(libc::futimens(fd, times.as_ptr()))
    }
}

/// Sets owner and times of the symlink `name` in `dir` (a symlink has no mode of its own).
pub fn set_link_attrs(
    dir: RawFd,
    name: &CStr,
    st: &libc::stat,
    owner: (u32, u32),
) -> std::io::Result<()> {
    // SAFETY: fchownat/utimensat with NUL-terminated names on a valid dirfd; no following
    unsafe {
        check(libc::fchownat(
            dir,
            name.as_ptr(),
            owner.0,
            owner.1,
            libc::AT_SYMLINK_NOFOLLOW,
        ))?;
        let times = access_and_modification_times(st);
        check(libc::utimensat(
            dir,
            name.as_ptr(),
            times.as_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
        ))
    }
}

/// A name for a temporary entry in a directory that nothing can predict.
pub fn temp_name() -> CString {
    CString::new(format!(".rloxsc-{:016x}", crate::fsutil::random_u64())).expect("no NUL")
}

/// Limits a walk keeps to.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    /// Most entries.
    pub entries: u64,
    /// Most data bytes.
    pub bytes: u64,
    /// When to give up.
    pub deadline: Option<Instant>,
}

/// Why a walk stopped early.
#[derive(Debug)]
pub enum Stop {
    /// More entries than [`Bounds::entries`].
    Entries,
    /// More data than [`Bounds::bytes`].
    Bytes,
    /// Past [`Bounds::deadline`].
    Deadline,
    /// Nested deeper than [`MAX_DEPTH`].
    Depth,
    /// A system call failed.
    Io(std::io::Error),
}

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stop::Entries => write!(f, "too many entries"),
            Stop::Bytes => write!(f, "too much data"),
            Stop::Deadline => write!(f, "out of time"),
            Stop::Depth => write!(f, "nested deeper than {MAX_DEPTH} directories"),
            Stop::Io(e) => write!(f, "{e}"),
        }
    }
}

impl From<std::io::Error> for Stop {
    fn from(e: std::io::Error) -> Self {
        Stop::Io(e)
    }
}

/// Running totals of a walk, checked against its [`Bounds`].
#[derive(Debug)]
pub struct Budget {
    bounds: Bounds,
    /// Entries so far.
    pub entries: u64,
    /// Data bytes so far.
    pub bytes: u64,
}

impl Budget {
    /// A budget of `bounds`.
    pub fn new(bounds: Bounds) -> Budget {
        Budget {
            bounds,
            entries: 0,
            bytes: 0,
        }
    }

    /// Counts one entry (and checks the deadline every 256 entries).
    pub fn entry(&mut self) -> Result<(), Stop> {
        self.entries += 1;
        if self.entries > self.bounds.entries {
            return Err(Stop::Entries);
        }
        if self.entries % 256 == 0 {
            if let Some(d) = self.bounds.deadline {
                if Instant::now() >= d {
                    return Err(Stop::Deadline);
                }
            }
        }
        Ok(())
    }

    /// Counts `n` data bytes.
    pub fn bytes(&mut self, n: u64) -> Result<(), Stop> {
        self.bytes += n;
        if self.bytes > self.bounds.bytes {
            return Err(Stop::Bytes);
        }
        Ok(())
    }
}

/// Hard links seen in a walk: a source inode's first copy, by (device, inode).
#[derive(Debug, Default)]
pub struct Links(HashMap<(u64, u64), (OwnedFd, CString)>);

impl Links {
    /// Where the first copy of the inode of `st` went (its directory and name), when it has
    /// more than one link and was copied already.
    pub fn first(&self, st: &libc::stat) -> Option<(RawFd, &CStr)> {
        if st.st_nlink < 2 {
            return None;
        }
        self.0
            .get(&(st.st_dev, st.st_ino))
            .map(|(d, n)| (d.as_raw_fd(), n.as_c_str()))
    }

    /// Remembers that the inode of `st` was copied to `name` in `dir`.
    pub fn remember(&mut self, st: &libc::stat, dir: RawFd, name: &CStr) -> std::io::Result<()> {
        if st.st_nlink < 2 {
            return Ok(());
        }
        let d = nix::unistd::dup(dir)?;
        // SAFETY: dup returned a new fd that nothing else owns
        let d = unsafe { OwnedFd::from_raw_fd(d) };
        self.0.insert((st.st_dev, st.st_ino), (d, name.to_owned()));
        Ok(())
    }
}

/// Counts the entries and data bytes below the directory `dir`, without following anything,
/// stopping as soon as `bounds` is exceeded.
pub fn measure(dir: &OwnedFd, bounds: Bounds) -> Result<Budget, Stop> {
    fn walk(dir: &OwnedFd, b: &mut Budget, depth: usize) -> Result<(), Stop> {
        if depth > MAX_DEPTH {
            return Err(Stop::Depth);
        }
        for name in names_in(dir)? {
            b.entry()?;
            let st = lstat_at(dir.as_raw_fd(), &name)?;
            match kind(&st) {
                Kind::Dir => walk(&open_dir_at(dir.as_raw_fd(), &name)?, b, depth + 1)?,
                // what a sparse copy would write
                Kind::File => b.bytes((st.st_blocks as u64 * 512).min(st.st_size.max(0) as u64))?,
                _ => {}
            }
        }
        Ok(())
    }
    let mut b = Budget::new(bounds);
    walk(dir, &mut b, 0)?;
    Ok(b)
}

/// Copies the tree below directory `src` into directory `dst`, keeping owners, modes (without
/// set-id bits), times, holes and hard links; devices, sockets and overlay whiteouts are skipped.
/// An entry `dst` holds already (a mount point libcontainer made there) is kept, never replaced:
/// replacing a mount point would detach the container's mount on it. Bounded by `budget`.
pub fn copy_tree(src: &OwnedFd, dst: &OwnedFd, budget: &mut Budget) -> Result<(), Stop> {
    let mut links = Links::default();
    copy_dir(src, dst, budget, &mut links, 0)
}

fn copy_dir(
    src: &OwnedFd,
    dst: &OwnedFd,
    b: &mut Budget,
    links: &mut Links,
    depth: usize,
) -> Result<(), Stop> {
    if depth > MAX_DEPTH {
        return Err(Stop::Depth);
    }
    for name in names_in(src)? {
        b.entry()?;
        let st = lstat_at(src.as_raw_fd(), &name)?;
        copy_entry(
            src,
            dst,
            &name,
            &st,
            b,
            links,
            depth,
            (st.st_uid, st.st_gid),
        )?;
    }
    Ok(())
}

/// Copies entry `name` of `src` (stat `st`) into `dst` under the same name, owned by `owner`.
#[allow(clippy::too_many_arguments)]
pub fn copy_entry(
    src: &OwnedFd,
    dst: &OwnedFd,
    name: &CStr,
    st: &libc::stat,
    b: &mut Budget,
    links: &mut Links,
    depth: usize,
    owner: (u32, u32),
) -> Result<(), Stop> {
    let (s, d) = (src.as_raw_fd(), dst.as_raw_fd());
    let existing = lstat_at(d, name).ok();
    match kind(st) {
        Kind::Dir => {
            let keep = existing.as_ref().is_some_and(|e| kind(e) == Kind::Dir);
            if !keep {
                if existing.is_some() {
                    remove_entry(d, name, 0, &mut 0)?;
                }
                // SAFETY: mkdirat on a valid dirfd with a NUL-terminated name
                check(unsafe { libc::mkdirat(d, name.as_ptr(), 0o700) })?;
            }
            let from = open_dir_at(s, name)?;
            let to = open_dir_at(d, name)?;
            copy_dir(&from, &to, b, links, depth + 1)?;
            set_attrs(to.as_raw_fd(), st, owner)?;
        }
        Kind::File => {
            if let Some((ldir, lname)) = links.first(st) {
                let tmp = temp_name();
                // SAFETY: linkat between valid dirfds with NUL-terminated names, no following
                check(unsafe { libc::linkat(ldir, lname.as_ptr(), d, tmp.as_ptr(), 0) })?;
                replace(d, &tmp, name, existing.as_ref())?;
                return Ok(());
            }
            // non-blocking: a file swapped for a FIFO after the stat opens without waiting
            let from = open_at(
                s,
                name,
                libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK,
                0,
            )?;
            let again = stat_fd(from.as_raw_fd())?;
            if kind(&again) != Kind::File {
                return Ok(());
            }
            b.bytes((again.st_blocks as u64 * 512).min(again.st_size.max(0) as u64))?;
            let tmp = temp_name();
            let to = open_at(
                d,
                &tmp,
                libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW,
                0o600,
            )?;
            let done = copy_data(&from, &to, again.st_size)
                .and_then(|_| set_attrs(to.as_raw_fd(), &again, owner));
            if let Err(e) = done {
                // SAFETY: unlinkat of our own temporary name
                unsafe { libc::unlinkat(d, tmp.as_ptr(), 0) };
                return Err(e.into());
            }
            replace(d, &tmp, name, existing.as_ref())?;
            links.remember(&again, d, name)?;
        }
        Kind::Symlink => {
            let target = nix::fcntl::readlinkat(Some(s), name).map_err(std::io::Error::from)?;
            let t = CString::new(target.as_bytes())
                .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidData))?;
            let tmp = temp_name();
            // SAFETY: symlinkat with NUL-terminated strings on a valid dirfd
            check(unsafe { libc::symlinkat(t.as_ptr(), d, tmp.as_ptr()) })?;
            set_link_attrs(d, &tmp, st, owner)?;
            replace(d, &tmp, name, existing.as_ref())?;
        }
        Kind::Fifo => {
            let tmp = temp_name();
            // SAFETY: mkfifoat on a valid dirfd with a NUL-terminated name
            check(unsafe { libc::mkfifoat(d, tmp.as_ptr(), 0o600) })?;
            let f = open_at(d, &tmp, libc::O_PATH | libc::O_NOFOLLOW, 0)?;
            // an O_PATH fd cannot be fchown'd: through /proc/self/fd, which names exactly it
            let p = CString::new(format!("/proc/self/fd/{}", f.as_raw_fd())).expect("no NUL");
            // SAFETY: chown/chmod of the FIFO our fd holds (a magic link to it, no other path)
            unsafe {
                check(libc::chown(p.as_ptr(), owner.0, owner.1))?;
                check(libc::chmod(p.as_ptr(), st.st_mode & 0o777))?;
            }
            replace(d, &tmp, name, existing.as_ref())?;
        }
        Kind::Whiteout | Kind::Other => {}
    }
    Ok(())
}

/// Renames `tmp` over `name` in `dir`; a directory in the way is removed first (rename cannot
/// replace a non-empty one, nor a directory by a file).
pub fn replace(
    dir: RawFd,
    tmp: &CStr,
    name: &CStr,
    existing: Option<&libc::stat>,
) -> std::io::Result<()> {
    if existing.is_some_and(|e| kind(e) == Kind::Dir) {
        remove_entry(dir, name, 0, &mut 0)?;
    }
    // SAFETY: renameat within one valid dirfd with NUL-terminated names
    check(unsafe { libc::renameat(dir, tmp.as_ptr(), dir, name.as_ptr()) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;
    use std::path::Path;

    fn dir_fd(p: &Path) -> OwnedFd {
        let c = CString::new(p.as_os_str().as_bytes()).unwrap();
        open_at(libc::AT_FDCWD, &c, libc::O_RDONLY | libc::O_DIRECTORY, 0).unwrap()
    }

    fn bounds() -> Bounds {
        Bounds {
            entries: 1000,
            bytes: 64 << 20,
            deadline: None,
        }
    }

    #[test]
    fn a_copy_keeps_holes_links_and_never_set_id_bits_or_symlink_targets() {
        let base = std::env::temp_dir().join(format!("rloxsc-tree-{}", std::process::id()));
        let (src, dst) = (base.join("src"), base.join("dst"));
        std::fs::create_dir_all(src.join("sub")).unwrap();
        std::fs::create_dir_all(&dst).unwrap();
        let sparse = std::fs::File::create(src.join("sparse")).unwrap();
        sparse.set_len(1 << 30).unwrap();
        std::fs::write(src.join("sub/data"), vec![7u8; 100_000]).unwrap();
        std::fs::hard_link(src.join("sub/data"), src.join("link")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", src.join("out")).unwrap();
        std::fs::write(src.join("suid"), b"x").unwrap();
        std::fs::set_permissions(
            src.join("suid"),
            std::os::unix::fs::PermissionsExt::from_mode(0o4755),
        )
        .unwrap();
        let mut b = Budget::new(bounds());
        copy_tree(&dir_fd(&src), &dir_fd(&dst), &mut b).unwrap();
        let md = std::fs::metadata(dst.join("sparse")).unwrap();
        assert_eq!(md.len(), 1 << 30);
        assert!(
            md.blocks() * 512 < 1 << 20,
            "the hole was written: {}",
            md.blocks()
        );
        assert_eq!(
            std::fs::metadata(dst.join("link")).unwrap().ino(),
            std::fs::metadata(dst.join("sub/data")).unwrap().ino(),
            "the hard link became two files"
        );
        assert_eq!(
            std::fs::read_link(dst.join("out")).unwrap(),
            Path::new("/etc/passwd")
        );
        assert_eq!(
            std::fs::metadata(dst.join("suid")).unwrap().mode() & 0o7777,
            0o755
        );
        assert!(b.bytes < 200_000, "{} bytes counted", b.bytes);
        // over budget: stops
        let mut small = Budget::new(Bounds {
            entries: 2,
            ..bounds()
        });
        assert!(matches!(
            measure(&dir_fd(&src), small.bounds),
            Err(Stop::Entries)
        ));
        assert!(small.entry().is_ok());
        std::fs::remove_dir_all(&base).unwrap();
    }
}
