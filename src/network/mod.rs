//! The network area: what a container's network namespace may hold and where its traffic may go
//! (policy keys `network.mode` and `network.egress_allow`).
//!
//! - `inbound-only` (the default): the interfaces the caller gave the container (Docker's and
//!   Podman's bridges, a CNI pod network) stay as they are, so published ports, pod IPs, Services,
//!   probes and port-forwards reach it; an egress filter in its network namespace
//!   ([`egress`], installed over netlink by [`nftables`]) refuses every connection and datagram it
//!   starts towards anything but loopback and the `egress_allow` list. With no interface but `lo`
//!   after the caller's hooks, nothing can leave and no filter is installed: the container is
//!   loopback-only, at no cost.
//! - `loopback-only`: the interfaces a caller put into the container's own namespace are set down and
//!   lose their addresses ([`interfaces`]); a joined namespace with a usable one is refused.
//! - `namespace`: a namespace of its own, with whatever the caller put there and no filter (runc's
//!   network; a policy must ask for it).
//!
//! The step ([`contain`]) runs after the caller's hooks and before verification; the outside check
//! ([`check_filter`], [`check_interfaces`]) reads the kernel's state back at create, `start` and
//! `update`. The container cannot change either: it holds no CAP_NET_ADMIN (`capabilities.allowed`
//! never grants it) and cannot make a user namespace to get one.
//!
//! The allowlist's vocabulary (an entry, its parser, `within`) is [`crate::egress_rule`], a
//! foundation: the policy holds those rules as it holds sizes and durations.

pub mod egress;
pub mod interfaces;
pub mod netlink;
pub mod nftables;

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

pub use crate::egress_rule::EgressRule;
pub use interfaces::{
    bring_loopback_up, has_own_network_namespace, in_network_namespace, mark_inert,
    write_sysctls_in, INERT, KERNEL_DEVICES,
};

use crate::policy::{keys, NetworkMode, Policy};

fn netns_of(pid: i32) -> PathBuf {
    PathBuf::from(format!("/proc/{pid}/ns/net"))
}

/// The step: after the caller's hooks ran, before verification, the container's network namespace
/// (of its init `pid`) is made what `policy.network` says; `egress` is the allowlist in force.
/// Each change is logged with its policy key.
pub fn contain(
    id: &str,
    pid: i32,
    spec: &oci_spec::runtime::Spec,
    policy: &Policy,
    egress: &[EgressRule],
) -> Result<()> {
    if policy.network != NetworkMode::Namespace && is_runtimes_own(pid) {
        // never the host's: nothing is set down or filtered there (verification refuses the container)
        bail!(
            "the container shares the runtime's network namespace: nothing of it is changed (policy key {})",
            keys::NAMESPACES
        );
    }
    match policy.network {
        NetworkMode::Namespace => Ok(()),
        NetworkMode::LoopbackOnly => {
            if !has_own_network_namespace(spec) {
                return Ok(()); // a joined namespace is not rloxsc's to change: verification judges it
            }
            let changed = interfaces::contain_interfaces(pid)
                .with_context(|| format!("policy key {}", keys::NETWORK_MODE))?;
            for n in changed {
                tracing::info!(
                    "container {id}: interface {n} in its network namespace set down, its addresses removed: only loopback is usable (policy key {})",
                    keys::NETWORK_MODE
                );
            }
            Ok(())
        }
        NetworkMode::InboundOnly => {
            if !needs_filter(
                &interfaces::names(pid)
                    .with_context(|| format!("policy key {}", keys::NETWORK_MODE))?,
            ) {
                return Ok(()); // loopback only: nothing can leave
            }
            let ns = netns_of(pid);
            if !has_own_network_namespace(spec) {
                // a pod's containers share the sandbox's namespace: the first one installs the
                // filter, the others find it, and one with another list is refused
                let current = in_network_namespace(&ns, nftables::read)
                    .map_err(|e| filter_error(&e, "read"))?;
                if let Some(i) = &current {
                    return match egress::differs(Some(i), egress) {
                        None => Ok(()),
                        Some(d) => bail!(
                            "the network namespace the container joins has another egress filter ({d}): every container sharing it must have the same {} (policy key {})",
                            keys::EGRESS_ALLOW,
                            keys::EGRESS_ALLOW
                        ),
                    };
                }
            }
            // a namespace of its own is new, a joined one was just read without the table: it is
            // created, nothing replaced (and nothing waited for); a pod's container that raced
            // another to it finds the other's, judged as above
            if let Err(e) = install_filter(&ns, egress, nftables::Mode::Create) {
                let now = in_network_namespace(&ns, nftables::read).ok().flatten();
                if has_own_network_namespace(spec)
                    || now.is_none()
                    || egress::differs(now.as_ref(), egress).is_some()
                {
                    return Err(e);
                }
            }
            tracing::info!(
                "container {id}: egress filter installed in its network namespace: inbound connections reach it, it reaches {} (policy keys {}, {})",
                describe(egress),
                keys::NETWORK_MODE,
                keys::EGRESS_ALLOW
            );
            Ok(())
        }
    }
}

