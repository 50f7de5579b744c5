//! Every container's root is an unprivileged host uid: each container gets a user namespace whose
//! ids map onto a block of 65536 host ids of its own, taken from a pool (the policy's
//! `userns.pool`), so containers share no per-user kernel limit (inotify, pipe buffers, RLIMIT_NPROC
//! counts) with each other or with the host's root, and a file a container can write as "root" is
//! a file host root would let that unprivileged uid write.
//!
//! Blocks are allocated under a lock in [`ALLOC_DIR`] (one file per block naming its owner: the
//! state root and the container id), recorded in the container's state, and freed at delete; a block
//! whose owner's state is gone (a runtime killed halfway) is taken back by the next allocation that
//! meets it. The lock is held only while a block is picked, so concurrent creates do not wait on
//! each other's create.

use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::policy::keys;
pub use crate::policy::{Pool, BLOCK};

/// Where allocations are recorded (one file per block, and the lock).
pub const ALLOC_DIR: &str = "/run/rloxsc-userns";

/// A container's id mapping: container ids `0..BLOCK` are host ids `base..base+BLOCK`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Allocation {
    /// The first host id.
    pub base: u32,
}

impl Allocation {
    /// The host uid the container's root runs as.
    pub fn root_uid(&self) -> u32 {
        self.base
    }

    fn file(&self) -> PathBuf {
        Path::new(ALLOC_DIR).join(format!("{}", self.base))
    }
}

/// Who owns a block: enough to tell whether the owner still exists.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Owner {
    root: PathBuf,
    id: String,
}

impl Owner {
    fn of(root: &Path, id: &str) -> Owner {
        Owner {
            root: crate::fsutil::canonical_state_root(root),
            id: id.to_string(),
        }
    }

    fn is_alive(&self) -> bool {
        self.root.join("bundles").join(&self.id).exists()
            || self.root.join("containers").join(&self.id).exists()
    }

    fn same(&self, other: &Owner) -> bool {
        self.root == other.root && self.id == other.id
    }
}

/// The owners an allocation file names: one container, or (a pod's containers sharing the
/// sandbox's user namespace) several.
fn read_owners(path: &Path) -> Option<Vec<Owner>> {
    let text = crate::fsutil::read_small(path).ok()?;
    serde_json::from_slice::<Vec<Owner>>(&text)
        .or_else(|_| serde_json::from_slice::<Owner>(&text).map(|o| vec![o]))
        .ok()
}

fn write_owners(path: &Path, owners: &[Owner]) -> Result<()> {
    crate::fsutil::replace_file(
        path,
        &serde_json::to_vec(owners)?,
        0o600,
        "user-namespace allocation",
    )
}

/// The allocation lock, held while the file is open.
struct Lock(#[allow(dead_code)] std::fs::File);

impl Lock {
    fn take() -> Result<Lock> {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(ALLOC_DIR)
            .with_context(|| format!("cannot create {ALLOC_DIR} (policy key {})", keys::USERNS))?;
        crate::trust::require_root_only(
            Path::new(ALLOC_DIR),
            "user-namespace allocation directory",
        )?;
        let f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(Path::new(ALLOC_DIR).join(".lock"))?;
        // SAFETY: flock on an fd we own; released when it is closed
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } != 0 {
            bail!(
                "cannot lock {ALLOC_DIR}: {}",
                std::io::Error::last_os_error()
            );
        }
        Ok(Lock(f))
    }
}

/// Allocates a block for container `id` under state root `root`.
pub fn allocate(pool: &Pool, root: &Path, id: &str) -> Result<Allocation> {
    let owner = Owner::of(root, id);
    let data = serde_json::to_vec(&[&owner])?;
    let _lock = Lock::take()?;
    // start where the id hashes to, so concurrent runtimes rarely probe the same blocks
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in owner
        .root
        .as_os_str()
        .as_encoded_bytes()
        .iter()
        .chain(id.as_bytes())
    {
        h = (h ^ *b as u64).wrapping_mul(0x100_0000_01b3);
    }
    let first = (h % pool.blocks as u64) as u32;
    for i in 0..pool.blocks {
        let block = (first + i) % pool.blocks;
        let a = Allocation {
            base: pool.start + block * BLOCK,
        };
        let f = a.file();
        if f.exists() {
            let stale = read_owners(&f).is_none_or(|os| !os.iter().any(Owner::is_alive));
            if !stale {
                continue;
            }
            let _ = std::fs::remove_file(&f);
        }
        crate::fsutil::write_new(&f, &data, 0o600)?;
        return Ok(a);
    }
    bail!(
        "no free user-namespace block: all {} blocks of the pool are in use (policy key {})",
        pool.blocks,
        keys::USERNS
    )
}

