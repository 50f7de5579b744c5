//! Files a client writes into the container from the host (Docker's `docker cp` into a running
//! container, through the container's root overlay attached on the client's rootfs) belong to the
//! ids the client gave them: host root's, which the container's user namespace does not map. Under
//! runc those ids *are* the container's. Before `start` and every `exec`, rloxsc gives each such
//! entry of the store to the container's id of the same number (host id `h < 65536` the container's
//! mapping lacks becomes the container's host id for `h`), so what the next process of the container
//! reads there is its own. (Store paths on Linux 6.3+ need none of this: the client's view of them is
//! idmapped.)
//!
//! Only ids the container's mapping lacks are changed: the container itself can create nothing with
//! such an owner, so an entry it planted is never touched. Entries are changed by name relative to
//! their directory's fd, never through a symlink. Linear in the store's entries.

use std::os::fd::AsRawFd;
use std::path::Path;

use anyhow::{Context, Result};

use super::tree::{self, Kind};
use crate::idmap::IdMap;

/// Entries given to the container so far.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Adopted {
    /// How many.
    pub entries: u64,
}

/// Gives every entry below `dir` (a directory of the store) owned by an id the container's
/// `mapping` lacks to the container's id of the same number.
pub fn adopt(dir: &Path, mapping: &IdMap) -> Result<Adopted> {
    let top = tree::open_dir_at(
        libc::AT_FDCWD,
        &std::ffi::CString::new(dir.as_os_str().as_encoded_bytes())?,
    )
    .with_context(|| format!("cannot open {}", dir.display()))?;
    let mut out = Adopted::default();
    walk(&top, mapping, &mut out, 0)?;
    Ok(out)
}

fn own(mapping: &IdMap, uid: u32, gid: u32) -> Option<(u32, u32)> {
    let u = match mapping.container_uid(uid) {
        Some(_) => uid,
        None => mapping.host_uid(uid)?,
    };
    let g = match mapping.container_gid(gid) {
        Some(_) => gid,
        None => mapping.host_gid(gid)?,
    };
    ((u, g) != (uid, gid)).then_some((u, g))
}

fn walk(
    dir: &std::os::fd::OwnedFd,
    mapping: &IdMap,
    out: &mut Adopted,
    depth: usize,
) -> Result<()> {
    if depth > tree::MAX_DEPTH {
        return Ok(());
    }
    for name in tree::names_in(dir)? {
        let Ok(st) = tree::lstat_at(dir.as_raw_fd(), &name) else {
            continue;
        };
        let k = tree::kind(&st);
        if k == Kind::Whiteout {
            continue;
        }
        if let Some((u, g)) = own(mapping, st.st_uid, st.st_gid) {
            // SAFETY: fchownat by name in our directory fd, never following a symlink
            let rc = unsafe {
                libc::fchownat(
                    dir.as_raw_fd(),
                    name.as_ptr(),
                    u,
                    g,
                    libc::AT_SYMLINK_NOFOLLOW,
                )
            };
            if rc == 0 {
                out.entries += 1;
            }
        }
        if k == Kind::Dir {
            if let Ok(d) = tree::open_dir_at(dir.as_raw_fd(), &name) {
                walk(&d, mapping, out, depth + 1)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const B: u32 = 1 << 30;

    #[test]
    fn only_ids_the_container_lacks_are_given_to_it() {
        let m = IdMap::block(B, 65536);
        assert_eq!(own(&m, 0, 0), Some((B, B)));
        assert_eq!(own(&m, 1000, 0), Some((B + 1000, B)));
        assert_eq!(own(&m, B + 3, B + 3), None, "the container's own");
        assert_eq!(
            own(&m, 70000, 70000),
            None,
            "no container id of that number"
        );
        assert_eq!(own(&m, B, 0), Some((B, B)));
    }
}
