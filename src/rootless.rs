//! Whether rloxsc was started without the host's root (an ordinary user, or root of a user namespace
//! such as rootless Podman's), and the refusal it gives then.
//!
//! rloxsc's containment is built as host root: its own user namespace per container from a pool of
//! host ids, cgroups it makes and limits, a state root and policy that only root can change. Started
//! by an ordinary user it has none of that, and the mandatory pids and memory limits need cgroup v2
//! with those controllers delegated to the user (systemd's `Delegate=` for `user@.service`); cgroup v1
//! gives an unprivileged user none. Rootless mode is not built yet, so every verb that acts on
//! containers is refused at once with the reason and what the host would need, before the state root
//! or the binary's seal is looked at (whose own errors named `/run/rloxsc` and `/`, which tell a user
//! nothing); `doctor` says the same. Nothing runs without the containment.

use crate::policy::keys;

/// Why this process is not the host's root, if it is not: its effective uid, or the user namespace it
/// runs in (whose root is not host root).
pub fn reason() -> Option<String> {
    // SAFETY: geteuid has no preconditions
    let euid = unsafe { libc::geteuid() };
    if euid != 0 {
        return Some(format!("rloxsc runs as uid {euid}, not root"));
    }
    let map = crate::fsutil::read_small_string("/proc/self/uid_map").ok()?;
    let lines = crate::idmap::parse_id_map(&map);
    // the initial user namespace maps every id onto itself: `0 0 4294967295`
    if lines == [(0, 0, u64::from(u32::MAX))] {
        return None;
    }
    let host_root = lines
        .iter()
        .find(|(inside, _, _)| *inside == 0)
        .map(|(_, outside, _)| format!("host uid {outside}"))
        .unwrap_or_else(|| "no host id".to_string());
    Some(format!(
        "rloxsc runs as root of a user namespace other than the host's (as rootless Podman starts it; its root is {host_root}), without the host's privileges"
    ))
}

/// What the host lacks for the mandatory limits of a rootless container, if anything: cgroup v2 with
/// the memory and pids controllers delegated to the user.
fn cgroup_gap() -> String {
    if crate::cgroups::host_is_v1() {
        "this host's cgroups are v1 (or hybrid), where no unprivileged user can be given the pids and memory controllers".to_string()
    } else {
        "rloxsc does not build rootless containers yet, even where cgroup v2 delegates the pids and memory controllers to the user".to_string()
    }
}

/// The refusal for `reason`: what is missing, what would fix it, the policy keys it protects.
pub fn refusal(reason: &str) -> String {
    format!(
        "refusing to act on containers without the host's root: {reason}; a rootless container needs its mandatory pids and memory limits in the user's own cgroup v2 subtree (cgroup v2 with systemd's Delegate=yes for user@.service), and {}. Run rloxsc as root (e.g. rootful Podman or Docker), or use crun or runc for rootless containers (policy keys {}, {})",
        cgroup_gap(),
        keys::PIDS,
        keys::MEMORY
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_refusal_names_the_cause_the_fix_and_the_keys() {
        let r = refusal("rloxsc runs as uid 1000, not root");
        for want in [
            "uid 1000",
            "cgroup v2",
            "Delegate=yes",
            "run rloxsc as root",
            keys::PIDS,
            keys::MEMORY,
        ] {
            assert!(
                r.to_lowercase().contains(&want.to_lowercase()),
                "{want}: {r}"
            );
        }
        assert!(!r.contains("/run/rloxsc"), "{r}");
    }
}
