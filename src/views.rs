//! The container's views of host paths, made by rloxsc from outside before libcontainer creates the
//! container. libcontainer's init opens the rootfs, every bind source and every namespace path *after*
//! it entered the container's user namespace, as the container's unprivileged host uid, which cannot
//! get through the state directories clients keep them in (containerd's and Docker's are 0700/0710).
//! So rloxsc clones each of them (`open_tree(OPEN_TREE_CLONE)`: a detached mount of exactly that
//! tree, no path) and attaches it in a directory only the container's root and host root can enter:
//! a small tmpfs at `/run/rloxsc-views/<name>`, mode 0700, owned by the container's host root uid.
//! The spec then names those paths. The root overlay and the writable paths of [`crate::rootfs`]
//! live there too.
//!
//! A bind is idmapped onto the owner of its source (Linux 5.12+, where its filesystem allows): that
//! owner is the container's root, the container's other ids keep their numbers on the host, so the
//! container's root can use a bind as the directory's owner can (a 0700 one too), and what it creates
//! there belongs on the host to the directory's owner, as under runc without a user namespace.

use std::os::fd::OwnedFd;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use oci_spec::runtime::{LinuxNamespaceType, Spec};

use crate::idmap::IdMap;
use crate::mountapi;

/// Where the per-container view directories live (mode 0711: entered, never listed).
pub const VIEWS_DIR: &str = "/run/rloxsc-views";

/// The view directory of one container, until it is detached.
#[derive(Debug)]
pub struct ViewDir {
    /// `/run/rloxsc-views/<name>`.
    pub dir: PathBuf,
    /// `<dir>/v`, a mount of its own holding every view the container keeps copies of, so that one
    /// detach (one unmount, one RCU grace period) takes them all off the host once it is created.
    views: PathBuf,
    next: usize,
}

/// The directory in a view directory that holds the views (a mount of its own).
const VIEWS_SUBDIR: &str = "v";

impl ViewDir {
    /// Makes the directory `dir` (a [`dir_for`] path): a private tmpfs only `owner` (the container's
    /// host root uid) and root can enter, holding a file `owner` that says `label` (the state root and
    /// the container id). A directory left there by a killed runtime is replaced.
    pub fn make(dir: &Path, owner: u32, label: &str) -> Result<ViewDir> {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o711)
            .create(VIEWS_DIR)
            .with_context(|| format!("cannot create {VIEWS_DIR}"))?;
        crate::trust::require_root_only(Path::new(VIEWS_DIR), "views directory")?;
        let dir = dir.to_path_buf();
        ViewDir::remove(&dir);
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        let fs = mountapi::tmpfs(
            &[
                ("size".into(), (1u64 << 20).to_string()),
                ("mode".into(), "700".into()),
                ("uid".into(), owner.to_string()),
                ("gid".into(), owner.to_string()),
            ],
            0,
        )?;
        mountapi::attach(&fs, &dir).inspect_err(|_| {
            let _ = std::fs::remove_dir(&dir);
        })?;
        // private: nothing attached below it propagates to the host's other mount namespaces
        mountapi::open_attached(&dir)
            .and_then(|m| mountapi::set_propagation(&m, libc::MS_PRIVATE))?;
        // whose it is, for `doctor` and for tests that look for leftovers
        crate::fsutil::write_new(&dir.join("owner"), label.as_bytes(), 0o600)?;
        // the views' own mount: a bind of a directory of the tmpfs onto itself
        let views = dir.join(VIEWS_SUBDIR);
        std::fs::DirBuilder::new()
            .mode(0o755)
            .create(&views)
            .with_context(|| format!("cannot create {}", views.display()))?;
        let m = mountapi::clone_path(&views, false)?;
        mountapi::attach(&m, &views)?;
        Ok(ViewDir {
            dir,
            views,
            next: 0,
        })
    }

    /// A new entry (directory, or empty file when `file`) to attach a view on.
    pub fn entry(&mut self, name: &str, file: bool) -> Result<PathBuf> {
        let p = self.entry_in(&self.views.clone(), name);
        if file {
            crate::fsutil::write_new(&p, b"", 0o644)?;
        } else {
            std::fs::DirBuilder::new().mode(0o755).create(&p)?;
        }
        Ok(p)
    }

    fn entry_in(&mut self, parent: &Path, name: &str) -> PathBuf {
        self.next += 1;
        parent.join(format!("{}-{name}", self.next))
    }

    /// Attaches `mnt` as a view that stays on the host after [`ViewDir::detach_views`] (the
    /// store: `update` resizes it); returns its path.
    pub fn add_kept(&mut self, mnt: &OwnedFd, name: &str) -> Result<PathBuf> {
        let p = self.entry_in(&self.dir.clone(), name);
        std::fs::DirBuilder::new().mode(0o755).create(&p)?;
        mountapi::attach(mnt, &p)?;
        Ok(p)
    }

    /// Attaches `mnt` as a new view; returns its path.
    pub fn add(&mut self, mnt: &OwnedFd, name: &str, file: bool) -> Result<PathBuf> {
        let p = self.entry(name, file)?;
        mountapi::attach(mnt, &p)?;
        Ok(p)
    }

    /// Detaches the whole directory from the host (the container keeps its copies).
    pub fn remove(path: &Path) {
        mountapi::detach(path);
        let _ = std::fs::remove_dir(path);
    }

    /// Detaches every view but the kept ones ([`ViewDir::add_kept`]) from the host, in one unmount:
    /// the container's mount namespace holds its own copies of them.
    pub fn detach_views(&self) {
        mountapi::detach(&self.views);
    }
}