/// Makes container `id` under state root `root` one more owner of the block starting at host id
/// `base` (a pod's container that joins the sandbox's user namespace): the block stays allocated
/// until its last owner is gone. `None` when no such block is allocated (the user namespace is not
/// one of rloxsc's blocks).
pub fn share(base: u32, root: &Path, id: &str) -> Result<Option<Allocation>> {
    let a = Allocation { base };
    let _lock = Lock::take()?;
    let Some(mut owners) = read_owners(&a.file()) else {
        return Ok(None);
    };
    let me = Owner::of(root, id);
    if !owners.iter().any(|o| o.same(&me)) {
        owners.push(me);
        write_owners(&a.file(), &owners)?;
    }
    Ok(Some(a))
}

/// Container `id` under state root `root` gives up its ownership of block `a`; the block is free
/// once no owner is left (absent is fine).
pub fn free(a: &Allocation, root: &Path, id: &str) {
    let Ok(_lock) = Lock::take() else { return };
    release(&a.file(), &Owner::of(root, id));
}

/// Removes `me` from the owners in `file`; removes the file when none is left.
fn release(file: &Path, me: &Owner) {
    let Some(mut owners) = read_owners(file) else {
        let _ = std::fs::remove_file(file);
        return;
    };
    owners.retain(|o| !o.same(me));
    if owners.is_empty() {
        let _ = std::fs::remove_file(file);
    } else {
        let _ = write_owners(file, &owners);
    }
}

/// Gives up whatever block container `id` under state root `root` owns, by reading the owner
/// files (for a create killed before its record named the block; the usual path is [`free`]).
pub fn free_owned_by(root: &Path, id: &str) {
    let me = Owner::of(root, id);
    let Ok(_lock) = Lock::take() else { return };
    let Ok(rd) = std::fs::read_dir(ALLOC_DIR) else {
        return;
    };
    for e in rd.flatten() {
        if e.file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
            .is_none()
        {
            continue;
        }
        if read_owners(&e.path()).is_some_and(|os| os.iter().any(|o| o.same(&me))) {
            release(&e.path(), &me);
        }
    }
}

/// The host id ranges (first, length) blocks are allocated to, other than `except`'s.
pub fn allocated_ranges(except: Option<&Allocation>) -> Vec<(u64, u64)> {
    let Ok(rd) = std::fs::read_dir(ALLOC_DIR) else {
        return vec![];
    };
    rd.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|b| except.is_none_or(|a| a.base != *b))
        .map(|b| (b as u64, BLOCK as u64))
        .collect()
}

