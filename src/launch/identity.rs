//! Phase 3 of `create`, **identity** (`settle_identity`): the pure decision of whose ids the
//! container's root gets (a block of rloxsc's own, the user namespace of a pod's sandbox it joins, or
//! the caller's own namespace and mapping), then the block of host ids taken for it, recorded in the
//! footprint before it is.

use anyhow::{anyhow, Result};
use oci_spec::runtime::Spec;

use super::input::Input;
use crate::context::Context;
use crate::footprint::Footprint;
use crate::harden::HostFacts;
use crate::idmap::IdMap;

/// Whose ids the container's root gets (the pure decision of phase 3).
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

/// Phase 3's result: how the container gets its ids, and the block of host ids taken for it.
pub(super) struct Identity {
    pub(super) plan: IdentityPlan,
    pub(super) alloc: Option<crate::userns::Allocation>,
}

/// Phase 3, identity: the plan (refused when it cannot be had), then the block of host ids.
pub(super) fn settle_identity(
    ctx: &Context,
    id: &str,
    input: &mut Input,
    fp: &mut Footprint,
) -> Result<Identity> {
    let plan = plan_identity(&input.caller_spec, &input.host)
        .map_err(|r| anyhow!("refusing to create container {id:?}: {r}"))?;
    let alloc = take_identity(ctx, id, &plan, input, fp)?;
    Ok(Identity { plan, alloc })
}

/// The block of host ids, taken (or shared) and recorded before it is.
fn take_identity(
    ctx: &Context,
    id: &str,
    plan: &IdentityPlan,
    input: &mut Input,
    fp: &mut Footprint,
) -> Result<Option<crate::userns::Allocation>> {
    let root = ctx.layout.root();
    let a = match plan {
        IdentityPlan::Allocate => {
            let a = crate::userns::allocate(&ctx.policy.userns_pool, root, id)?;
            input.host.userns_base = Some(a.base);
            Some(a)
        }
        IdentityPlan::Join { base: Some(b), .. } => crate::userns::share(*b, root, id)?,
        _ => None,
    };
    // (the allocation file names its owner, found again without the ledger; the ledger names it too)
    fp.record(|l| l.userns = a)?;
    input.host.userns_taken = crate::userns::allocated_ranges(a.as_ref());
    Ok(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harden::testutil::*;

    #[test]
    fn a_caller_without_a_user_namespace_gets_a_block() {
        let s = careless_spec();
        assert_eq!(plan_identity(&s, &facts()).unwrap(), IdentityPlan::Allocate);
    }
}
