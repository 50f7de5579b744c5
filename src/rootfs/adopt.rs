//! Files a client writes into the container from the host (Docker's `docker cp` into a running
//! container, through the container's root overlay attached on the client's rootfs) belong to the
//! ids the client gave them: host root's, which the container's user namespace does not map. Under
//! runc those ids *are* the container's. Before `start` and every `exec`, rloxsc gives each such
//! entry of the store to the container's id of the same number (host id `h < 65536` the container's
//! mapping lacks becomes the container's host id for `h`), so what the next process of the container
//! reads there is its own. (Store paths on Linux 6.3+ need none of this: the client's view of them is
//! idmapped.)
//!
//! The root overlay's upper layer is changed *through the overlay* (the client's view of it): an
//! overlay keeps the owner of each file it has looked up, so a change behind its back would not be
//! seen by the container. A store path is a plain tmpfs the container mounts itself: changed directly.
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
    walk_through(&top, &top, mapping, &mut out, 0)?;
    Ok(out)
}

/// Gives every entry of the overlay upper layer `upper` owned by an id the container's `mapping`
/// lacks to the container's id of the same number, changing it through `view` (the overlay itself,
/// attached on the client's rootfs): found in the upper layer, changed by the same path in the view.
pub fn adopt_through(upper: &Path, view: &Path, mapping: &IdMap) -> Result<Adopted> {
    let open = |p: &Path| {
        tree::open_dir_at(
            libc::AT_FDCWD,
            &std::ffi::CString::new(p.as_os_str().as_encoded_bytes())?,
        )
        .with_context(|| format!("cannot open {}", p.display()))
    };
    let (u, v) = (open(upper)?, open(view)?);
    let mut out = Adopted::default();
    walk_through(&u, &v, mapping, &mut out, 0)?;
    Ok(out)
}

/// Gives each entry under `upper` that the container's mapping lacks to the container's id of the
/// same number, changing it by name in `view`'s matching directory (the same directory, for a
/// store path; the overlay's, for its upper layer).
fn walk_through(
    upper: &std::os::fd::OwnedFd,
    view: &std::os::fd::OwnedFd,
    mapping: &IdMap,
    out: &mut Adopted,
    depth: usize,
) -> Result<()> {
    if depth > tree::MAX_DEPTH {
        return Ok(());
    }
    for name in tree::names_in(upper)? {
        let Ok(st) = tree::lstat_at(upper.as_raw_fd(), &name) else {
            continue;
        };
        let k = tree::kind(&st);
        if k == Kind::Whiteout {
            continue;
        }
        if let Some((u, g)) = own(mapping, st.st_uid, st.st_gid) {
            // SAFETY: fchownat by name in the view's directory fd, never following a symlink
            let rc = unsafe {
                libc::fchownat(
                    view.as_raw_fd(),
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
            if let (Ok(du), Ok(dv)) = (
                tree::open_dir_at(upper.as_raw_fd(), &name),
                tree::open_dir_at(view.as_raw_fd(), &name),
            ) {
                walk_through(&du, &dv, mapping, out, depth + 1)?;
            }
        }
    }
    Ok(())
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
