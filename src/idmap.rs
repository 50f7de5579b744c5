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

    /// The mapping of an idmapped bind of a host directory owned by `owner` (uid, gid): the owner is
    /// the container's root; the container's other ids `k` are the host's ids `k`, except that the
    /// owner's own number, when the container has it, takes the place of host id 0. So the container's
    /// root can use the directory as its owner can (also a 0700 one), and what it creates there
    /// belongs on the host to the directory's owner, as under runc with the caller's own mapping.
    /// `None` when the container's mapping is not one block starting at container id 0.
    pub fn for_owner(&self, owner: (u32, u32)) -> Option<IdMap> {
        let one = |lines: &[(u32, u32, u32)], d: u32| -> Option<Vec<(u32, u32, u32)>> {
            let &(c0, base, len) = lines.first()?;
            if lines.len() != 1 || c0 != 0 || len == 0 {
                return None;
            }
            // on-disk id -> host id lines; every host id base..base+len used once
            let mut out = vec![(d, base, 1)];
            if d == 0 {
                if len > 1 {
                    out.push((1, base + 1, len - 1));
                }
                return Some(out);
            }
            if d < len {
                // disk 0 takes the owner's container number; 1..len otherwise as themselves
                out.push((0, base + d, 1));
                if d > 1 {
                    out.push((1, base + 1, d - 1));
                }
                if d + 1 < len {
                    out.push((d + 1, base + d + 1, len - d - 1));
                }
            } else if len > 1 {
                // disk 0 is left out (shows as nobody); 1..len as themselves
                out.push((1, base + 1, len - 1));
            }
            Some(out)
        };
        Some(IdMap {
            uids: one(&self.uids, owner.0)?,
            gids: one(&self.gids, owner.1)?,
        })
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
        let o = IdMap::block(B, 65536).for_owner((0, 0)).unwrap();
        assert_eq!(disk_to_host(&o.uids, 0), Some(B));
        assert_eq!(disk_to_host(&o.uids, 1000), Some(B + 1000));
        assert_eq!(disk_to_host(&o.uids, 65535), Some(B + 65535));
        assert_eq!(disk_to_host(&o.uids, 65536), None);
    }

    #[test]
    fn a_users_directory_swaps_its_owner_with_disk_id_0() {
        let o = IdMap::block(B, 65536).for_owner((1000, 1000)).unwrap();
        assert_eq!(
            disk_to_host(&o.uids, 1000),
            Some(B),
            "the owner is root inside"
        );
        assert_eq!(disk_to_host(&o.uids, 0), Some(B + 1000));
        assert_eq!(disk_to_host(&o.uids, 1), Some(B + 1));
        assert_eq!(disk_to_host(&o.uids, 999), Some(B + 999));
        assert_eq!(disk_to_host(&o.uids, 1001), Some(B + 1001));
        // a bijection onto the block
        let mut seen = std::collections::BTreeSet::new();
        for (i, h, n) in &o.uids {
            for k in 0..*n {
                assert!(seen.insert(h + k), "host id {} twice ({i})", h + k);
            }
        }
        assert_eq!(seen.len(), 65536);
    }

    #[test]
    fn an_owner_outside_the_block_leaves_disk_root_unmapped() {
        let o = IdMap::block(B, 65536).for_owner((70000, 70000)).unwrap();
        assert_eq!(disk_to_host(&o.uids, 70000), Some(B));
        assert_eq!(disk_to_host(&o.uids, 0), None);
        assert_eq!(disk_to_host(&o.uids, 5), Some(B + 5));
    }

    #[test]
    fn only_a_single_block_from_zero_gets_an_owner_mapping() {
        let m = IdMap {
            uids: vec![(0, B, 1), (1, 100000, 65535)],
            gids: vec![(0, B, 65536)],
        };
        assert!(m.for_owner((0, 0)).is_none());
    }
}
