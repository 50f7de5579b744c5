//! Step 1: namespaces. Every container gets new pid, mount, ipc, uts, network and (where the kernel has
//! it) cgroup namespaces. A caller may join an existing namespace by path only if it is not the host's;
//! an absent or host namespace is replaced by a new one. Host network devices are never moved in.

use std::path::Path;

use oci_spec::runtime::{LinuxIdMapping, LinuxNamespace, LinuxNamespaceType, Spec};

use super::{refuse, Changes, HostFacts, Refusal};
use crate::policy::{keys, Policy};

/// The namespaces every container must have, in the order they are listed in the hardened spec.
pub fn required_namespaces(facts: &HostFacts) -> Vec<LinuxNamespaceType> {
    let mut v = vec![
        LinuxNamespaceType::User,
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
        if let Some(path) = ns.path() {
            check_namespace_type(ns.typ(), path, facts)?;
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

/// A namespace path must be a namespace of the type it is given as: setns(2) would otherwise fail
/// half way through create with a bare `EINVAL`.
fn check_namespace_type(
    typ: LinuxNamespaceType,
    path: &Path,
    facts: &HostFacts,
) -> Result<(), Refusal> {
    let why = match facts.namespace_types.get(path) {
        Some(None) => "it is not a namespace file".to_string(),
        Some(Some(actual)) if *actual != typ => format!("it is a namespace of type {actual}"),
        _ => return Ok(()),
    };
    Err(refuse(
        keys::NAMESPACES_JOIN,
        format!(
            "{typ} namespace path {} cannot be joined: {why}",
            path.display()
        ),
    ))
}

/// Step 1c: mount, pid and ipc namespaces joined by path, once the container's user namespace is
/// known. The container's root filesystem is built in a mount namespace of its own, so joining one
/// is refused. A pid namespace is joined only when it belongs to the user namespace the container
/// runs in: mounting its `/proc` needs privilege over that owner, which the container's root does not
/// have over the host's or another one. An ipc namespace of another owner is joined without the
/// `/dev/mqueue` mount, which would fail the same way (message queues still work, through
/// `mq_open`). Each refusal names the path and `namespaces.join`, instead of the mount's raw errno.
pub fn harden_joined_mount_pid_ipc(
    spec: &mut Spec,
    facts: &HostFacts,
    changes: &mut Changes,
) -> Result<(), Refusal> {
    let Some(linux) = spec.linux().as_ref() else {
        return Ok(());
    };
    let nss = linux.namespaces().clone().unwrap_or_default();
    // the user namespace the container runs in, when it joins one by path (otherwise a new one,
    // which owns nothing that exists yet)
    let container_userns = nss
        .iter()
        .find(|n| n.typ() == LinuxNamespaceType::User)
        .and_then(|n| n.path().as_ref())
        .and_then(|p| {
            facts.namespace_paths.get(p).copied().or_else(|| {
                facts
                    .namespace_owners
                    .values()
                    .find(|o| o.path.as_deref() == Some(p.as_path()))
                    .map(|o| o.id)
            })
        });
    let owned_by_container = |p: &Path| {
        container_userns.is_some()
            && facts.namespace_owners.get(p).map(|o| o.id) == container_userns
    };
    let mut drop_mqueue = None;
    for ns in &nss {
        let Some(path) = ns.path() else { continue };
        let why = match ns.typ() {
            LinuxNamespaceType::Mount => "rloxsc builds the container's root filesystem in a mount namespace of its own",
            LinuxNamespaceType::Pid if !owned_by_container(path) => "it belongs to another user namespace than the container's, whose root could not mount its /proc (give the container that user namespace too)",
            LinuxNamespaceType::Ipc if !owned_by_container(path) => {
                drop_mqueue = Some(path.clone());
                continue;
            }
            _ => continue,
        };
        return Err(refuse(
            keys::NAMESPACES_JOIN,
            format!(
                "joining the {} namespace {} is refused: {why}",
                if ns.typ() == LinuxNamespaceType::Mount {
                    "mount"
                } else {
                    "pid"
                },
                path.display()
            ),
        ));
    }
    if let Some(path) = drop_mqueue {
        if let Some(mounts) = spec.mounts_mut() {
            let before = mounts.len();
            mounts.retain(|m| m.typ().as_deref() != Some("mqueue"));
            if mounts.len() != before {
                changes.push(
                    keys::NAMESPACES_JOIN,
                    format!(
                        "ipc namespace {} belongs to another user namespace than the container's: /dev/mqueue is not mounted (message queues still work through mq_open)",
                        path.display()
                    ),
                );
            }
        }
    }
    Ok(())
}

/// The id mappings a container gets when the caller brings no user namespace of its own: container
/// ids 0..65536 onto the container's block of host ids.
pub fn block_mapping(base: u32) -> LinuxIdMapping {
    oci_spec::runtime::LinuxIdMappingBuilder::default()
        .container_id(0u32)
        .host_id(base)
        .size(crate::policy::BLOCK)
        .build()
        .expect("an id mapping with every field set is valid")
}

/// Whether the caller's spec brings a user namespace of its own (joined by path, or new with its
/// own id mappings); otherwise rloxsc allocates a block for the container.
pub fn brings_own_user_namespace(spec: &Spec) -> bool {
    let Some(linux) = spec.linux().as_ref() else {
        return false;
    };
    let by_path = linux
        .namespaces()
        .iter()
        .flatten()
        .any(|n| n.typ() == LinuxNamespaceType::User && n.path().is_some());
    let mapped = linux.uid_mappings().as_ref().is_some_and(|m| !m.is_empty())
        && linux.gid_mappings().as_ref().is_some_and(|m| !m.is_empty());
    by_path || mapped
}

/// The user namespace a container without one of its own must join: the one that owns the
/// namespaces it joins by path, when that is not the host's (a pod's containers join the sandbox's
/// ipc, uts and pid namespaces, which belong to the sandbox's user namespace; a namespace can only
/// be entered from a user namespace that owns it or one of its ancestors). `None`: the container
/// gets a user namespace of its own. Refused: joined namespaces with different owners, or an owner
/// rloxsc cannot name by path.
pub fn user_namespace_to_join<'f>(
    spec: &Spec,
    facts: &'f HostFacts,
) -> Result<Option<&'f crate::harden::NamespaceOwner>, Refusal> {
    if brings_own_user_namespace(spec) {
        return Ok(None);
    }
    let host = facts.host_namespaces.get(&LinuxNamespaceType::User);
    let mut found: Option<(&Path, &crate::harden::NamespaceOwner)> = None;
    let joined = spec
        .linux()
        .as_ref()
        .and_then(|l| l.namespaces().as_ref())
        .into_iter()
        .flatten()
        .filter(|n| n.typ() != LinuxNamespaceType::User);
    for ns in joined {
        let Some(p) = ns.path() else { continue };
        let Some(o) = facts.namespace_owners.get(p) else {
            continue;
        };
        if Some(&o.id) == host {
            continue;
        }
        match found {
            Some((first, prev)) if prev.id != o.id => {
                return Err(refuse(
                    keys::USERNS,
                    format!(
                        "namespaces {} and {} belong to different user namespaces: a container can only join namespaces of one",
                        first.display(),
                        p.display()
                    ),
                ))
            }
            Some(_) => {}
            None => found = Some((p, o)),
        }
    }
    match found {
        None => Ok(None),
        Some((_, o)) if o.path.is_some() => Ok(Some(o)),
        Some((p, _)) => Err(refuse(
            keys::USERNS,
            format!(
                "namespace {} belongs to a user namespace rloxsc cannot name by path: give the container that user namespace (linux.namespaces, type user, path)",
                p.display()
            ),
        )),
    }
}

/// Step 1b: the user namespace. Every container's root is an unprivileged host uid: without a user
/// namespace of the caller's, the container gets one mapping its ids onto the block rloxsc allocated
/// (`facts.userns_base`); a caller's own mapping is kept if it maps nothing onto host id 0 and
/// nothing onto another container's block. No policy can give a container host root.
pub fn harden_user_namespace(
    spec: &mut Spec,
    facts: &HostFacts,
    changes: &mut Changes,
) -> Result<(), Refusal> {
    let own = brings_own_user_namespace(spec);
    if let Some(owner) = user_namespace_to_join(spec, facts)? {
        let path = owner
            .path
            .clone()
            .expect("user_namespace_to_join names a path");
        let linux = spec.linux_mut().get_or_insert_with(Default::default);
        let nss = linux.namespaces_mut().get_or_insert_with(Vec::new);
        nss.retain(|n| n.typ() != LinuxNamespaceType::User);
        let mut ns = new_namespace(LinuxNamespaceType::User);
        ns.set_path(Some(path.clone()));
        nss.insert(0, ns);
        changes.push(
            keys::USERNS,
            format!(
                "user namespace: joins {} (it owns the namespaces the container joins, as a pod's containers share the sandbox's)",
                path.display()
            ),
        );
        return Ok(());
    }
    let linux = spec.linux_mut().get_or_insert_with(Default::default);
    if own {
        for (what, maps) in [("uid", linux.uid_mappings()), ("gid", linux.gid_mappings())] {
            for m in maps.iter().flatten() {
                let (first, len) = (m.host_id() as u64, m.size() as u64);
                if len == 0 {
                    continue;
                }
                if first == 0 {
                    return Err(refuse(
                        keys::USERNS,
                        format!("the {what} mapping {} {} {} maps onto host id 0: a container's root is never host root", m.container_id(), m.host_id(), m.size()),
                    ));
                }
                if let Some((b, _)) = facts
                    .userns_taken
                    .iter()
                    .find(|(b, l)| first < b + l && *b < first + len)
                {
                    return Err(refuse(
                        keys::USERNS,
                        format!("the {what} mapping {} {} {} overlaps host ids {b}.. that another container holds", m.container_id(), m.host_id(), m.size()),
                    ));
                }
            }
        }
        return Ok(());
    }
    let Some(base) = facts.userns_base else {
        return Err(refuse(
            keys::USERNS,
            "no user-namespace block was allocated for the container",
        ));
    };
    let map = vec![block_mapping(base)];
    linux.set_uid_mappings(Some(map.clone()));
    linux.set_gid_mappings(Some(map));
    changes.push(
        keys::USERNS,
        format!(
            "user namespace: container ids 0..{} are host ids {base}..{} (the container's root is host uid {base})",
            crate::policy::BLOCK,
            base as u64 + crate::policy::BLOCK as u64
        ),
    );
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
        assert_eq!(
            c.0.len(),
            5,
            "user, network, ipc, uts, cgroup added: {:?}",
            c.0
        );
    }

    #[test]
    fn every_container_gets_a_block_of_its_own_and_never_host_root() {
        let mut s = careless_spec();
        let mut c = Changes::default();
        harden_namespaces(&mut s, &Policy::default(), &facts(), &mut c).unwrap();
        harden_user_namespace(&mut s, &facts(), &mut c).unwrap();
        let l = s.linux().as_ref().unwrap();
        assert_eq!(
            l.uid_mappings().as_ref().unwrap(),
            &vec![block_mapping(1 << 30)]
        );
        assert_eq!(
            l.gid_mappings().as_ref().unwrap(),
            &vec![block_mapping(1 << 30)]
        );
        // a caller's own mapping is kept unless it maps host id 0 or another container's ids
        let with = |host: u32| {
            let mut s = careless_spec();
            let m = vec![oci_spec::runtime::LinuxIdMappingBuilder::default()
                .container_id(0u32)
                .host_id(host)
                .size(65536u32)
                .build()
                .unwrap()];
            let l = s.linux_mut().as_mut().unwrap();
            l.set_uid_mappings(Some(m.clone()));
            l.set_gid_mappings(Some(m));
            s
        };
        let mut f = facts();
        f.userns_base = None;
        f.userns_taken = vec![(2 << 30, 65536)];
        let mut ok = with(100000);
        harden_user_namespace(&mut ok, &f, &mut Changes::default()).unwrap();
        let r = harden_user_namespace(&mut with(0), &f, &mut Changes::default()).unwrap_err();
        assert!(
            r.reason.contains("host id 0") && r.key == keys::USERNS,
            "{r}"
        );
        let r = harden_user_namespace(&mut with(2 << 30), &f, &mut Changes::default()).unwrap_err();
        assert!(r.reason.contains("another container"), "{r}");
        // no block and no mapping of the caller's: refused, never run as host root
        let mut bare = careless_spec();
        assert!(harden_user_namespace(&mut bare, &f, &mut Changes::default()).is_err());
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

    /// A spec joining `typ` at `path` (and a new user namespace, or the one at `userns`), with the
    /// default mqueue mount.
    fn spec_with(typ: &str, path: &str, userns: Option<&str>) -> Spec {
        let user = match userns {
            Some(u) => format!(r#"{{"type":"user","path":"{u}"}}"#),
            None => r#"{"type":"user"}"#.to_string(),
        };
        serde_json::from_str(&format!(
            r#"{{"ociVersion":"1.0.2","process":{{"user":{{"uid":0,"gid":0}},"args":["sh"],"cwd":"/"}},
            "root":{{"path":"rootfs"}},
            "mounts":[{{"destination":"/dev/mqueue","type":"mqueue","source":"mqueue"}}],
            "linux":{{"namespaces":[{{"type":"{typ}","path":"{path}"}},{user}]}}}}"#
        ))
        .unwrap()
    }

    #[test]
    fn a_namespace_path_of_another_type_or_no_namespace_is_refused_by_key() {
        let mut f = facts();
        f.namespace_paths.insert("/proc/7/ns/pid".into(), (4, 70));
        f.namespace_paths.insert("/etc/hostname".into(), (8, 3));
        f.namespace_types
            .insert("/proc/7/ns/pid".into(), Some(LinuxNamespaceType::Pid));
        f.namespace_types.insert("/etc/hostname".into(), None);
        let run =
            |s: &mut Spec| harden_namespaces(s, &Policy::default(), &f, &mut Changes::default());
        let r = run(&mut spec_with("network", "/proc/7/ns/pid", None)).unwrap_err();
        assert_eq!(r.key, keys::NAMESPACES_JOIN);
        assert!(r.reason.contains("/proc/7/ns/pid"), "{r}");
        assert!(r.reason.contains("is a namespace of type pid"), "{r}");
        let r = run(&mut spec_with("uts", "/etc/hostname", None)).unwrap_err();
        assert!(r.reason.contains("not a namespace file"), "{r}");
        // the right type is joined
        run(&mut spec_with("pid", "/proc/7/ns/pid", None)).unwrap();
    }

    #[test]
    fn joined_mount_pid_and_ipc_namespaces_work_or_are_refused_by_key() {
        let owner = |id| crate::harden::NamespaceOwner {
            id,
            path: Some("/proc/7/ns/user".into()),
            uid_map: vec![],
            gid_map: vec![],
        };
        let mut f = facts();
        for p in ["/proc/7/ns/mnt", "/proc/7/ns/pid", "/proc/7/ns/ipc"] {
            f.namespace_owners.insert(p.into(), owner((4, 77)));
        }
        f.namespace_paths.insert("/proc/7/ns/user".into(), (4, 77));
        let run = |s: &mut Spec, f: &HostFacts| {
            let mut c = Changes::default();
            harden_joined_mount_pid_ipc(s, f, &mut c).map(|_| c.0)
        };
        let mqueue = |s: &Spec| {
            s.mounts()
                .iter()
                .flatten()
                .any(|m| m.typ().as_deref() == Some("mqueue"))
        };
        // a mount namespace: never joined
        let r = run(&mut spec_with("mount", "/proc/7/ns/mnt", None), &f).unwrap_err();
        assert_eq!(r.key, keys::NAMESPACES_JOIN);
        assert!(r.reason.contains("/proc/7/ns/mnt"), "{r}");
        // pid: refused in a new user namespace, joined in its owner
        let r = run(&mut spec_with("pid", "/proc/7/ns/pid", None), &f).unwrap_err();
        assert_eq!(r.key, keys::NAMESPACES_JOIN);
        let mut s = spec_with("pid", "/proc/7/ns/pid", Some("/proc/7/ns/user"));
        assert!(run(&mut s, &f).unwrap().is_empty());
        // ipc: without /dev/mqueue in a new user namespace, with it in its owner
        let mut s = spec_with("ipc", "/proc/7/ns/ipc", None);
        let ch = run(&mut s, &f).unwrap();
        assert!(!mqueue(&s) && ch[0].key == keys::NAMESPACES_JOIN, "{ch:?}");
        let mut s = spec_with("ipc", "/proc/7/ns/ipc", Some("/proc/7/ns/user"));
        assert!(run(&mut s, &f).unwrap().is_empty());
        assert!(mqueue(&s));
    }

    #[test]
    fn a_hardened_spec_joining_a_host_owned_ipc_namespace_has_no_mqueue_mount() {
        let mut f = facts();
        f.host_namespaces
            .insert(LinuxNamespaceType::User, (4, 4026531837));
        f.namespace_paths.insert("/proc/7/ns/ipc".into(), (4, 5000));
        f.namespace_owners.insert(
            "/proc/7/ns/ipc".into(),
            crate::harden::NamespaceOwner {
                id: (4, 4026531837),
                path: None,
                uid_map: vec![],
                gid_map: vec![],
            },
        );
        let mut s = careless_spec();
        s.linux_mut()
            .as_mut()
            .unwrap()
            .set_namespaces(Some(vec![serde_json::from_str(
                r#"{"type":"ipc","path":"/proc/7/ns/ipc"}"#,
            )
            .unwrap()]));
        let h = crate::harden::harden(&s, "c1", &Policy::default(), &f).unwrap();
        assert!(
            !h.spec
                .mounts()
                .iter()
                .flatten()
                .any(|m| m.typ().as_deref() == Some("mqueue")),
            "{:?}",
            h.spec.mounts()
        );
        assert!(h.changes.iter().any(|c| c.key == keys::NAMESPACES_JOIN));
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
