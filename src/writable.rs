//! The container's writable paths (`filesystem.writable`), from the host side: the image's content
//! copied into each tmpfs, and the view of each that the client's copy API sees.
//!
//! Every byte of the image is hostile here. The image's directory is opened with `openat2`
//! (`RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS`: a symlink anywhere on the way means nothing is
//! copied), its tree is walked by file descriptor without following anything (`O_NOFOLLOW`, FIFOs
//! opened non-blocking and never read, devices and sockets skipped), bounded in depth and entries,
//! and the tmpfs's size bounds the bytes: an image whose content does not fit is refused.
//!
//! Docker's archive API (`docker cp`, docker-py's `put_archive`/`get_archive`) reads and writes the
//! container's rootfs in the daemon's mount namespace, not in the container's. When the rootfs is a
//! mount of its own (a client's per-container snapshot), each writable tmpfs is also attached at
//! `<rootfs>/<path>` on the host, idmapped with the inverse of the container's mapping, so that what
//! the daemon writes there as host root belongs to the container's root inside, and what the
//! container writes shows to the daemon with the ids it has inside. Those host-side mounts carry a
//! source name made from the container's view token; delete finds and detaches them by it.

use std::ffi::{CStr, CString, OsStr};
use std::io::ErrorKind;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::fsutil::{openat2, RESOLVE_IN_ROOT, RESOLVE_NO_MAGICLINKS, RESOLVE_NO_SYMLINKS};
use crate::policy::keys;

/// Deepest directory nesting copied from an image.
pub const MAX_DEPTH: usize = 64;
/// Most entries copied from an image into one writable path.
pub const MAX_ENTRIES: usize = 100_000;

/// A container's id mapping: (container id, host id, count) lines.
#[derive(Debug, Clone, Default)]
pub struct IdMap {
    /// uid lines.
    pub uids: Vec<(u32, u32, u32)>,
    /// gid lines.
    pub gids: Vec<(u32, u32, u32)>,
}

fn to_host(lines: &[(u32, u32, u32)], id: u32) -> Option<u32> {
    lines
        .iter()
        .find(|(c, _, n)| id >= *c && id - c < *n)
        .map(|(c, h, _)| h + (id - c))
}

impl IdMap {
    /// The host uid of container uid `id` (the container's root's when it is not mapped).
    pub fn uid(&self, id: u32) -> u32 {
        to_host(&self.uids, id)
            .or_else(|| to_host(&self.uids, 0))
            .unwrap_or(id)
    }
    /// The host gid of container gid `id` (the container's root's when it is not mapped).
    pub fn gid(&self, id: u32) -> u32 {
        to_host(&self.gids, id)
            .or_else(|| to_host(&self.gids, 0))
            .unwrap_or(id)
    }
    /// Whether host uid `h` is one of the mapping's.
    pub fn maps_host_uid(&self, h: u32) -> bool {
        self.uids.iter().any(|(_, ho, n)| h >= *ho && h - ho < *n)
    }
    /// Whether host gid `h` is one of the mapping's.
    pub fn maps_host_gid(&self, h: u32) -> bool {
        self.gids.iter().any(|(_, ho, n)| h >= *ho && h - ho < *n)
    }
    /// A user namespace whose mapping is the inverse of this one (inside: the container's host
    /// ids; outside: its ids inside), for the host-side views.
    pub fn inverse_namespace(&self) -> Result<OwnedFd> {
        let line = |v: &[(u32, u32, u32)]| {
            v.iter()
                .map(|(c, h, n)| format!("{h} {c} {n}\n"))
                .collect::<String>()
        };
        crate::userns::namespace_fd(&line(&self.uids), &line(&self.gids))
    }
}

fn open_dir(path: &Path) -> Result<OwnedFd> {
    openat2(libc::AT_FDCWD, path, libc::O_PATH | libc::O_DIRECTORY, 0)
        .with_context(|| format!("cannot open {}", path.display()))
}