/// Whether the network namespace of `pid` is the runtime's own (the host's), or cannot be told apart
/// from it.
fn is_runtimes_own(pid: i32) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (
        std::fs::metadata(netns_of(pid)),
        std::fs::metadata("/proc/self/ns/net"),
    ) {
        (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
        _ => true,
    }
}

/// Installs (or replaces, atomically) the egress filter for `egress` in the network namespace at
/// `ns`; an error names the kernel feature and the policy key.
pub fn install_filter(ns: &Path, egress: &[EgressRule], mode: nftables::Mode) -> Result<()> {
    let rules = egress::exprs(egress);
    in_network_namespace(ns, || nftables::install(&rules, mode))
        .map_err(|e| filter_error(&e, "install"))
}

fn filter_error(e: &anyhow::Error, what: &str) -> anyhow::Error {
    anyhow::anyhow!(
        "cannot {what} the egress filter in the container's network namespace: {e:#} (the kernel needs nf_tables with the inet family, conntrack (nft_ct) and reject (nft_reject_inet); policy key {})",
        keys::NETWORK_MODE
    )
}

/// Whether this host can give a container the egress filter: in a throwaway network namespace (a
/// thread of its own unshares one), the filter is installed and read back. For `doctor`.
pub fn probe_filter() -> Result<(), String> {
    std::thread::spawn(|| {
        nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNET)
            .map_err(|e| format!("cannot make a network namespace to try it in: {e}"))?;
        nftables::install(&egress::exprs(&[]), nftables::Mode::Create)
            .map_err(|e| format!("{e:#}"))?;
        let read = nftables::read().map_err(|e| format!("{e:#}"));
        match check_filter(&read, &[]) {
            None => Ok(()),
            Some(d) => Err(d),
        }
    })
    .join()
    .unwrap_or_else(|_| Err("the probe panicked".into()))
}

/// What the container may reach besides loopback, for logs and records.
pub fn describe(egress: &[EgressRule]) -> String {
    if egress.is_empty() {
        "nothing else".into()
    } else {
        format!("only {}", crate::egress_rule::format_list(egress))
    }
}

/// The egress filter of the network namespace of `pid`, read from outside (`None`: none there).
pub fn observe_filter(pid: i32) -> Result<Option<nftables::Installed>, String> {
    in_network_namespace(&netns_of(pid), nftables::read).map_err(|e| format!("{e:#}"))
}

/// Whether a container whose network namespace holds `interfaces` needs the egress filter under
/// `inbound-only`: when it holds anything but `lo`. (By name alone: the kernel's fallback tunnels,
/// present where tunnel modules are loaded, count too, so an interface a caller named like one is
/// never taken for one.)
pub fn needs_filter(interfaces: &[String]) -> bool {
    interfaces.iter().any(|i| i != "lo")
}

/// The outside check of the filter under `inbound-only`: `None` when the kernel holds exactly the
/// filter for `egress`, else what is wrong (reported under `network.mode`).
pub fn check_filter(
    observed: &Result<Option<nftables::Installed>, String>,
    egress: &[EgressRule],
) -> Option<String> {
    match observed {
        Err(e) => Some(format!("cannot read the container's egress filter: {e}")),
        Ok(i) => egress::differs(i.as_ref(), egress),
    }
}

/// The outside check of the interfaces: under `loopback-only`, none usable besides loopback and
/// inert fallback tunnels (the ones rloxsc set down are marked [`INERT`]); the other modes keep the
/// caller's interfaces. `None` when that holds, else what is wrong.
pub fn check_interfaces(interfaces: &[String], mode: NetworkMode) -> Option<String> {
    if mode != NetworkMode::LoopbackOnly {
        return None;
    }
    let mut extra: Vec<&str> = interfaces
        .iter()
        .map(String::as_str)
        .filter(|i| !KERNEL_DEVICES.contains(i) && !i.ends_with(INERT))
        .collect();
    if extra.is_empty() {
        return None;
    }
    extra.sort_unstable();
    Some(format!(
        "the container's network namespace has interfaces besides loopback ({}): run it with --network=none, or use {} = \"inbound-only\" (the default) in the policy",
        extra.join(", "),
        keys::NETWORK_MODE
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_only_judges_interfaces() {
        let i = vec!["lo".to_string(), "eth0".to_string()];
        assert!(check_interfaces(&i, NetworkMode::LoopbackOnly)
            .unwrap()
            .contains("eth0"));
        assert_eq!(check_interfaces(&i, NetworkMode::InboundOnly), None);
        assert_eq!(check_interfaces(&i, NetworkMode::Namespace), None);
        let inert = vec!["lo".to_string(), format!("eth0{INERT}"), "sit0".into()];
        assert_eq!(check_interfaces(&inert, NetworkMode::LoopbackOnly), None);
    }

    #[test]
    fn an_unreadable_filter_is_a_failure() {
        assert!(check_filter(&Err("EPERM".into()), &[]).is_some());
        assert!(check_filter(&Ok(None), &[]).unwrap().contains("missing"));
    }
}
