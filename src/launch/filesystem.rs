//! Phase 5 of `create`, **filesystem** (`filesystem`): the container's view directory, the root
//! overlay and the writable paths ([`crate::rootfs`]), the views of binds and namespaces
//! ([`crate::views`]), the client's view. Its pure parts, what the phase is asked
//! ([`rootfs_request`]) and the spec libcontainer is given ([`libcontainer_spec`]), are unit-tested
//! here.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Result;
use oci_spec::runtime::{Mount, Spec};

use super::identity::{Identity, IdentityPlan};
use super::input::Input;
use crate::bundle::Layout;
use crate::context::Context;
use crate::footprint::{Footprint, HostView};
use crate::harden::filesystem::{is_writable_path, WRITABLE_MARK};
use crate::harden::Hardened;
use crate::idmap::IdMap;
use crate::paths::normal_abs;
use crate::policy::keys;
use crate::rootfs::layers::Source;
use crate::rootfs::{self, CopyupRequest, StoreSize, WritableRequest};
use crate::views::ViewDir;

/// The container's mapping, and whether it is rloxsc's own block (whose ids the image's layers and
/// the binds are then idmapped onto).
fn mappings(
    plan: &IdentityPlan,
    alloc: Option<crate::userns::Allocation>,
    spec: &Spec,
) -> (IdMap, Option<IdMap>) {
    if let Some(a) = alloc {
        let m = IdMap::block(a.base, crate::userns::BLOCK);
        return (m.clone(), Some(m));
    }
    if let IdentityPlan::Join { uid_map, .. } = plan {
        let m = IdMap {
            uids: uid_map.clone(),
            gids: uid_map.clone(),
        };
        return (m, None);
    }
    let lines = |v: &Option<Vec<oci_spec::runtime::LinuxIdMapping>>| -> Vec<(u32, u32, u32)> {
        v.iter()
            .flatten()
            .map(|m| (m.container_id(), m.host_id(), m.size()))
            .collect()
    };
    let l = spec.linux().as_ref();
    (
        IdMap {
            uids: l.map(|l| lines(l.uid_mappings())).unwrap_or_default(),
            gids: l.map(|l| lines(l.gid_mappings())).unwrap_or_default(),
        },
        None,
    )
}

/// What the filesystem phase is asked, from the hardened spec (pure): the writable paths (with the
/// owner and mode of a directory the image lacks), the mount targets to make, the caller's
/// `tmpcopyup` tmpfs.
pub fn rootfs_request(
    spec: &Spec,
) -> (
    Vec<WritableRequest>,
    Vec<(PathBuf, bool)>,
    Vec<CopyupRequest>,
) {
    let mounts: Vec<&Mount> = spec.mounts().iter().flatten().collect();
    let user = spec
        .process()
        .as_ref()
        .map(|p| (p.user().uid(), p.user().gid()))
        .unwrap_or((0, 0));
    let cwd = spec.process().as_ref().map(|p| normal_abs(p.cwd()));
    let home = spec.process().as_ref().and_then(|p| {
        p.env()
            .iter()
            .flatten()
            .find_map(|e| e.strip_prefix("HOME="))
            .map(|h| normal_abs(Path::new(h)))
    });
    let mut writable = Vec::new();
    let mut copyups = Vec::new();
    for m in &mounts {
        let dest = normal_abs(m.destination());
        let o = m.options().clone().unwrap_or_default();
        if is_writable_path(m) {
            let shared = dest == Path::new("/tmp") || dest == Path::new("/var/tmp");
            // the process's own directories are its user's; the shared scratch is everybody's
            let own = cwd.as_ref() == Some(&dest) || home.as_ref() == Some(&dest);
            writable.push(WritableRequest {
                create_mode: if shared { 0o1777 } else { 0o755 },
                create_owner: if own && !shared { user } else { (0, 0) },
                dest,
            });
        } else if m.typ().as_deref() == Some("tmpfs") && o.iter().any(|x| x == "tmpcopyup") {
            let (data, _, _) = crate::mountapi::split_mount_options(&o);
            copyups.push(CopyupRequest { dest, data });
        }
    }
    // mount targets: every destination not below another mount (those are made inside that mount
    // by libcontainer), and the working directory; rloxsc's writable paths are made by the phase
    let dests: Vec<PathBuf> = mounts.iter().map(|m| normal_abs(m.destination())).collect();
    let mut targets = Vec::new();
    for (m, dest) in mounts.iter().zip(&dests) {
        let nested = dests.iter().any(|d| d != dest && dest.starts_with(d));
        if nested || dest == Path::new("/") || is_writable_path(m) {
            continue;
        }
        let file = crate::specmount::is_bind(m)
            && m.source()
                .as_ref()
                .and_then(|s| std::fs::metadata(s).ok())
                .is_some_and(|md| !md.is_dir());
        targets.push((dest.clone(), file));
    }
    if let Some(c) = cwd {
        if c != Path::new("/")
            && !dests
                .iter()
                .any(|d| c.starts_with(d) && d != Path::new("/"))
        {
            targets.push((c, false));
        }
    }
    (writable, targets, copyups)
}