/// The image's directory `path` (absolute inside `rootfs`), opened for reading without following
/// any symlink on the way; `None` when it does not exist or is reached through a symlink.
pub fn open_image_dir(rootfs: &Path, path: &Path) -> Result<Option<OwnedFd>> {
    let root = open_dir(rootfs)?;
    let rel = path.strip_prefix("/").unwrap_or(path);
    match openat2(
        root.as_raw_fd(),
        rel,
        libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW,
        RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
    ) {
        Ok(fd) => Ok(Some(fd)),
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::ENOENT | libc::ELOOP | libc::ENOTDIR | libc::EXDEV)
            ) =>
        {
            Ok(None)
        }
        Err(e) => Err(e).with_context(|| format!("cannot open the image's {}", path.display())),
    }
}

fn fstatat(dir: RawFd, name: &CStr) -> std::io::Result<libc::stat> {
    // SAFETY: an all-zero stat is a valid value for the kernel to overwrite
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstatat on a valid dirfd with a NUL-terminated name into our stat buffer
    let rc = unsafe { libc::fstatat(dir, name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) };
    if rc < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(st)
}

fn check(rc: libc::c_int) -> std::io::Result<()> {
    if rc < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(())
    }
}

fn openat(dir: RawFd, name: &CStr, flags: i32, mode: libc::mode_t) -> std::io::Result<OwnedFd> {
    // SAFETY: openat on a valid dirfd with a NUL-terminated name
    let fd = unsafe { libc::openat(dir, name.as_ptr(), flags | libc::O_CLOEXEC, mode) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: openat returned a new fd that nothing else owns
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Sets owner (translated by `ids`), permission bits (never set-id) and times of `fd` from `st`.
fn set_attrs(fd: RawFd, st: &libc::stat, ids: &IdMap) -> std::io::Result<()> {
    // SAFETY: fchown/fchmod/futimens on an fd we own; the times array outlives the call
    unsafe {
        check(libc::fchown(fd, ids.uid(st.st_uid), ids.gid(st.st_gid)))?;
        check(libc::fchmod(fd, st.st_mode & 0o1777))?;
        let times = [
            libc::timespec {
                tv_sec: st.st_atime,
                tv_nsec: st.st_atime_nsec,
            },
            libc::timespec {
                tv_sec: st.st_mtime,
                tv_nsec: st.st_mtime_nsec,
            },
        ];
        check(libc::futimens(fd, times.as_ptr()))
    }
}

struct Copy<'a> {
    ids: &'a IdMap,
    entries: usize,
    skipped: usize,
    /// Into a directory that may hold entries already: unchanged files (same type, size and
    /// modification time) are kept, changed ones replaced, ones the source lacks removed.
    merge: bool,
}

/// Removes `name` in `dir` and, for a directory, everything below it, never following a symlink.
fn remove_entry(dir: RawFd, name: &CStr, depth: usize) -> std::io::Result<()> {
    let st = fstatat(dir, name)?;
    if st.st_mode & libc::S_IFMT == libc::S_IFDIR {
        if depth > MAX_DEPTH {
            return Err(std::io::Error::other("nested too deep to remove"));
        }
        let d = openat(
            dir,
            name,
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW,
            0,
        )?;
        for n in names_in(&d)? {
            remove_entry(d.as_raw_fd(), &n, depth + 1)?;
        }
        // SAFETY: unlinkat on a valid dirfd with a NUL-terminated name
        check(unsafe { libc::unlinkat(dir, name.as_ptr(), libc::AT_REMOVEDIR) })
    } else {
        // SAFETY: unlinkat on a valid dirfd with a NUL-terminated name
        check(unsafe { libc::unlinkat(dir, name.as_ptr(), 0) })
    }
}

/// The entry names of the directory open at `dir` (without `.` and `..`).
fn names_in(dir: &OwnedFd) -> std::io::Result<Vec<CString>> {
    let dup = nix::unistd::dup(dir.as_raw_fd())?;
    let mut list = nix::dir::Dir::from_fd(dup)?;
    Ok(list
        .iter()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_owned())
        .filter(|n| n.as_bytes() != b"." && n.as_bytes() != b"..")
        .collect())
}

