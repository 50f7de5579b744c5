//! At delete, on a client's rootfs: what the container's store holds is written into the client's own
//! layer, as runc would have left it there (the container wrote its rootfs), so `docker cp` out of an
//! exited container, `docker commit` and Podman's copy find it.
//!
//! - The root overlay's upper layer is in overlayfs's format already (a whiteout for a file the
//!   container removed, an opaque directory for one it replaced): into a client's overlay upper it is
//!   written as such; into a plain directory (a rootfs that is a mount of its own but no overlay) a
//!   whiteout removes the entry.
//! - A store path replaces the client's directory there: an opaque directory holding exactly the
//!   store's content.
//!
//! Only what the container (or the client through its view) wrote is written: never the image.
//! Holes stay holes, hard links stay links, set-id bits are dropped, owners are translated from the
//! container's host ids back to its own ids (the ids a client's storage keeps). Linear in the store's
//! entries, bounded by its size and inodes, and by a deadline; every directory opened by fd without
//! following what the container put there.

use std::ffi::CStr;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{anyhow, Context, Result};
use serde::{Deserialize, Serialize};

use super::tree::{self, Budget, Kind, Links, Stop};

/// Where the container's writes go.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Target {
    /// The client's overlay upper layer (written in overlayfs's format).
    Overlay {
        /// Its directory.
        upper: PathBuf,
    },
    /// The rootfs directory itself.
    Plain {
        /// The rootfs.
        dir: PathBuf,
    },
}

/// How owners are written: host ids in `[base, base+len)` become `id - base`; others stay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Translate {
    /// The container's first host id.
    pub base: u32,
    /// How many.
    pub len: u32,
}

impl Translate {
    fn id(&self, h: u32) -> u32 {
        if h >= self.base && h - self.base < self.len {
            h - self.base
        } else {
            h
        }
    }

    fn owner(t: Option<Translate>, st: &libc::stat) -> (u32, u32) {
        match t {
            Some(t) => (t.id(st.st_uid), t.id(st.st_gid)),
            None => (st.st_uid, st.st_gid),
        }
    }
}

/// A pending write-back: recorded in the container's footprint at create, done at delete.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Commit {
    /// The store (its `upper` and `paths/<n>`).
    pub store: PathBuf,
    /// The client's rootfs (its own view, once the container's is detached: attributes of the
    /// directories above a store path come from there).
    pub rootfs: PathBuf,
    /// Where the writes go.
    pub target: Target,
    /// Owner translation (`None`: the caller's own mapping, whose storage keeps host ids).
    pub translate: Option<Translate>,
    /// The store paths: where they are inside the container and their directory in the store.
    pub paths: Vec<(PathBuf, PathBuf)>,
    /// Most entries and bytes to write (the store's inodes and size).
    pub max_entries: u64,
    /// Most bytes.
    pub max_bytes: u64,
}

const OPAQUE: &CStr = c"trusted.overlay.opaque";

fn is_opaque(dir: &OwnedFd) -> bool {
    let mut b = [0u8; 4];
    // SAFETY: fgetxattr into our buffer of the size given
    let n = unsafe {
        libc::fgetxattr(
            dir.as_raw_fd(),
            OPAQUE.as_ptr(),
            b.as_mut_ptr().cast(),
            b.len(),
        )
    };
    n == 1 && b[0] == b'y'
}

fn set_opaque(dir: &OwnedFd) -> std::io::Result<()> {
    // SAFETY: fsetxattr with a NUL-terminated name and a one-byte value
    tree::check(unsafe {
        libc::fsetxattr(dir.as_raw_fd(), OPAQUE.as_ptr(), c"y".as_ptr().cast(), 1, 0)
    })
}

fn whiteout(dir: RawFd, name: &CStr) -> std::io::Result<()> {
    // SAFETY: mknodat of a 0:0 character device (overlayfs's whiteout) with a NUL-terminated name
    tree::check(unsafe { libc::mknodat(dir, name.as_ptr(), libc::S_IFCHR, 0) })
}

/// Empties the directory open at `dir`.
fn empty(dir: &OwnedFd) -> std::io::Result<()> {
    for n in tree::names_in(dir)? {
        tree::remove_entry(dir.as_raw_fd(), &n, 0, &mut 0)?;
    }
    Ok(())
}

struct Writer {
    overlay: bool,
    translate: Option<Translate>,
    budget: Budget,
    links: Links,
}