/// The spec libcontainer is given (pure): the hardened spec with its root at the root overlay, each
/// writable path bound from what the filesystem phase made (or dropped, when it stays read-only),
/// each `tmpcopyup` tmpfs bound from its overlay.
pub fn libcontainer_spec(hardened: &Spec, made: &rootfs::Assembled) -> Spec {
    let mut spec = hardened.clone();
    if let Some(r) = spec.root_mut().as_mut() {
        r.set_path(made.root.clone());
    }
    let mut out = Vec::new();
    for m in spec.mounts().clone().unwrap_or_default() {
        let dest = normal_abs(m.destination());
        let mut m = m;
        if is_writable_path(&m) {
            let Some(w) = made.writable.iter().find(|w| w.dest == dest) else {
                continue; // stays read-only
            };
            m.set_source(Some(w.source.clone()));
            let o: Vec<String> = m
                .options()
                .clone()
                .unwrap_or_default()
                .into_iter()
                .filter(|o| o != WRITABLE_MARK)
                .collect();
            m.set_options(Some(o));
        } else if let Some((_, src)) = made.copyups.iter().find(|(d, _)| *d == dest) {
            let o = m.options().clone().unwrap_or_default();
            let (_, _, flags) = crate::mountapi::split_mount_options(&o);
            let mut opts = vec!["bind".to_string()];
            opts.extend(flags);
            m.set_typ(Some("bind".into()));
            m.set_source(Some(src.clone()));
            m.set_options(Some(opts));
        }
        out.push(m);
    }
    spec.set_mounts(Some(out));
    spec
}

/// Phase 5, filesystem: the view directory, the root overlay and writable paths, the views of binds
/// and namespaces, the client's view. Returns the spec for libcontainer.
pub(super) fn filesystem(
    ctx: &Context,
    id: &str,
    input: &Input,
    identity: &Identity,
    hardened: &Hardened,
    deadline: Instant,
    fp: &mut Footprint,
) -> Result<(Spec, rootfs::Assembled, ViewDir)> {
    let (mapping, own_mapping) = mappings(&identity.plan, identity.alloc, &hardened.spec);
    let own_mapping = own_mapping.as_ref();
    let layout = &ctx.layout;
    let rootfs_path = input.host.rootfs.clone();
    let mounts = crate::mountinfo::own()?;
    let source = crate::rootfs::layers::of(&rootfs_path, &mounts)?;
    let caller_readonly = input
        .caller_spec
        .root()
        .as_ref()
        .and_then(|r| r.readonly())
        .unwrap_or(false);
    let writes = rootfs::writes_for(&source, caller_readonly, own_mapping.is_some());
    let (mut views, token) = make_view_dir(layout, id, &mapping, fp)?;
    let (writable, targets, copyups) = rootfs_request(&hardened.spec);
    let req = rootfs::Request {
        rootfs: &rootfs_path,
        source: &source,
        own_mapping,
        mapping: &mapping,
        store: StoreSize::of_bytes(hardened.store_bytes),
        disk: crate::limits::disk::Want {
            bytes: hardened.policy.disk_bytes.default,
            required: hardened.policy.disk_required,
            deadline,
        },
        caller_readonly,
        keep_at: layout.bundle_dir(id).join("layer"),
        writable,
        targets,
        copyups,
    };
    // the client's layer is in the ledger before it is acquired
    let mut kept = None;
    if let (rootfs::Writes::Layer, Source::Overlay { upper, .. }) = (writes, &source) {
        let k = rootfs::layer::Kept::plan(upper, req.keep_at.clone(), &token)?;
        fp.record(|l| l.layer = Some(k.clone()))?;
    }
    let made = rootfs::assemble(&req, &mut views, &token, &mut kept)?;
    fp.record(|l| l.writes = Some(made.writes))?;
    report_read_only(id, &made, own_mapping.is_some());
    let lc = views_for_libcontainer(&hardened.spec, &mut views, own_mapping, &mapping, &made)?;
    if made.writes == rootfs::Writes::Layer {
        fp.record(|l| {
            l.host_view = Some(HostView {
                rootfs: rootfs_path.clone(),
                tag: made.tag.clone(),
            });
        })?;
        rootfs::hostview::attach(&rootfs_path, &made.root, &made.tag, &made.writable)?;
    }
    Ok((lc, made, views))
}

