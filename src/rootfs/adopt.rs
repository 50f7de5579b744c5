//! Files a client writes into the container from the host (Docker's `docker cp` into a running
//! container, through the container's root overlay attached on the client's rootfs; Podman 4.3's
//! copy into a running container, through its windows) are written as host root, whom the
//! container's user namespace does not map. The client's layer is idmapped with the host's writers
//! ([`IdMap::with_host_writers`]): host id `h` lands there as disk id `65536+h`. Under runc those
//! files *are* the container's. Before `start` and every `exec`, rloxsc gives each such entry of
//! the client's layer to the container's id of the same number (disk id `h`, the id the client
//! meant), so what the next process of the container reads there is its own.
//!
//! The entries are found in the client's upper layer (the clone kept from create: never reopened
//! by a path) and changed *through the overlay* (the client's view of it): an overlay keeps the
//! owner of each file it has looked up, so a change behind its back would not be seen by the
//! container. Under a direct path (a directory of the client's layer the container has itself,
//! no overlay between) the client's view is that directory with the ids as stored, and the entry
//! is changed there to the id the client meant.
//!
//! Only disk ids in the host writers' range are changed: the container itself can create nothing
//! with such an owner, so an entry it planted is never touched. Entries are changed by name
//! relative to their directory's fd, never through a symlink. Linear in the layer's entries.

use std::os::fd::{AsRawFd, OwnedFd};

use anyhow::Result;

use crate::fstree::{self, Kind};
use crate::idmap::IdMap;

/// Entries given to the container so far.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Adopted {
    /// How many.
    pub entries: u64,
}

/// Gives every entry of the client's upper layer (open at `upper`) that a host writer owns to the
/// container's id of the same number (`mapping`: the container's), changing it through `view` (the
/// overlay itself, attached on the client's rootfs): found in the upper layer, changed by the same
/// path in the view.
pub fn adopt_through(upper: &OwnedFd, view: &OwnedFd, mapping: &IdMap) -> Result<Adopted> {
    let Some(writers) = mapping.with_host_writers() else {
        return Ok(Adopted::default());
    };
    let mut out = Adopted::default();
    walk_through(upper, view, mapping, &writers, &mut out, 0)?;
    Ok(out)
}

/// Gives each entry under `upper` that a host writer owns to the container's id of the same number,
/// changing it by name in `view`'s matching directory.
fn walk_through(
    upper: &OwnedFd,
    view: &OwnedFd,
    mapping: &IdMap,
    writers: &IdMap,
    out: &mut Adopted,
    depth: usize,
) -> Result<()> {
    if depth > fstree::MAX_DEPTH {
        return Ok(());
    }
    // through the overlay, the container's host ids; through a direct path's own directory (not
    // an overlay: the client's view of it keeps the ids as stored), the ids as stored
    let through_overlay = nix::sys::statfs::fstatfs(view)
        .map(|f| f.filesystem_type() == nix::sys::statfs::OVERLAYFS_SUPER_MAGIC)
        .unwrap_or(true);
    for name in fstree::names_in(upper)? {
        let Ok(st) = fstree::lstat_at(upper.as_raw_fd(), &name) else {
            continue;
        };
        let k = fstree::kind(&st);
        if k == Kind::Whiteout {
            continue;
        }
        let to = own(mapping, writers, st.st_uid, st.st_gid).map(|(u, g)| {
            if through_overlay {
                (u, g)
            } else {
                let disk = |h: u32, uid: bool| {
                    let c = if uid {
                        mapping.container_uid(h)
                    } else {
                        mapping.container_gid(h)
                    };
                    c.unwrap_or(h)
                };
                (disk(u, true), disk(g, false))
            }
        });
        if let Some((u, g)) = to {
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
                fstree::open_dir_at(upper.as_raw_fd(), &name),
                fstree::open_dir_at(view.as_raw_fd(), &name),
            ) {
                walk_through(&du, &dv, mapping, writers, out, depth + 1)?;
            }
        }
    }
    Ok(())
}

/// The container's host ids for an entry whose disk ids are `uid`, `gid`, if a host writer owns it
/// (either id); `None` for the container's own entries.
fn own(mapping: &IdMap, writers: &IdMap, uid: u32, gid: u32) -> Option<(u32, u32)> {
    let (wu, wg) = (
        writers.host_writer(uid, true),
        writers.host_writer(gid, false),
    );
    if wu.is_none() && wg.is_none() {
        return None;
    }
    // the view shows the container's own disk id k as its host id
    let u = mapping.host_uid(wu.unwrap_or(uid))?;
    let g = mapping.host_gid(wg.unwrap_or(gid))?;
    Some((u, g))
}

#[cfg(test)]
mod tests {
    use super::*;

    const B: u32 = 1 << 30;

    #[test]
    fn only_entries_host_writers_own_are_given_to_the_container() {
        let m = IdMap::block(B, 65536);
        let w = m.with_host_writers().unwrap();
        assert_eq!(own(&m, &w, 65536, 65536), Some((B, B)), "host root's");
        assert_eq!(own(&m, &w, 65536 + 1000, 65536), Some((B + 1000, B)));
        assert_eq!(own(&m, &w, 1000, 65536), Some((B + 1000, B)), "group only");
        assert_eq!(own(&m, &w, 0, 0), None, "the container's root's");
        assert_eq!(own(&m, &w, 1000, 1000), None, "the container's own");
    }
}