impl Writer {
    fn dir(&mut self, src: &OwnedFd, dst: &OwnedFd, depth: usize) -> Result<(), Stop> {
        if depth > tree::MAX_DEPTH {
            return Err(Stop::Depth);
        }
        for name in tree::names_in(src)? {
            self.budget.entry()?;
            let st = tree::lstat_at(src.as_raw_fd(), &name)?;
            let existing = tree::lstat_at(dst.as_raw_fd(), &name).ok();
            match tree::kind(&st) {
                Kind::Whiteout => {
                    tree::remove_entry(dst.as_raw_fd(), &name, 0, &mut 0)?;
                    if self.overlay {
                        whiteout(dst.as_raw_fd(), &name)?;
                    }
                }
                Kind::Dir => {
                    let from = tree::open_dir_at(src.as_raw_fd(), &name)?;
                    let replaced_whiteout = existing
                        .as_ref()
                        .is_some_and(|e| tree::kind(e) == Kind::Whiteout);
                    let keep = existing
                        .as_ref()
                        .is_some_and(|e| tree::kind(e) == Kind::Dir);
                    if !keep {
                        if existing.is_some() {
                            tree::remove_entry(dst.as_raw_fd(), &name, 0, &mut 0)?;
                        }
                        // SAFETY: mkdirat on a valid dirfd with a NUL-terminated name
                        tree::check(unsafe {
                            libc::mkdirat(dst.as_raw_fd(), name.as_ptr(), 0o700)
                        })?;
                    }
                    let to = tree::open_dir_at(dst.as_raw_fd(), &name)?;
                    // a directory the container replaced (or made where one was removed) hides
                    // what the layers below have there
                    let opaque = is_opaque(&from) || replaced_whiteout;
                    if opaque && keep {
                        empty(&to)?;
                    }
                    if opaque && self.overlay {
                        set_opaque(&to)?;
                    }
                    self.dir(&from, &to, depth + 1)?;
                    tree::set_attrs(to.as_raw_fd(), &st, Translate::owner(self.translate, &st))?;
                }
                _ => {
                    let owner = Translate::owner(self.translate, &st);
                    tree::copy_entry(
                        src,
                        dst,
                        &name,
                        &st,
                        &mut self.budget,
                        &mut self.links,
                        depth,
                        owner,
                    )?;
                }
            }
        }
        Ok(())
    }
}

fn open(p: &Path) -> std::io::Result<OwnedFd> {
    crate::fsutil::openat2(
        libc::AT_FDCWD,
        p,
        libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW,
        0,
    )
}

/// Opens (creating where missing) directory `dest` below the target `top`, each missing directory
/// shaped like the client's own view of it (`rootfs`), never through a symlink.
fn target_dir(top: &OwnedFd, rootfs: &Path, dest: &Path) -> Result<OwnedFd> {
    let mut cur = nix::unistd::dup(top.as_raw_fd()).map(|fd| {
        // SAFETY: dup returned a new fd that nothing else owns
        unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) }
    })?;
    let mut seen = PathBuf::from("/");
    for c in dest.components() {
        let std::path::Component::Normal(n) = c else {
            continue;
        };
        seen.push(n);
        let name = std::ffi::CString::new(n.as_encoded_bytes())?;
        match tree::lstat_at(cur.as_raw_fd(), &name) {
            Ok(st) if tree::kind(&st) == Kind::Dir => {}
            other => {
                if other.is_ok() {
                    tree::remove_entry(cur.as_raw_fd(), &name, 0, &mut 0)?;
                }
                // SAFETY: mkdirat on a valid dirfd with a NUL-terminated name
                tree::check(unsafe { libc::mkdirat(cur.as_raw_fd(), name.as_ptr(), 0o755) })?;
                // as the client sees it (its own overlay, or the plain rootfs)
                if let Ok(md) = std::fs::symlink_metadata(rootfs.join(seen.strip_prefix("/")?)) {
                    use std::os::unix::fs::MetadataExt;
                    // SAFETY: fchownat/fchmodat of the directory just made, not following
                    unsafe {
                        tree::check(libc::fchownat(
                            cur.as_raw_fd(),
                            name.as_ptr(),
                            md.uid(),
                            md.gid(),
                            libc::AT_SYMLINK_NOFOLLOW,
                        ))?;
                        tree::check(libc::fchmodat(
                            cur.as_raw_fd(),
                            name.as_ptr(),
                            md.mode() & 0o1777,
                            0,
                        ))?;
                    }
                }
            }
        }
        cur = tree::open_dir_at(cur.as_raw_fd(), &name)?;
    }
    Ok(cur)
}

/// What a commit wrote.
#[derive(Debug, Default)]
pub struct Written {
    /// Entries.
    pub entries: u64,
    /// Data bytes.
    pub bytes: u64,
}