/// The view directory of container `id` under state root `root`: named by a hash of both, so a
/// `delete --force` after a runtime killed before it recorded anything still finds (and detaches)
/// it. The name needs no secrecy: only host root and the container's own root uid can enter it.
pub fn dir_for(root: &Path, id: &str) -> PathBuf {
    let root = crate::fsutil::canonical_state_root(root);
    let hash = |seed: u64| {
        let mut h = seed;
        for b in root
            .as_os_str()
            .as_encoded_bytes()
            .iter()
            .chain(&[0])
            .chain(id.as_bytes())
        {
            h = (h ^ *b as u64).wrapping_mul(0x100_0000_01b3);
        }
        h
    };
    Path::new(VIEWS_DIR).join(format!(
        "{:016x}{:016x}",
        hash(0xcbf2_9ce4_8422_2325),
        hash(0x6c62_272e_07bb_0142)
    ))
}

/// A detached, read-only sysfs of the network namespace at `netns`: made from outside, with the
/// host's privileges, for a container that joins a network namespace its own user namespace does not
/// own (mounting sysfs needs CAP_SYS_ADMIN over the owner of the network namespace, which the
/// container's root does not have). The calling thread enters `netns` for the creation and returns.
pub fn detached_sysfs_of(netns: &Path) -> Result<OwnedFd> {
    crate::network::in_network_namespace(netns, mountapi::sysfs)
}

/// Splits a tmpfs mount's options into the filesystem's `key=value` data (uid and gid translated to
/// host ids by `mapping`; the root owned by the container's root unless they say otherwise), the
/// atime attributes the mount is made with (a mount a user namespace receives has its atime locked:
/// the bind could not change it), and the flags that go on the bind of it (only ones that restrict).
pub fn tmpfs_options(
    options: &[String],
    mapping: &IdMap,
) -> (Vec<(String, String)>, u64, Vec<String>) {
    let (data, attrs, flags) = mountapi::split_mount_options(options);
    let (root_uid, root_gid) = mapping.root();
    let mut out = Vec::with_capacity(data.len() + 2);
    let (mut uid, mut gid) = (false, false);
    for (k, v) in data {
        match k.as_str() {
            "uid" => {
                uid = true;
                let h = v
                    .parse::<u32>()
                    .ok()
                    .and_then(|id| mapping.host_uid(id))
                    .unwrap_or(root_uid);
                out.push((k, h.to_string()));
            }
            "gid" => {
                gid = true;
                let h = v
                    .parse::<u32>()
                    .ok()
                    .and_then(|id| mapping.host_gid(id))
                    .unwrap_or(root_gid);
                out.push((k, h.to_string()));
            }
            _ => out.push((k, v)),
        }
    }
    if !uid {
        out.push(("uid".into(), root_uid.to_string()));
    }
    if !gid {
        out.push(("gid".into(), root_gid.to_string()));
    }
    (out, attrs, flags)
}

/// Drops the idmap options and per-mount mappings from `spec`'s mounts: once the container exists
/// its mounts are made (rloxsc idmapped them, [`prepare`]), and libcontainer refuses a spec that
/// names idmapped mounts when it later reads it again (`exec` loads the container's config: found
/// through containerd 2.x, whose user-namespace pods' binds carry `idmap`).
pub fn forget_mount_idmaps(spec: &mut Spec) {
    for m in spec.mounts_mut().iter_mut().flatten() {
        if let Some(o) = m.options().clone() {
            m.set_options(Some(
                o.into_iter()
                    .filter(|o| o != "idmap" && o != "ridmap")
                    .collect(),
            ));
        }
        m.set_uid_mappings(None);
        m.set_gid_mappings(None);
    }
}