impl Copy<'_> {
    fn dir(&mut self, src: &OwnedFd, dst: &OwnedFd, depth: usize) -> std::io::Result<()> {
        if depth > MAX_DEPTH {
            return Err(std::io::Error::other(format!(
                "nested deeper than {MAX_DEPTH} directories"
            )));
        }
        let names = names_in(src)?;
        if self.merge {
            for stale in names_in(dst)?.into_iter().filter(|n| !names.contains(n)) {
                remove_entry(dst.as_raw_fd(), &stale, depth)?;
            }
        }
        for name in names {
            self.entries += 1;
            if self.entries > MAX_ENTRIES {
                return Err(std::io::Error::other(format!(
                    "more than {MAX_ENTRIES} entries"
                )));
            }
            self.entry(src, dst, &name, depth)?;
        }
        Ok(())
    }

    fn entry(
        &mut self,
        src: &OwnedFd,
        dst: &OwnedFd,
        name: &CStr,
        depth: usize,
    ) -> std::io::Result<()> {
        let st = fstatat(src.as_raw_fd(), name)?;
        let kind = st.st_mode & libc::S_IFMT;
        let mut existing_dir = false;
        if self.merge {
            if let Ok(d) = fstatat(dst.as_raw_fd(), name) {
                let dkind = d.st_mode & libc::S_IFMT;
                let unchanged = dkind == kind
                    && kind == libc::S_IFREG
                    && d.st_size == st.st_size
                    && d.st_mtime == st.st_mtime
                    && d.st_mtime_nsec == st.st_mtime_nsec;
                if unchanged {
                    return Ok(());
                }
                if dkind == libc::S_IFDIR && kind == libc::S_IFDIR {
                    existing_dir = true;
                } else {
                    remove_entry(dst.as_raw_fd(), name, depth)?;
                }
            }
        }
        match kind {
            libc::S_IFDIR => {
                if !existing_dir {
                    // SAFETY: mkdirat on a valid dirfd with a NUL-terminated name
                    check(unsafe { libc::mkdirat(dst.as_raw_fd(), name.as_ptr(), 0o700) })?;
                }
                let s = openat(
                    src.as_raw_fd(),
                    name,
                    libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW,
                    0,
                )?;
                let d = openat(
                    dst.as_raw_fd(),
                    name,
                    libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW,
                    0,
                )?;
                self.dir(&s, &d, depth + 1)?;
                set_attrs(d.as_raw_fd(), &st, self.ids)
            }
            libc::S_IFREG => {
                // non-blocking: a file swapped for a FIFO after the stat opens without waiting
                let s = openat(
                    src.as_raw_fd(),
                    name,
                    libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK,
                    0,
                )?;
                let again = nix::sys::stat::fstat(s.as_raw_fd())?;
                if again.st_mode & libc::S_IFMT != libc::S_IFREG {
                    self.skipped += 1;
                    return Ok(());
                }
                let d = openat(
                    dst.as_raw_fd(),
                    name,
                    libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW,
                    0o600,
                )?;
                let mut from = std::fs::File::from(s);
                let mut to = std::fs::File::from(d);
                std::io::copy(&mut from, &mut to)?;
                set_attrs(to.as_raw_fd(), &st, self.ids)
            }
            libc::S_IFLNK => {
                let target = nix::fcntl::readlinkat(Some(src.as_raw_fd()), name)?;
                let t = CString::new(target.as_bytes()).map_err(|_| ErrorKind::InvalidData)?;
                // SAFETY: symlinkat/fchownat with NUL-terminated strings on a valid dirfd
                unsafe {
                    check(libc::symlinkat(t.as_ptr(), dst.as_raw_fd(), name.as_ptr()))?;
                    check(libc::fchownat(
                        dst.as_raw_fd(),
                        name.as_ptr(),
                        self.ids.uid(st.st_uid),
                        self.ids.gid(st.st_gid),
                        libc::AT_SYMLINK_NOFOLLOW,
                    ))
                }
            }
            // devices, FIFOs, sockets: never copied (nodev scratch; nothing rloxsc should open)
            _ => {
                self.skipped += 1;
                Ok(())
            }
        }
    }
}

