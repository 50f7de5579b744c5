//! A container's id mapping (container ids ↔ host ids) and the idmapped-mount mappings made from it:
//! the one that shows an image's files (owned by container ids on disk, as a client's storage keeps
//! them) as the container's, and the one that gives the owner of a bind-mounted host directory to the
//! container's root.
//!
//! An idmapped mount made with a user namespace whose `uid_map` line is `I O N` shows an inode whose
//! id on disk is `I+k` as host id `O+k`, and stores host id `O+k` as `I+k` (`0 ≤ k < N`); ids outside
//! every line show as the overflow id and cannot be written.

use std::os::fd::OwnedFd;

use anyhow::Result;

/// A container's id mapping: `(container id, host id, count)` lines, as in `uid_map`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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

fn to_container(lines: &[(u32, u32, u32)], h: u32) -> Option<u32> {
    lines
        .iter()
        .find(|(_, ho, n)| h >= *ho && h - ho < *n)
        .map(|(c, ho, _)| c + (h - ho))
}

fn map_text(lines: &[(u32, u32, u32)]) -> String {
    lines
        .iter()
        .map(|(i, o, n)| format!("{i} {o} {n}\n"))
        .collect()
}

impl IdMap {
    /// The mapping of a block: container ids `0..len` are host ids `base..base+len`.
    pub fn block(base: u32, len: u32) -> IdMap {
        IdMap {
            uids: vec![(0, base, len)],
            gids: vec![(0, base, len)],
        }
    }

    /// The mapping of the user namespace process `pid` is in, read from its `uid_map` and
    /// `gid_map` (`None` when either cannot be read or holds a line beyond 32 bits).
    pub fn of_process(pid: i32) -> Option<IdMap> {
        let read = |what: &str| -> Option<Vec<(u32, u32, u32)>> {
            let text = crate::fsutil::read_small_string(format!("/proc/{pid}/{what}")).ok()?;
            parse_id_map(&text)
                .into_iter()
                .map(|(i, o, n)| Some((i.try_into().ok()?, o.try_into().ok()?, n.try_into().ok()?)))
                .collect()
        };
        Some(IdMap {
            uids: read("uid_map")?,
            gids: read("gid_map")?,
        })
    }

    /// The host uid of container uid `id`, if mapped.
    pub fn host_uid(&self, id: u32) -> Option<u32> {
        to_host(&self.uids, id)
    }

    /// The host gid of container gid `id`, if mapped.
    pub fn host_gid(&self, id: u32) -> Option<u32> {
        to_host(&self.gids, id)
    }

    /// The container uid of host uid `h`, if mapped.
    pub fn container_uid(&self, h: u32) -> Option<u32> {
        to_container(&self.uids, h)
    }

    /// The container gid of host gid `h`, if mapped.
    pub fn container_gid(&self, h: u32) -> Option<u32> {
        to_container(&self.gids, h)
    }

    /// The host uid and gid of the container's root.
    pub fn root(&self) -> (u32, u32) {
        (self.host_uid(0).unwrap_or(0), self.host_gid(0).unwrap_or(0))
    }

    /// A user namespace with this mapping (for idmapping a mount so that what a client's storage
    /// keeps as container ids shows as the container's host ids).
    pub fn namespace(&self) -> Result<OwnedFd> {
        crate::userns::namespace_fd(&map_text(&self.uids), &map_text(&self.gids))
    }