fn mapping_lines(v: &[oci_spec::runtime::LinuxIdMapping]) -> Vec<(u32, u32, u32)> {
    v.iter()
        .map(|x| (x.container_id(), x.host_id(), x.size()))
        .collect()
}

/// Rewrites `spec` so libcontainer reaches every bind source, namespace path and tmpfs through views
/// in `views` (see the module documentation). `own_mapping` is the container's mapping when it is
/// one block from container id 0 (rloxsc's, or a caller's such as Podman's `userns = "auto"`):
/// binds are then idmapped onto their source's owner. `mapping` is the container's mapping either
/// way (tmpfs owners).
/// rloxsc's writable paths and `tmpcopyup` tmpfs are [`crate::rootfs`]'s, not touched here.
pub fn prepare(
    spec: &mut Spec,
    views: &mut ViewDir,
    own_mapping: Option<&IdMap>,
    mapping: &IdMap,
) -> Result<()> {
    let user = spec
        .process()
        .as_ref()
        .map(|p| (p.user().uid(), p.user().gid()))
        .unwrap_or((0, 0));
    if let Some(mounts) = spec.mounts_mut().as_mut() {
        for m in mounts.iter_mut() {
            let opts = m.options().clone().unwrap_or_default();
            if opts
                .iter()
                .any(|o| o == crate::harden::filesystem::WRITABLE_MARK)
            {
                continue;
            }
            if crate::specmount::is_bind(m) {
                bind_view(m, &opts, views, own_mapping, user)?;
            } else if m.typ().as_deref() == Some("tmpfs")
                && m.destination() != Path::new("/dev")
                && !opts.iter().any(|o| o == "tmpcopyup")
            {
                tmpfs_view(m, &opts, views, mapping)?;
            }
        }
    }

    // a joined network namespace, in a user namespace: its sysfs is made from outside (see
    // detached_sysfs_of) and bound in, read-only, where the spec mounts sysfs
    let nss = spec
        .linux()
        .as_ref()
        .and_then(|l| l.namespaces().clone())
        .unwrap_or_default();
    let has_userns = nss.iter().any(|n| n.typ() == LinuxNamespaceType::User);
    let joined_net = nss
        .iter()
        .find(|n| n.typ() == LinuxNamespaceType::Network)
        .and_then(|n| n.path().clone());
    if let (true, Some(net)) = (has_userns, joined_net) {
        // its network sysctls, written from outside (the container's root could not)
        if let Some(sysctl) = spec
            .linux_mut()
            .as_mut()
            .and_then(|l| l.sysctl_mut().as_mut())
        {
            let net_keys: Vec<(String, String)> = sysctl
                .iter()
                .filter(|(k, _)| k.starts_with("net."))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            crate::network::write_sysctls_in(&net, &net_keys)?;
            sysctl.retain(|k, _| !k.starts_with("net."));
        }
        for m in spec.mounts_mut().iter_mut().flatten() {
            if m.typ().as_deref() != Some("sysfs") {
                continue;
            }
            let fs = detached_sysfs_of(&net)?;
            let view = views.add(&fs, "sysfs", false)?;
            m.set_typ(Some("bind".into()));
            m.set_source(Some(view));
            m.set_options(Some(
                ["bind", "ro", "nosuid", "nodev", "noexec"]
                    .map(String::from)
                    .to_vec(),
            ));
        }
    }

    // namespace paths outside /proc (a CNI's netns file, containerd's pinned namespaces)
    if let Some(nss) = spec
        .linux_mut()
        .as_mut()
        .and_then(|l| l.namespaces_mut().as_mut())
    {
        for ns in nss.iter_mut() {
            let Some(p) = ns.path().clone() else { continue };
            if p.starts_with("/proc") {
                continue;
            }
            let clone = mountapi::clone_path(&p, false)?;
            let view = views.add(&clone, &format!("ns-{}", ns.typ()), true)?;
            ns.set_path(Some(view));
        }
    }
    Ok(())
}