/// Copies the image's directory `path` (absolute inside `rootfs`) into the tmpfs attached at
/// `tmpfs` (host-side path, not idmapped), owners translated by `ids`, and gives the tmpfs's root
/// the directory's owner and mode (the container's root when `ids` is the identity and the
/// container's `mapping` lacks that owner). Returns whether the image had the directory. Errors name the
/// policy key: an image whose content there does not fit the tmpfs is refused.
pub fn copy_image_dir(
    rootfs: &Path,
    path: &Path,
    tmpfs: &Path,
    ids: &IdMap,
    mapping: &IdMap,
) -> Result<bool> {
    let Some(src) = open_image_dir(rootfs, path)? else {
        return Ok(false);
    };
    let dst = openat2(
        libc::AT_FDCWD,
        tmpfs,
        libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW,
        0,
    )
    .with_context(|| format!("cannot open {}", tmpfs.display()))?;
    let mut c = Copy {
        ids,
        entries: 0,
        skipped: 0,
        merge: false,
    };
    c.dir(&src, &dst, 0).map_err(|e| {
        let why = if e.raw_os_error() == Some(libc::ENOSPC) {
            "it does not fit in the writable size".to_string()
        } else {
            e.to_string()
        };
        anyhow::anyhow!(
            "cannot copy the image's {} into its writable tmpfs: {why} (policy key {})",
            path.display(),
            keys::WRITABLE
        )
    })?;
    let mut st = nix::sys::stat::fstat(src.as_raw_fd())?;
    // a writable path the container's root could not write is none: a directory whose owner the
    // container's mapping lacks (Podman's API makes a missing workdir as host root) becomes its root's
    // (with rloxsc's own mapping, `ids` already gives an unmapped owner to the container's root)
    if ids.uids.is_empty() && !mapping.uids.is_empty() {
        if !mapping.maps_host_uid(st.st_uid) {
            st.st_uid = mapping.uid(0);
        }
        if !mapping.maps_host_gid(st.st_gid) {
            st.st_gid = mapping.gid(0);
        }
    }
    set_attrs(dst.as_raw_fd(), &st, ids)
        .with_context(|| format!("cannot set the owner of {}", tmpfs.display()))?;
    if c.skipped > 0 {
        tracing::info!(
            "{}: {} special files of the image not copied into the writable tmpfs",
            path.display(),
            c.skipped
        );
    }
    Ok(true)
}

/// Whether the caller's rootfs is a writable mount of its own (a client's per-container snapshot:
/// Docker's, Podman's, containerd's), where the client's copy API looks.
pub fn rootfs_is_own_mount(rootfs: &Path) -> bool {
    let Ok(c) = CString::new(rootfs.as_os_str().as_bytes()) else {
        return false;
    };
    let mount_root = crate::fsutil::statx_attributes(&c, libc::AT_SYMLINK_NOFOLLOW)
        .is_some_and(|(attrs, _)| attrs & (libc::STATX_ATTR_MOUNT_ROOT as u64) != 0);
    let writable = nix::sys::statvfs::statvfs(rootfs)
        .is_ok_and(|v| !v.flags().contains(nix::sys::statvfs::FsFlags::ST_RDONLY));
    mount_root && writable
}

/// The mount source name of container view token `token`'s writable tmpfs.
pub fn source_name(token: &OsStr) -> String {
    format!("rloxsc-{}", token.to_string_lossy())
}

/// Mount points of mounts (in this mount namespace) whose source is `source`, from
/// `/proc/self/mountinfo`, deepest first.
pub fn mounts_with_source(source: &str) -> Vec<PathBuf> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let mut out: Vec<PathBuf> = text
        .lines()
        .filter_map(|l| {
            let (left, right) = l.split_once(" - ")?;
            let point = left.split(' ').nth(4)?;
            let src = right.split(' ').nth(1)?;
            (src == source).then(|| PathBuf::from(unescape(point)))
        })
        .collect();
    out.sort_by_key(|p| std::cmp::Reverse(p.components().count()));
    out
}

/// Mount points of any container's host-side writable views below `rootfs`.
pub fn views_below(rootfs: &Path) -> Vec<PathBuf> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let (left, right) = l.split_once(" - ")?;
            let point = PathBuf::from(unescape(left.split(' ').nth(4)?));
            let src = right.split(' ').nth(1)?;
            (src.starts_with("rloxsc-") && point.starts_with(rootfs) && point != rootfs)
                .then_some(point)
        })
        .collect()
}