/// A user namespace with `uid_map`/`gid_map` lines as given (`"0 BASE 65536"`), kept alive by the
/// returned fd (for idmapped mounts: `MOUNT_ATTR_IDMAP` takes a user namespace fd).
///
/// The namespace is held by a child cloned straight into it ([`crate::vmchild`]: it shares this
/// process's memory, copies nothing, and runs nothing but raw system calls until it is killed).
pub fn namespace_fd(uid_map: &str, gid_map: &str) -> Result<OwnedFd> {
    use crate::vmchild::{clone_vm, sys_int, ChildStack};
    extern "C" fn hold(parent: *mut libc::c_void) -> libc::c_int {
        // a runtime killed now must not leave this holder behind
        let (opt, sig) = (libc::PR_SET_PDEATHSIG as usize, libc::SIGKILL as usize);
        sys_int(libc::SYS_prctl, [opt, sig, 0, 0, 0, 0]);
        if sys_int(libc::SYS_getppid, [0; 6]) != parent as isize {
            sys_int(libc::SYS_exit, [1, 0, 0, 0, 0, 0]);
        }
        loop {
            sys_int(libc::SYS_pause, [0; 6]);
        }
    }
    let stack = ChildStack::new().context("cannot map a stack for the user-namespace holder")?;
    let parent = nix::unistd::getpid().as_raw() as usize;
    // SAFETY: `hold` makes raw system calls only and reads nothing but its argument; `stack` is
    // never unmapped (leaked once the child is killed below)
    let child = unsafe {
        clone_vm(
            hold,
            parent as *mut libc::c_void,
            libc::CLONE_NEWUSER,
            &stack,
        )
    };
    let child = match child {
        Ok(pid) => pid,
        Err(e) => bail!(
            "cannot create a user namespace: {e} (user.max_user_namespaces, or an LSM, forbids it; policy key {})",
            keys::USERNS
        ),
    };
    let res = (|| -> Result<OwnedFd> {
        std::fs::write(format!("/proc/{child}/uid_map"), uid_map)
            .context("cannot write a uid_map")?;
        std::fs::write(format!("/proc/{child}/gid_map"), gid_map)
            .context("cannot write a gid_map")?;
        let f = std::fs::File::open(format!("/proc/{child}/ns/user"))
            .context("cannot open the user namespace")?;
        Ok(OwnedFd::from(f))
    })();
    let _ = nix::sys::signal::kill(child, nix::sys::signal::Signal::SIGKILL);
    // reaped later ([`reap_holders`]), off create's path: the holder's exit took up to 2 ms to be
    // waited for; its stack stays mapped until this process ends (it may still be on it now)
    stack.leak();
    KILLED_HOLDERS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(child);
    res
}

/// User-namespace holders killed and not reaped yet.
static KILLED_HOLDERS: std::sync::Mutex<Vec<nix::unistd::Pid>> = std::sync::Mutex::new(Vec::new());

/// Reaps the user-namespace holders [`namespace_fd`] killed (each got SIGKILL: the wait is short,
/// and by the end of a create they are long gone).
pub fn reap_holders() {
    let killed = std::mem::take(&mut *KILLED_HOLDERS.lock().unwrap_or_else(|e| e.into_inner()));
    for pid in killed {
        let _ = nix::sys::wait::waitpid(pid, None);
    }
}

/// Whether this host can give containers user namespaces and idmapped mounts: creates a user
/// namespace and idmaps a clone of the root filesystem's mount (ext4, xfs, btrfs: Linux 5.12+).
/// `Err` names what is missing.
pub fn probe() -> Result<()> {
    let ns = namespace_fd("0 1073741824 1\n", "0 1073741824 1\n")?;
    let root = crate::mountapi::clone_path(Path::new("/"), false)
        .context("cannot clone the root mount")?;
    crate::mountapi::idmap(&root, &ns, false)
        .map_err(|e| anyhow!("idmapped mounts of the root filesystem: {e} (Linux 5.12+)"))?;
    Ok(())
}

/// Whether this kernel idmaps a tmpfs (6.3+; the host-side views of the writable paths are idmapped
/// tmpfs): a fresh, detached 4 KiB tmpfs is idmapped and dropped, nothing attached anywhere.
pub fn probe_tmpfs() -> Result<()> {
    let ns = namespace_fd("0 1073741824 1\n", "0 1073741824 1\n")?;
    let tmp = crate::mountapi::tmpfs(&[("size".to_string(), "4k".to_string())], 0)
        .context("cannot make a tmpfs")?;
    crate::mountapi::idmap(&tmp, &ns, false)
        .map_err(|e| anyhow!("idmapped tmpfs mounts: {e} (Linux 6.3+)"))?;
    Ok(())
}

/// The user namespace fd of a [`namespace_fd`] for a whole block.
pub fn block_namespace(a: &Allocation) -> Result<OwnedFd> {
    let map = format!("0 {} {}\n", a.base, BLOCK);
    namespace_fd(&map, &map)
}