    /// The mapping of an idmapped bind of a host directory owned by `owner` (uid, gid) for a
    /// container whose process runs as container ids `user` (uid, gid): the owner is that user inside
    /// (the container's root by default), so the process can use the directory as its owner can
    /// (also a 0700 one) and what it creates there belongs on the host to the directory's owner, as
    /// under runc with the caller's own ids. The container's other ids `k` are the host's ids `k`,
    /// except disk id 0 (host root), which is never mapped unless it is the owner: nothing in the
    /// container writes as host root there, and host root's files show as `nobody`'s. `None` when
    /// the container's mapping is not one block starting at container id 0.
    pub fn for_owner(&self, owner: (u32, u32), user: (u32, u32)) -> Option<IdMap> {
        let one = |lines: &[(u32, u32, u32)], d: u32, p: u32| -> Option<Vec<(u32, u32, u32)>> {
            let &(c0, base, len) = lines.first()?;
            if lines.len() != 1 || c0 != 0 || len == 0 || p >= len {
                return None;
            }
            // on-disk id -> host id lines: the owner d is the user p; every other disk id k in
            // 1..len but d and p is container id k; each host id used at most once
            let mut out = vec![(d, base + p, 1)];
            let mut skip = [d, p];
            skip.sort_unstable();
            let mut from = 1;
            for s in skip {
                if s > from && from < len {
                    out.push((from, base + from, s.min(len) - from));
                }
                from = from.max(s + 1);
            }
            if from < len {
                out.push((from, base + from, len - from));
            }
            Some(out)
        };
        Some(IdMap {
            uids: one(&self.uids, owner.0, user.0)?,
            gids: one(&self.gids, owner.1, user.1)?,
        })
    }

    /// This mapping (one block from container id 0) with host ids `0..n` (the host's own users,
    /// root among them) added as disk ids `n..2n`, where `n` is the block's length: the mapping of a
    /// client's writable layer that both the container and host root write through (overlayfs
    /// works in its upper layer as the mounter, host root; a client copies in as host root). The
    /// container's id `k` is disk id `k`, as the client keeps it; a host writer's `h` lands as
    /// `n+h`, which the container's own ids never are ([`IdMap::host_writer`] turns it back).
    pub fn with_host_writers(&self) -> Option<IdMap> {
        let one = |lines: &[(u32, u32, u32)]| -> Option<Vec<(u32, u32, u32)>> {
            let &(c0, base, len) = lines.first()?;
            if lines.len() != 1 || c0 != 0 || len == 0 || base < len {
                return None;
            }
            Some(vec![(0, base, len), (len, 0, len)])
        };
        Some(IdMap {
            uids: one(&self.uids)?,
            gids: one(&self.gids)?,
        })
    }

    /// For a disk id of a layer mapped [`IdMap::with_host_writers`]: the host id `h` that wrote it,
    /// if a host writer did (`None` for the container's own ids).
    pub fn host_writer(&self, disk: u32, uid: bool) -> Option<u32> {
        let lines = if uid { &self.uids } else { &self.gids };
        let &(_, _, len) = lines.first()?;
        (disk >= len && disk - len < len).then(|| disk - len)
    }
}