/// mountinfo's octal escapes (`\040` for a space) undone.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 4 <= b.len() {
            let digits = std::str::from_utf8(&b[i + 1..i + 4]).unwrap_or("x");
            if let Ok(v) = u8::from_str_radix(digits, 8) {
                out.push(v);
                i += 4;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Detaches every host-side writable view of container view token `token` (found by source name).
/// What the container left in each is first written back to the directory below it, in the
/// client's rootfs (its writable layer), as runc would have left it there: `docker cp` out of an
/// exited container finds its results. Unchanged files are not rewritten.
pub fn detach_views(token: &OsStr) {
    for p in mounts_with_source(&source_name(token)) {
        if p.starts_with(crate::views::VIEWS_DIR) {
            continue;
        }
        // the view (idmapped with the inverse mapping: it shows the container's ids), held open
        let view = open_dir_nofollow(&p);
        if let Err(e) = nix::mount::umount2(
            &p,
            nix::mount::MntFlags::MNT_DETACH | nix::mount::MntFlags::UMOUNT_NOFOLLOW,
        ) {
            tracing::warn!("cannot detach the writable view at {}: {e}", p.display());
            continue;
        }
        let below = open_dir_nofollow(&p);
        match (view, below) {
            (Ok(v), Ok(b)) => {
                let ids = IdMap::default();
                let mut c = Copy {
                    ids: &ids,
                    entries: 0,
                    skipped: 0,
                    merge: true,
                };
                if let Err(e) = c.dir(&v, &b, 0) {
                    tracing::warn!(
                        "cannot write the container's {} back to its rootfs: {e}",
                        p.display()
                    );
                }
            }
            (Err(e), _) | (_, Err(e)) => {
                tracing::warn!("cannot write {} back to the rootfs: {e}", p.display())
            }
        }
    }
}

fn open_dir_nofollow(p: &Path) -> std::io::Result<OwnedFd> {
    openat2(
        libc::AT_FDCWD,
        p,
        libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW,
        0,
    )
}

/// Attaches a clone of the writable tmpfs at `tmpfs` (a host-side view), idmapped with `inverse`
/// when given (`None`: the caller's own mapping, whose rootfs holds host ids as they are),
/// at `path` inside the caller's `rootfs`, creating the directory when the image lacks it. Never
/// follows a symlink of the image: `None` (nothing attached) when one is on the way.
pub fn attach_host_view(
    rootfs: &Path,
    path: &Path,
    tmpfs: &Path,
    inverse: Option<&OwnedFd>,
) -> Result<Option<PathBuf>> {
    let root = open_dir(rootfs)?;
    let mut dir = root;
    for c in path.components() {
        let std::path::Component::Normal(n) = c else {
            continue;
        };
        let name = CString::new(n.as_bytes())?;
        let flags = libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW;
        let next = match openat(dir.as_raw_fd(), &name, flags, 0) {
            Ok(fd) => fd,
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {
                // SAFETY: mkdirat on a valid dirfd with a NUL-terminated name
                check(unsafe { libc::mkdirat(dir.as_raw_fd(), name.as_ptr(), 0o755) })
                    .with_context(|| format!("cannot create {} in the rootfs", path.display()))?;
                openat(dir.as_raw_fd(), &name, flags, 0)?
            }
            // a symlink (ELOOP) or a file (ENOTDIR) of the image: no host-side view
            Err(e) if matches!(e.raw_os_error(), Some(libc::ELOOP | libc::ENOTDIR)) => {
                return Ok(None)
            }
            Err(e) => return Err(e).with_context(|| format!("cannot open {}", path.display())),
        };
        dir = next;
    }
    let clone = crate::views::clone_tree(tmpfs, false)?;
    if let Some(inverse) = inverse {
        crate::views::idmap(&clone, inverse, false)
            .with_context(|| format!("cannot idmap the host-side view of {}", path.display()))?;
    }
    crate::views::attach_to_fd(&clone, &dir)?;
    Ok(Some(rootfs.join(path.strip_prefix("/").unwrap_or(path))))
}
