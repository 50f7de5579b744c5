//! Step 1: namespaces. Every container gets new pid, mount, ipc, uts, network and (where the kernel has
//! it) cgroup namespaces. A caller may join an existing namespace by path only if it is not the host's;
//! an absent or host namespace is replaced by a new one. Host network devices are never moved in.

use oci_spec::runtime::{LinuxNamespace, LinuxNamespaceType, Spec};

use super::{refuse, Changes, HostFacts, Refusal};
use crate::policy::{keys, Policy};

/// The namespaces every container must have, in the order they are listed in the hardened spec.
pub fn required_namespaces(facts: &HostFacts) -> Vec<LinuxNamespaceType> {
    let mut v = vec![
        LinuxNamespaceType::Pid,
        LinuxNamespaceType::Mount,
        LinuxNamespaceType::Ipc,
        LinuxNamespaceType::Uts,
        LinuxNamespaceType::Network,
    ];
    if facts.has_cgroup_namespace {
        v.push(LinuxNamespaceType::Cgroup);
    }
    v
}

/// Applies the namespace rules to `spec`.
pub fn harden_namespaces(
    spec: &mut Spec,
    _policy: &Policy,
    facts: &HostFacts,
    changes: &mut Changes,
) -> Result<(), Refusal> {
    let linux = spec.linux_mut().get_or_insert_with(Default::default);
    let existing = linux.namespaces().clone().unwrap_or_default();
    let mut out: Vec<LinuxNamespace> = Vec::new();

    for ns in &existing {
        if out.iter().any(|o| o.typ() == ns.typ()) {
            changes.push(
                keys::NAMESPACES,
                format!("dropped duplicate {} namespace entry", ns.typ()),
            );
            continue;
        }
        match ns.path() {
            None => out.push(ns.clone()),
            Some(path) => match facts.namespace_paths.get(path) {
                None => {
                    return Err(refuse(
                        keys::NAMESPACES_JOIN,
                        format!(
                            "cannot resolve {} namespace path {}: rloxsc only joins namespaces it can verify are not the host's",
                            ns.typ(),
                            path.display()
                        ),
                    ))
                }
                Some(id) if facts.host_namespaces.get(&ns.typ()) == Some(id) => {
                    changes.push(
                        keys::NAMESPACES_JOIN,
                        format!(
                            "{} namespace path {} is the host's: replaced by a new {} namespace",
                            ns.typ(),
                            path.display(),
                            ns.typ()
                        ),
                    );
                    out.push(new_namespace(ns.typ()));
                }
                Some(_) => out.push(ns.clone()),
            },
        }
    }

    for typ in required_namespaces(facts) {
        if !out.iter().any(|o| o.typ() == typ) {
            changes.push(
                keys::NAMESPACES,
                format!("added a new {typ} namespace (the caller asked for the host's)"),
            );
            out.push(new_namespace(typ));
        }
    }

    if out != existing {
        linux.set_namespaces(Some(out));
    }

    if linux.net_devices().as_ref().is_some_and(|d| !d.is_empty()) {
        return Err(refuse(
            keys::NETWORK_MODE,
            "linux.netDevices moves host network devices into the container; rloxsc never does that",
        ));
    }
    Ok(())
}

fn new_namespace(typ: LinuxNamespaceType) -> LinuxNamespace {
    let mut ns = LinuxNamespace::default();
    ns.set_typ(typ);
    ns
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::harden::testutil::*;

    fn ns_types(spec: &Spec) -> Vec<LinuxNamespaceType> {
        spec.linux()
            .as_ref()
            .unwrap()
            .namespaces()
            .as_ref()
            .unwrap()
            .iter()
            .map(|n| n.typ())
            .collect()
    }

    #[test]
    fn absent_namespaces_are_added() {
        let mut s = careless_spec();
        let mut c = Changes::default();
        harden_namespaces(&mut s, &Policy::default(), &facts(), &mut c).unwrap();
        let t = ns_types(&s);
        for want in required_namespaces(&facts()) {
            assert!(t.contains(&want), "{want:?} missing from {t:?}");
        }
        assert_eq!(c.0.len(), 4, "network, ipc, uts, cgroup added: {:?}", c.0);
    }

    #[test]
    fn no_cgroup_namespace_when_kernel_lacks_it() {
        let mut s = careless_spec();
        let mut f = facts();
        f.has_cgroup_namespace = false;
        harden_namespaces(&mut s, &Policy::default(), &f, &mut Changes::default()).unwrap();
        assert!(!ns_types(&s).contains(&LinuxNamespaceType::Cgroup));
    }

    fn spec_joining(path: &str) -> Spec {
        let mut s = careless_spec();
        let mut ns = new_namespace(LinuxNamespaceType::Network);
        ns.set_path(Some(PathBuf::from(path)));
        s.linux_mut()
            .as_mut()
            .unwrap()
            .namespaces_mut()
            .as_mut()
            .unwrap()
            .push(ns);
        s
    }

    #[test]
    fn joining_the_host_namespace_is_replaced() {
        let mut s = spec_joining("/proc/1/ns/net");
        let mut f = facts();
        let host = f.host_namespaces[&LinuxNamespaceType::Network];
        f.namespace_paths.insert("/proc/1/ns/net".into(), host);
        let mut c = Changes::default();
        harden_namespaces(&mut s, &Policy::default(), &f, &mut c).unwrap();
        let net: Vec<_> = s
            .linux()
            .as_ref()
            .unwrap()
            .namespaces()
            .as_ref()
            .unwrap()
            .iter()
            .filter(|n| n.typ() == LinuxNamespaceType::Network)
            .cloned()
            .collect();
        assert_eq!(net.len(), 1);
        assert!(net[0].path().is_none());
        assert!(c.0.iter().any(|c| c.key == keys::NAMESPACES_JOIN));
    }

    #[test]
    fn joining_another_namespace_is_kept() {
        let mut s = spec_joining("/var/run/netns/pod");
        let mut f = facts();
        f.namespace_paths
            .insert("/var/run/netns/pod".into(), (4, 99));
        harden_namespaces(&mut s, &Policy::default(), &f, &mut Changes::default()).unwrap();
        let joined = s
            .linux()
            .as_ref()
            .unwrap()
            .namespaces()
            .as_ref()
            .unwrap()
            .iter()
            .any(|n| n.path().as_deref() == Some(std::path::Path::new("/var/run/netns/pod")));
        assert!(joined);
    }

    #[test]
    fn unresolvable_namespace_path_is_refused() {
        let mut s = spec_joining("/nonexistent/ns");
        let r = harden_namespaces(
            &mut s,
            &Policy::default(),
            &facts(),
            &mut Changes::default(),
        )
        .unwrap_err();
        assert_eq!(r.key, keys::NAMESPACES_JOIN);
    }

    #[test]
    fn net_devices_are_refused() {
        let mut s = careless_spec();
        let mut devs = std::collections::HashMap::new();
        devs.insert("eth0".to_string(), Default::default());
        s.linux_mut().as_mut().unwrap().set_net_devices(Some(devs));
        let r = harden_namespaces(
            &mut s,
            &Policy::default(),
            &facts(),
            &mut Changes::default(),
        )
        .unwrap_err();
        assert_eq!(r.key, keys::NETWORK_MODE);
    }
}
