//! Step 4: privileges. no_new_privileges is forced; all five capability sets are written explicitly
//! (libcontainer keeps the runtime's full set for an absent one) and clamped to the policy's allowed set;
//! oom_score_adj never goes below 0.

use std::collections::HashSet;

use oci_spec::runtime::{Capabilities, Capability, LinuxCapabilities, Process};

use super::{Changes, Refusal};
use crate::policy::{keys, Policy};

/// Applies the privilege rules.
pub fn harden_privileges(
    process: &mut Process,
    policy: &Policy,
    changes: &mut Changes,
) -> Result<(), Refusal> {
    if process.no_new_privileges() != Some(true) {
        process.set_no_new_privileges(Some(true));
        changes.push(keys::NO_NEW_PRIVS, "no_new_privileges forced on");
    }

    let allowed: HashSet<Capability> = policy.allowed_capabilities().into_iter().collect();
    let caps = process.capabilities().clone().unwrap_or_default();
    let clamp = |name: &str, set: &Option<Capabilities>, changes: &mut Changes| -> Capabilities {
        let requested = set.clone().unwrap_or_default();
        let kept: Capabilities = requested.intersection(&allowed).copied().collect();
        let mut dropped: Vec<String> = requested
            .difference(&kept)
            .map(|c| format!("CAP_{c}"))
            .collect();
        dropped.sort();
        if !dropped.is_empty() {
            changes.push(
                keys::CAPABILITIES,
                format!("dropped {} from the {name} set", dropped.join(", ")),
            );
        } else if set.is_none() {
            changes.push(
                keys::CAPABILITIES,
                format!("absent {name} set written as empty"),
            );
        }
        kept
    };
    let bounding = clamp("bounding", caps.bounding(), changes);
    let effective = clamp("effective", caps.effective(), changes);
    let permitted = clamp("permitted", caps.permitted(), changes);
    let inheritable = clamp("inheritable", caps.inheritable(), changes);
    let mut ambient = clamp("ambient", caps.ambient(), changes);
    // the kernel only keeps ambient capabilities that are both permitted and inheritable
    let before = ambient.len();
    ambient.retain(|c| permitted.contains(c) && inheritable.contains(c));
    if ambient.len() != before {
        changes.push(
            keys::CAPABILITIES,
            "ambient set reduced to permitted and inheritable",
        );
    }
    let mut out = LinuxCapabilities::default();
    out.set_bounding(Some(bounding));
    out.set_effective(Some(effective));
    out.set_permitted(Some(permitted));
    out.set_inheritable(Some(inheritable));
    out.set_ambient(Some(ambient));
    process.set_capabilities(Some(out));

    if process.oom_score_adj().is_some_and(|v| v < 0) {
        process.set_oom_score_adj(Some(0));
        changes.push(keys::OOM_SCORE_ADJ, "negative oom_score_adj raised to 0");
    }
    Ok(())
}

/// Bit mask (as in `/proc/<pid>/status` CapEff lines) of the capabilities the policy allows.
pub fn allowed_capability_mask(policy: &Policy) -> u64 {
    policy
        .allowed_capabilities()
        .iter()
        .filter_map(|c| format!("CAP_{c}").parse::<caps::Capability>().ok())
        .fold(0u64, |m, c| m | (1u64 << c.index()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harden::testutil::*;

    #[test]
    fn careless_caps_are_clamped_and_all_sets_written() {
        let mut s = careless_spec();
        let mut c = Changes::default();
        harden_privileges(
            s.process_mut().as_mut().unwrap(),
            &Policy::default(),
            &mut c,
        )
        .unwrap();
        let p = s.process().as_ref().unwrap();
        assert_eq!(p.no_new_privileges(), Some(true));
        let caps = p.capabilities().as_ref().unwrap();
        for set in [
            caps.bounding(),
            caps.effective(),
            caps.permitted(),
            caps.inheritable(),
            caps.ambient(),
        ] {
            let set = set.as_ref().expect("every set written");
            assert!(!set.contains(&Capability::SysAdmin));
            assert!(!set.contains(&Capability::NetRaw));
        }
        assert!(caps
            .bounding()
            .as_ref()
            .unwrap()
            .contains(&Capability::Chown));
        assert!(
            c.0.iter().any(|c| c.what.contains("CAP_SYS_ADMIN")),
            "{:?}",
            c.0
        );
    }

    #[test]
    fn every_forbidden_capability_is_dropped() {
        let mut s = careless_spec();
        let all: Capabilities = crate::policy::FORBIDDEN_CAPABILITIES
            .iter()
            .copied()
            .collect();
        let mut lc = LinuxCapabilities::default();
        lc.set_bounding(Some(all.clone()));
        lc.set_effective(Some(all.clone()));
        lc.set_permitted(Some(all.clone()));
        lc.set_inheritable(Some(all.clone()));
        lc.set_ambient(Some(all));
        s.process_mut().as_mut().unwrap().set_capabilities(Some(lc));
        harden_privileges(
            s.process_mut().as_mut().unwrap(),
            &Policy::default(),
            &mut Changes::default(),
        )
        .unwrap();
        let caps = s
            .process()
            .as_ref()
            .unwrap()
            .capabilities()
            .clone()
            .unwrap();
        assert!(caps.bounding().as_ref().unwrap().is_empty());
        assert!(caps.ambient().as_ref().unwrap().is_empty());
    }

    #[test]
    fn mask_matches_allowed_set() {
        let m = allowed_capability_mask(&Policy::default());
        assert_ne!(m & (1 << 0), 0, "CAP_CHOWN");
        assert_eq!(m & (1 << 21), 0, "CAP_SYS_ADMIN");
        assert_eq!(m & (1 << 13), 0, "CAP_NET_RAW");
    }

    #[test]
    fn negative_oom_score_adj_is_raised() {
        let mut s = careless_spec();
        s.process_mut()
            .as_mut()
            .unwrap()
            .set_oom_score_adj(Some(-1000));
        harden_privileges(
            s.process_mut().as_mut().unwrap(),
            &Policy::default(),
            &mut Changes::default(),
        )
        .unwrap();
        assert_eq!(s.process().as_ref().unwrap().oom_score_adj(), Some(0));
    }
}