/// The container's view directory, recorded in the footprint before it is made, and its token.
fn make_view_dir(
    layout: &Layout,
    id: &str,
    mapping: &IdMap,
    fp: &mut Footprint,
) -> Result<(ViewDir, String)> {
    let views_dir = crate::views::dir_for(layout.root(), id);
    fp.record(|l| l.views = Some(views_dir.clone()))?;
    let views = ViewDir::make(
        &views_dir,
        mapping.root().0,
        &format!("{}\n{}\n", layout.root().display(), id),
    )?;
    let token = views_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok((views, token))
}

/// Logs the writable paths that stay read-only, and image layers rloxsc's block could not idmap.
fn report_read_only(id: &str, made: &rootfs::Assembled, own_mapping: bool) {
    for (p, why) in &made.skipped {
        tracing::info!(
            "container {id}: {} stays read-only: {why} (policy key {})",
            p.display(),
            keys::WRITABLE
        );
    }
    if !made.idmapped && own_mapping {
        tracing::info!(
            "container {id}: the image's layers could not be idmapped: its files show as nobody's inside (policy key {})",
            keys::USERNS
        );
    }
}

/// The spec for libcontainer: `spec` with its binds, tmpfs and namespace paths made views.
fn views_for_libcontainer(
    spec: &Spec,
    views: &mut ViewDir,
    own_mapping: Option<&IdMap>,
    mapping: &IdMap,
    made: &rootfs::Assembled,
) -> Result<Spec> {
    // binds, tmpfs and namespace paths as views (rloxsc's writable paths and the tmpcopyup tmpfs,
    // still marked as such, are left to libcontainer_spec)
    let mut prepared = spec.clone();
    let bind_mapping = own_mapping.or_else(|| {
        let one_block = |v: &[(u32, u32, u32)]| v.len() == 1 && v[0].0 == 0;
        (one_block(&mapping.uids) && one_block(&mapping.gids)).then_some(mapping)
    });
    crate::views::prepare(&mut prepared, views, bind_mapping, mapping)?;
    Ok(libcontainer_spec(&prepared, made))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harden::testutil::*;
    use crate::launch::identity::plan_identity;
    use oci_spec::runtime::LinuxNamespaceType;

    #[test]
    fn a_caller_with_its_own_mapping_keeps_it() {
        let mut s = careless_spec();
        let l = s.linux_mut().get_or_insert_with(Default::default);
        let m = vec![oci_spec::runtime::LinuxIdMappingBuilder::default()
            .container_id(0u32)
            .host_id(100000u32)
            .size(65536u32)
            .build()
            .unwrap()];
        l.set_uid_mappings(Some(m.clone()));
        l.set_gid_mappings(Some(m));
        let mut ns = l.namespaces().clone().unwrap_or_default();
        ns.push(
            oci_spec::runtime::LinuxNamespaceBuilder::default()
                .typ(LinuxNamespaceType::User)
                .build()
                .unwrap(),
        );
        l.set_namespaces(Some(ns));
        assert_eq!(plan_identity(&s, &facts()).unwrap(), IdentityPlan::Callers);
        let (mapping, own) = mappings(&IdentityPlan::Callers, None, &s);
        assert!(own.is_none());
        assert_eq!(mapping.host_uid(0), Some(100000));
    }

    fn mount(dest: &str, typ: &str, src: &str, o: &[&str]) -> Mount {
        let mut m = Mount::default();
        m.set_destination(dest.into());
        m.set_typ(Some(typ.into()));
        m.set_source(Some(src.into()));
        m.set_options(Some(o.iter().map(|s| s.to_string()).collect()));
        m
    }

    #[test]
    fn the_request_names_writable_paths_targets_and_copyups() {
        let mut s = careless_spec();
        let mut p = s.process().clone().unwrap();
        p.set_cwd("/work".into());
        let mut u = p.user().clone();
        u.set_uid(1000);
        u.set_gid(1000);
        p.set_user(u);
        s.set_process(Some(p));
        let src = crate::harden::filesystem::WRITABLE_SOURCE;
        s.set_mounts(Some(vec![
            mount("/proc", "proc", "proc", &[]),
            mount("/dev", "tmpfs", "tmpfs", &["size=64k"]),
            mount("/dev/pts", "devpts", "devpts", &[]),
            mount("/tmp", "bind", src, &["bind", WRITABLE_MARK]),
            mount("/work", "bind", src, &["bind", WRITABLE_MARK]),
            mount("/tmp/vol", "bind", "/srv/vol", &["rbind"]),
            mount("/run", "tmpfs", "tmpfs", &["size=64k", "tmpcopyup"]),
            mount("/sbin/docker-init", "bind", "/nonexistent-file", &["bind"]),
        ]));
        let (w, t, c) = rootfs_request(&s);
        assert_eq!(
            w,
            vec![
                WritableRequest {
                    dest: "/tmp".into(),
                    create_mode: 0o1777,
                    create_owner: (0, 0)
                },
                WritableRequest {
                    dest: "/work".into(),
                    create_mode: 0o755,
                    create_owner: (1000, 1000)
                },
            ]
        );
        let dests: Vec<&Path> = t.iter().map(|(d, _)| d.as_path()).collect();
        assert!(dests.contains(&Path::new("/proc")) && dests.contains(&Path::new("/dev")));
        assert!(
            !dests.contains(&Path::new("/dev/pts")),
            "made inside /dev by libcontainer"
        );
        assert!(
            !dests.contains(&Path::new("/tmp/vol")),
            "made inside /tmp's writable path"
        );
        assert!(
            !dests.contains(&Path::new("/work")),
            "a writable path is made by the phase"
        );
        assert!(dests.contains(&Path::new("/sbin/docker-init")));
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].dest, PathBuf::from("/run"));
    }

    #[test]
    fn libcontainer_gets_the_overlay_and_the_made_writable_paths_only() {
        let mut s = careless_spec();
        let src = crate::harden::filesystem::WRITABLE_SOURCE;
        s.set_mounts(Some(vec![
            mount(
                "/tmp",
                "bind",
                src,
                &["bind", "nosuid", "nodev", WRITABLE_MARK],
            ),
            mount("/var/tmp", "bind", src, &["bind", WRITABLE_MARK]),
            mount(
                "/run",
                "tmpfs",
                "tmpfs",
                &["size=64k", "tmpcopyup", "nosuid"],
            ),
        ]));
        let made = rootfs::Assembled {
            root: "/v/1-root".into(),
            writes: rootfs::Writes::Scratch,
            store: Some("/v/2-store".into()),
            layer: None,
            disk: crate::limits::disk::Bound::Store { bytes: 1 << 20 },
            tag: "rloxsc-x".into(),
            idmapped: true,
            writable: vec![rootfs::Writable {
                dest: "/tmp".into(),
                source: "/v/3-w0-tmp".into(),
                host: None,
            }],
            skipped: vec![("/var/tmp".into(), "symlink".into())],
            copyups: vec![("/run".into(), "/v/4-c0".into())],
        };
        let lc = libcontainer_spec(&s, &made);
        assert_eq!(lc.root().as_ref().unwrap().path(), Path::new("/v/1-root"));
        let ms = lc.mounts().clone().unwrap();
        assert_eq!(ms.len(), 2, "/var/tmp stays read-only: {ms:?}");
        assert_eq!(ms[0].source().as_deref(), Some(Path::new("/v/3-w0-tmp")));
        assert!(!ms[0]
            .options()
            .clone()
            .unwrap()
            .iter()
            .any(|o| o == WRITABLE_MARK));
        assert_eq!(ms[1].typ().as_deref(), Some("bind"));
        assert_eq!(ms[1].source().as_deref(), Some(Path::new("/v/4-c0")));
        assert!(!ms[1]
            .options()
            .clone()
            .unwrap()
            .iter()
            .any(|o| o == "tmpcopyup"));
    }
}