/// Writes the store of `c` into its target; stops at `deadline`.
pub fn run(c: &Commit, deadline: Option<Instant>) -> Result<Written> {
    let (top, overlay) = match &c.target {
        Target::Overlay { upper } => (upper.clone(), true),
        Target::Plain { dir } => (dir.clone(), false),
    };
    let dst = open(&top).with_context(|| format!("cannot open {}", top.display()))?;
    let mut w = Writer {
        overlay,
        translate: c.translate,
        budget: Budget::new(tree::Bounds {
            entries: c.max_entries,
            bytes: c.max_bytes,
            deadline,
        }),
        links: Links::default(),
    };
    let what = |e: Stop| {
        anyhow!(
            "cannot write the container's files back into {}: {e} (policy key {})",
            top.display(),
            crate::policy::keys::WRITABLE
        )
    };
    let upper = open(&c.store.join("upper"))
        .with_context(|| format!("cannot open the container's store {}", c.store.display()))?;
    w.dir(&upper, &dst, 0).map_err(what)?;
    for (dest, dir) in &c.paths {
        let from = open(dir).with_context(|| format!("cannot open {}", dir.display()))?;
        let to = target_dir(&dst, &c.rootfs, dest)?;
        empty(&to).map_err(|e| what(Stop::Io(e)))?;
        if overlay {
            set_opaque(&to).map_err(|e| what(Stop::Io(e)))?;
        }
        w.dir(&from, &to, 0).map_err(what)?;
        let st = tree::stat_fd(from.as_raw_fd())?;
        tree::set_attrs(to.as_raw_fd(), &st, Translate::owner(c.translate, &st))?;
    }
    Ok(Written {
        entries: w.budget.entries,
        bytes: w.budget.bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn owners_come_back_to_the_containers_ids() {
        let t = Some(Translate {
            base: 1 << 30,
            len: 65536,
        });
        // SAFETY: an all-zero stat is a valid value
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        st.st_uid = (1 << 30) + 1000;
        st.st_gid = 0; // written by the client as root: kept
        assert_eq!(Translate::owner(t, &st), (1000, 0));
        assert_eq!(Translate::owner(None, &st), ((1 << 30) + 1000, 0));
    }

    // Needs root (whiteouts are device nodes, opaque marks trusted xattrs): a plain-directory target
    // of a store holding a new file, a removed file, a replaced directory.
    #[test]
    fn a_store_is_written_into_a_plain_rootfs_as_its_writes() {
        if !nix::unistd::geteuid().is_root() {
            eprintln!("SKIPPED: needs root");
            return;
        }
        let base = std::env::temp_dir().join(format!("rloxsc-commit-{}", std::process::id()));
        let store = base.join("store");
        let root = base.join("rootfs");
        std::fs::create_dir_all(store.join("upper/d")).unwrap();
        std::fs::create_dir_all(root.join("d/old")).unwrap();
        std::fs::write(root.join("gone"), b"x").unwrap();
        std::fs::write(root.join("d/old/f"), b"x").unwrap();
        std::fs::write(store.join("upper/new"), b"hello").unwrap();
        std::os::unix::fs::chown(store.join("upper/new"), Some((1 << 30) + 5), Some(1 << 30))
            .unwrap();
        nix::sys::stat::mknod(
            &store.join("upper/gone"),
            nix::sys::stat::SFlag::S_IFCHR,
            nix::sys::stat::Mode::empty(),
            0,
        )
        .unwrap();
        xattr_set(&store.join("upper/d"));
        std::fs::write(store.join("upper/d/fresh"), b"y").unwrap();
        let c = Commit {
            store: store.clone(),
            rootfs: root.clone(),
            target: Target::Plain { dir: root.clone() },
            translate: Some(Translate {
                base: 1 << 30,
                len: 65536,
            }),
            paths: vec![],
            max_entries: 100,
            max_bytes: 1 << 20,
        };
        run(&c, None).unwrap();
        assert_eq!(std::fs::read(root.join("new")).unwrap(), b"hello");
        assert_eq!(std::fs::metadata(root.join("new")).unwrap().uid(), 5);
        assert!(!root.join("gone").exists());
        assert!(
            !root.join("d/old").exists(),
            "an opaque directory keeps nothing of below"
        );
        assert!(root.join("d/fresh").exists());
        std::fs::remove_dir_all(&base).unwrap();
    }

    fn xattr_set(p: &Path) {
        let d = open(p).unwrap();
        set_opaque(&d).unwrap();
    }
}