/// A bind's source as a view, idmapped as the caller asks or onto its source's owner.
fn bind_view(
    m: &mut oci_spec::runtime::Mount,
    opts: &[String],
    views: &mut ViewDir,
    own_mapping: Option<&IdMap>,
    user: (u32, u32),
) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let Some(src) = m.source().clone() else {
        return Ok(());
    };
    let recursive = crate::specmount::is_recursive_bind(m);
    let clone = mountapi::clone_path(&src, recursive).with_context(|| {
        format!(
            "bind source {} of {}",
            src.display(),
            m.destination().display()
        )
    })?;
    // the owner of what was cloned, not of whatever the path names a moment later
    let md = std::fs::File::from(clone.try_clone()?).metadata()?;
    let wants_idmap = opts.iter().any(|o| o == "idmap" || o == "ridmap")
        || m.uid_mappings().as_ref().is_some_and(|v| !v.is_empty());
    if wants_idmap {
        let own = match (m.uid_mappings(), m.gid_mappings()) {
            (Some(u), Some(g)) if !u.is_empty() && !g.is_empty() => Some(
                IdMap {
                    uids: mapping_lines(u),
                    gids: mapping_lines(g),
                }
                .namespace()?,
            ),
            _ => None,
        };
        let ns = match own {
            Some(ns) => ns,
            None => own_mapping
                .context("a bind asks for an idmap but the container has no user namespace (policy key userns.mode)")?
                .namespace()?,
        };
        mountapi::idmap(&clone, &ns, opts.iter().any(|o| o == "ridmap") || recursive)
            .with_context(|| format!("cannot idmap the bind of {} (its filesystem may not support idmapped mounts; Linux 5.12+)", src.display()))?;
        let kept: Vec<String> = opts
            .iter()
            .filter(|o| *o != "idmap" && *o != "ridmap")
            .cloned()
            .collect();
        m.set_options(Some(kept));
        m.set_uid_mappings(None);
        m.set_gid_mappings(None);
    } else if let Some(map) = own_mapping
        // a directory the container's ids own already (Podman's `:U`) is the container's as it is
        .filter(|om| om.container_uid(md.uid()).is_none())
        .and_then(|om| om.for_owner((md.uid(), md.gid()), user))
    {
        let ns = map.namespace()?;
        if let Err(e) = mountapi::idmap(&clone, &ns, recursive) {
            tracing::info!(
                "the bind of {} onto {} cannot be idmapped ({e}; its filesystem does not allow it): the container sees its files with their host ids",
                src.display(),
                m.destination().display()
            );
        }
    }
    let name = m
        .destination()
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "mount".into());
    let view = views.add(&clone, &name, !md.is_dir())?;
    m.set_source(Some(view));
    Ok(())
}

/// The source name a caller's own tmpfs is made with: the caller's, as runc shows it in
/// `/proc/mounts` (`tmpfs /mnt tmpfs ro,...`), unless it would pass for one of rloxsc's own mount
/// names (`rloxsc-...`); `tmpfs` when it gives none.
fn tmpfs_source(caller: Option<&Path>) -> String {
    caller
        .map(|s| s.to_string_lossy().into_owned())
        .filter(|s| !s.is_empty() && !s.starts_with("rloxsc-") && !s.contains(','))
        .unwrap_or_else(|| "tmpfs".to_string())
}

/// A tmpfs made from outside (so that it belongs to the host's user namespace and a client that
/// writes into the container as host root, `podman cp`, can), its root the container root's.
fn tmpfs_view(
    m: &mut oci_spec::runtime::Mount,
    opts: &[String],
    views: &mut ViewDir,
    mapping: &IdMap,
) -> Result<()> {
    if mapping.uids.is_empty() {
        // no user namespace: libcontainer makes it
        return Ok(());
    }
    let (mut data, attrs, flags) = tmpfs_options(opts, mapping);
    data.push(("source".into(), tmpfs_source(m.source().as_deref())));
    let fs = mountapi::tmpfs(&data, attrs)
        .with_context(|| format!("cannot make the tmpfs for {}", m.destination().display()))?;
    let name = m
        .destination()
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "tmpfs".into());
    let view = views.add(&fs, &name, false)?;
    m.set_typ(Some("bind".into()));
    m.set_source(Some(view));
    let mut o = vec!["bind".to_string()];
    o.extend(flags);
    m.set_options(Some(o));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_callers_tmpfs_keeps_its_source_name() {
        assert_eq!(tmpfs_source(Some(Path::new("tmpfs"))), "tmpfs");
        assert_eq!(tmpfs_source(Some(Path::new("shm"))), "shm");
        assert_eq!(tmpfs_source(None), "tmpfs");
        // never one of rloxsc's own names
        assert_eq!(tmpfs_source(Some(Path::new("rloxsc-abc-store"))), "tmpfs");
    }

    #[test]
    fn a_tmpfs_root_is_the_containers_root_and_its_ids_are_mapped() {
        let m = IdMap::block(1 << 30, 65536);
        let o: Vec<String> = ["size=64k", "uid=1000", "noatime", "ro"]
            .map(String::from)
            .to_vec();
        let (data, attrs, flags) = tmpfs_options(&o, &m);
        assert!(data.contains(&("uid".into(), ((1u32 << 30) + 1000).to_string())));
        assert!(data.contains(&("gid".into(), (1u32 << 30).to_string())));
        assert_ne!(attrs, 0);
        assert_eq!(flags, vec!["ro".to_string()]);
    }
}