/// Parses a `/proc/<pid>/uid_map` (or `gid_map`): one (inside, outside, count) per line.
pub fn parse_id_map(text: &str) -> Vec<(u64, u64, u64)> {
    text.lines()
        .filter_map(|l| {
            let v: Vec<u64> = l
                .split_whitespace()
                .filter_map(|x| x.parse().ok())
                .collect();
            (v.len() == 3).then(|| (v[0], v[1], v[2]))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const B: u32 = 1 << 30;

    fn disk_to_host(m: &[(u32, u32, u32)], disk: u32) -> Option<u32> {
        to_host(m, disk)
    }

    #[test]
    fn a_block_maps_both_ways() {
        let m = IdMap::block(B, 65536);
        assert_eq!(m.host_uid(0), Some(B));
        assert_eq!(m.host_uid(65535), Some(B + 65535));
        assert_eq!(m.host_uid(65536), None);
        assert_eq!(m.container_uid(B + 7), Some(7));
        assert_eq!(m.container_uid(7), None);
        assert_eq!(m.root(), (B, B));
    }

    #[test]
    fn a_root_owned_directory_is_the_container_roots_and_ids_keep_their_numbers() {
        let o = IdMap::block(B, 65536).for_owner((0, 0), (0, 0)).unwrap();
        assert_eq!(disk_to_host(&o.uids, 0), Some(B));
        assert_eq!(disk_to_host(&o.uids, 1000), Some(B + 1000));
        assert_eq!(disk_to_host(&o.uids, 65535), Some(B + 65535));
        assert_eq!(disk_to_host(&o.uids, 65536), None);
    }

    fn bijective_into_the_block(lines: &[(u32, u32, u32)]) -> usize {
        let mut seen = std::collections::BTreeSet::new();
        let mut disks = std::collections::BTreeSet::new();
        for (i, h, n) in lines {
            for k in 0..*n {
                assert!(seen.insert(h + k), "host id {} twice", h + k);
                assert!(disks.insert(i + k), "disk id {} twice", i + k);
                assert!((B..B + 65536).contains(&(h + k)));
            }
        }
        seen.len()
    }

    #[test]
    fn a_users_directory_is_the_containers_root_and_host_root_is_never_written() {
        let o = IdMap::block(B, 65536)
            .for_owner((1000, 1000), (0, 0))
            .unwrap();
        assert_eq!(
            disk_to_host(&o.uids, 1000),
            Some(B),
            "the owner is root inside"
        );
        assert_eq!(disk_to_host(&o.uids, 0), None, "host root is nobody inside");
        assert_eq!(disk_to_host(&o.uids, 1), Some(B + 1));
        assert_eq!(disk_to_host(&o.uids, 999), Some(B + 999));
        assert_eq!(disk_to_host(&o.uids, 1001), Some(B + 1001));
        assert_eq!(bijective_into_the_block(&o.uids), 65535);
    }

    #[test]
    fn a_process_running_as_the_owners_id_creates_files_the_owner_owns() {
        // docker run -u 1002 -v /home/u:/work (uid 1002): the container's 1002 is the owner
        let o = IdMap::block(B, 65536)
            .for_owner((1002, 1002), (1002, 1002))
            .unwrap();
        assert_eq!(disk_to_host(&o.uids, 1002), Some(B + 1002));
        assert_eq!(disk_to_host(&o.uids, 0), None, "never host root");
        assert!(
            o.uids.iter().all(|(_, h, n)| !(*h..h + n).contains(&B)),
            "root is not the owner"
        );
        assert_eq!(bijective_into_the_block(&o.uids), 65535);
        // a user other than the owner: the owner's files are that user's
        let o = IdMap::block(B, 65536)
            .for_owner((1002, 1002), (33, 33))
            .unwrap();
        assert_eq!(disk_to_host(&o.uids, 1002), Some(B + 33));
        assert_eq!(disk_to_host(&o.uids, 33), None);
        assert_eq!(bijective_into_the_block(&o.uids), 65534);
    }

    #[test]
    fn an_owner_outside_the_block_leaves_disk_root_unmapped() {
        let o = IdMap::block(B, 65536)
            .for_owner((70000, 70000), (0, 0))
            .unwrap();
        assert_eq!(disk_to_host(&o.uids, 70000), Some(B));
        assert_eq!(disk_to_host(&o.uids, 0), None);
        assert_eq!(disk_to_host(&o.uids, 5), Some(B + 5));
        assert_eq!(bijective_into_the_block(&o.uids), 65536);
    }

    #[test]
    fn host_writers_land_above_the_containers_ids_and_are_found_again() {
        let m = IdMap::block(B, 65536);
        let w = m.with_host_writers().unwrap();
        assert_eq!(disk_to_host(&w.uids, 0), Some(B));
        assert_eq!(disk_to_host(&w.uids, 65535), Some(B + 65535));
        assert_eq!(
            disk_to_host(&w.uids, 65536),
            Some(0),
            "host root writes as 65536"
        );
        assert_eq!(disk_to_host(&w.uids, 65536 + 1000), Some(1000));
        assert_eq!(w.host_writer(65536, true), Some(0));
        assert_eq!(w.host_writer(65535, true), None);
        assert_eq!(w.host_writer(131072, true), None);
    }

    #[test]
    fn only_a_single_block_from_zero_gets_an_owner_mapping() {
        let m = IdMap {
            uids: vec![(0, B, 1), (1, 100000, 65535)],
            gids: vec![(0, B, 65536)],
        };
        assert!(m.for_owner((0, 0), (0, 0)).is_none());
        assert!(m.with_host_writers().is_none());
    }
}
