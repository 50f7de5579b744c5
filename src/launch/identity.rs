//! Phase 2's pure decision: whose ids the container's root gets (a block of rloxsc's own, the
//! user namespace of a pod's sandbox it joins, or the caller's own namespace and mapping).

use oci_spec::runtime::Spec;

use crate::harden::HostFacts;
use crate::idmap::IdMap;

/// Whose ids the container's root gets (the pure decision of phase 2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdentityPlan {
    /// A block of rloxsc's own.
    Allocate,
    /// The user namespace the container joins (a pod's sandbox): its root is host id `base`
    /// (`None` when its mapping is unknown).
    Join {
        /// The host uid of the joined namespace's root.
        base: Option<u32>,
        /// Its uid mapping (inside, outside, count).
        uid_map: Vec<(u32, u32, u32)>,
        /// Its gid mapping.
        gid_map: Vec<(u32, u32, u32)>,
    },
    /// The caller's own user namespace and mapping.
    Callers,
}

/// Decides the container's identity from the caller's spec and the host's facts.
pub fn plan_identity(
    spec: &Spec,
    host: &HostFacts,
) -> Result<IdentityPlan, crate::harden::Refusal> {
    if let Some(owner) = crate::harden::namespaces::user_namespace_to_join(spec, host)? {
        let narrow = |map: &[(u64, u64, u64)]| -> Vec<(u32, u32, u32)> {
            map.iter()
                .filter_map(|(i, o, n)| {
                    Some((
                        u32::try_from(*i).ok()?,
                        u32::try_from(*o).ok()?,
                        u32::try_from(*n).ok()?,
                    ))
                })
                .collect()
        };
        let uid_map = narrow(&owner.uid_map);
        let base = uid_map.iter().find(|(i, _, _)| *i == 0).map(|m| m.1);
        return Ok(IdentityPlan::Join {
            base,
            uid_map,
            gid_map: narrow(&owner.gid_map),
        });
    }
    if crate::harden::namespaces::brings_own_user_namespace(spec) {
        return Ok(IdentityPlan::Callers);
    }
    Ok(IdentityPlan::Allocate)
}

/// The mapping of the user namespace the container joins, as read when the host's facts were
/// gathered (never read again through a pid that may have been reused since).
pub fn joined_mapping(plan: &IdentityPlan) -> Option<IdMap> {
    match plan {
        IdentityPlan::Join {
            uid_map, gid_map, ..
        } if !uid_map.is_empty() && !gid_map.is_empty() => Some(IdMap {
            uids: uid_map.clone(),
            gids: gid_map.clone(),
        }),
        _ => None,
    }
}
