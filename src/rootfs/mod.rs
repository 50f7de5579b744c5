//! The container's filesystem: one model for every path class (docs/SPECIFICATION.md,
//! `filesystem.*` rows; SECURITY.md "What the container may write"). **The runtime writes nothing
//! back**: the container's writes land where they belong as they are made, or are scratch.
//!
//! - **The root** is mounted **read-only** by libcontainer; what the container may write
//!   (`filesystem.writable`: its workdir, HOME, `/tmp`, ...) are **writable paths**, each a bind of
//!   the root's own subtree there (a *window*). What the root is depends on what the caller gave
//!   ([`Writes`]):
//!   - **[`Writes::Layer`]**, a client's overlay snapshot (Docker, Podman, containerd, CRI-O) with
//!     `root.readonly` false: an overlay rloxsc mounts from outside whose lower layers are the
//!     client's, idmapped onto the container's block of host ids, and whose upper layer is **the
//!     client's own upper layer** ([`layer`]), idmapped so that the container's id `k` is stored as
//!     `k` (the ids the client expects) and host root, overlayfs's own worker, as `65536`. The
//!     container's writes land in the client's layer as they are made, as under runc; `docker cp`,
//!     `docker commit`, `podman cp` and the CRI read the layer itself. [`hostview`] attaches the same
//!     overlay on the client's rootfs while the container lives, so a client's copy in or out sees
//!     what the container sees; what a client writes there as host root is given to the container
//!     before its next process starts ([`adopt`]).
//!   - **[`Writes::Mount`]**, where the client's rootfs mount can be used as it is (the caller brings
//!     its own user namespace, which its storage follows; a mount of its own that is not an overlay,
//!     idmapped where its filesystem can be; a client overlay on a kernel that cannot idmap overlayfs
//!     layers): a clone of the client's mount, so the container writes into it as under runc.
//!   - **[`Writes::Scratch`]**, where the caller gave no writable layer (a plain directory, or
//!     `root.readonly: true`): an overlay of the image (idmapped) over the container's **store**, one
//!     `nosuid,nodev` tmpfs sized by `[limits] store` (never above half the container's memory
//!     limit), whose pages are charged to the writing process's memory cgroup; gone at delete, never
//!     written into the rootfs or anything below it, and not shown on the rootfs.
//! - **Mount targets** the image lacks (Docker's `/sbin/docker-init`, a bind to a new path under
//!   `/usr`) are made in the root from outside (in the client's layer, as runc makes them; in the
//!   store for scratch), and the path stays read-only.
//!
//! Nothing of the image is copied at create, and nothing at delete. What rloxsc creates from
//! outside belongs to the container's root. Every path the image controls is resolved inside the
//! root (`openat2` `RESOLVE_IN_ROOT`), never on the host ([`inroot`]).

pub mod adopt;
pub mod hostview;
pub mod inroot;
pub mod layer;
pub mod layers;

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::fstree;
use crate::fsutil::{openat2, RESOLVE_NO_SYMLINKS};
use crate::idmap::IdMap;
use crate::limits::disk::Bound;
use crate::mountapi;
use crate::policy::keys;
use crate::views::ViewDir;
use inroot::{ensure_in_root, open_root, rel, resolve};
use layers::Source;

/// The container's store: its size in bytes and inodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoreSize {
    /// Bytes.
    pub bytes: u64,
    /// Inodes (files, directories, links).
    pub inodes: u64,
}

impl StoreSize {
    /// A store of `bytes`, with one inode per 4 KiB of it (at least 4096).
    pub fn of_bytes(bytes: u64) -> StoreSize {
        StoreSize {
            bytes,
            inodes: (bytes / 4096).max(4096),
        }
    }
}

/// A writable path to make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WritableRequest {
    /// Where (absolute, normal).
    pub dest: PathBuf,
    /// Mode and owner (container ids) of the directory when the image lacks it.
    pub create_mode: u32,
    /// Owner (container uid, gid) of the directory when the image lacks it.
    pub create_owner: (u32, u32),
}

/// A caller's tmpfs with `tmpcopyup` (runc's extension: the image's content there shows in it):
/// an overlay of the image's directory under that tmpfs, nothing copied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyupRequest {
    /// Where (absolute, normal).
    pub dest: PathBuf,
    /// The tmpfs's `key=value` options (size, mode, ...).
    pub data: Vec<(String, String)>,
}

/// What the rootfs phase is asked to do.
#[derive(Debug)]
pub struct Request<'a> {
    /// The caller's rootfs, canonical.
    pub rootfs: &'a Path,
    /// What it is made of.
    pub source: &'a Source,
    /// rloxsc's own mapping of the container (its layers are then idmapped); `None` when the caller
    /// brings its own user namespace, whose mapping its storage already follows.
    pub own_mapping: Option<&'a IdMap>,
    /// The container's mapping (rloxsc's or the caller's), for owners of what is created.
    pub mapping: &'a IdMap,
    /// The store's size (for scratch).
    pub store: StoreSize,
    /// The bound on what the container writes into the client's layer (`limits.disk`).
    pub disk: crate::limits::disk::Want,
    /// Whether the caller asked for a read-only root (`root.readonly`): its rootfs is then no
    /// writable layer, and the container's writes are scratch.
    pub caller_readonly: bool,
    /// Where the client's writable layer is kept attached for the container's life (in its state
    /// directory: see [`layer`]).
    pub keep_at: PathBuf,
    /// The writable paths.
    pub writable: Vec<WritableRequest>,
    /// Mount targets `(destination, is a file)` to make when the image lacks them.
    pub targets: Vec<(PathBuf, bool)>,
    /// The caller's `tmpcopyup` tmpfs mounts.
    pub copyups: Vec<CopyupRequest>,
}

/// Where the container's writes land (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Writes {
    /// In the client's own writable layer, the upper layer of rloxsc's overlay.
    Layer,
    /// In the client's rootfs mount itself.
    Mount,
    /// In the container's store: bounded, charged to it, gone at delete.
    Scratch,
}

impl Writes {
    /// How a record and `policy show` name it.
    pub fn name(self) -> &'static str {
        match self {
            Writes::Layer => "client-layer",
            Writes::Mount => "client-mount",
            Writes::Scratch => "scratch",
        }
    }
}

/// A writable path as made: a bind of the root's own subtree there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Writable {
    /// Where it is inside the container.
    pub dest: PathBuf,
    /// The bind source libcontainer mounts (in the view directory).
    pub source: PathBuf,
    /// For a *direct* path (the client's layer, where the image holds nothing there): its
    /// directory of the client's upper layer with the ids as stored, attached on the client's view
    /// of the container there (see [`direct_path`]).
    pub host: Option<PathBuf>,
}

/// What the rootfs phase made.
#[derive(Debug)]
pub struct Assembled {
    /// The root overlay, attached in the view directory: the spec's root for libcontainer.
    pub root: PathBuf,
    /// Where the container's writes land.
    pub writes: Writes,
    /// The store, attached in the view directory (scratch only).
    pub store: Option<PathBuf>,
    /// The client's writable layer as kept ([`Writes::Layer`] only).
    pub layer: Option<layer::Kept>,
    /// What bounds the bytes the container writes (`limits.disk`, or the store).
    pub disk: crate::limits::disk::Bound,
    /// The source name the root overlay and the store carry in mountinfo.
    pub tag: String,
    /// Whether the image's files are idmapped (the container's root owns them).
    pub idmapped: bool,
    /// The writable paths made.
    pub writable: Vec<Writable>,
    /// Writable paths left read-only, and why.
    pub skipped: Vec<(PathBuf, String)>,
    /// Caller tmpcopyup mounts made: destination and bind source.
    pub copyups: Vec<(PathBuf, PathBuf)>,
}

/// The source name of container view token `token`'s root overlay.
pub fn tag_of(token: &str) -> String {
    format!("rloxsc-{token}")
}

/// The layers of the root overlay, cloned (idmapped with `mapping` when given) and attached in the
/// view directory; returns their `O_PATH` fds and whether they are idmapped. One layer that cannot
/// be idmapped leaves them all as they are (the image's files then show as `nobody`), with a log
/// line naming the kernel feature.
fn stack_layers(
    layers: &[PathBuf],
    mapping: Option<&IdMap>,
    views: &mut ViewDir,
) -> Result<(Vec<OwnedFd>, bool)> {
    let ns = mapping.map(IdMap::namespace).transpose()?;
    let mut clones = Vec::with_capacity(layers.len());
    let mut idmapped = ns.is_some();
    for l in layers {
        let c = mountapi::clone_path(l, false)?;
        // a lower layer is never written through; its clone need not be writable either
        mountapi::set_attrs(&c, mountapi::ATTR_RDONLY, false)?;
        if let (Some(ns), true) = (&ns, idmapped) {
            if let Err(e) = mountapi::idmap(&c, ns, false) {
                tracing::warn!(
                    "the image's layer {} cannot be idmapped ({e}; overlayfs layers need Linux 5.19, a directory 5.12): the image's files show as nobody's inside (policy key {})",
                    l.display(),
                    keys::USERNS
                );
                idmapped = false;
            }
        }
        clones.push(c);
    }
    if ns.is_some() && !idmapped {
        // all or none: a stack mixing mapped and unmapped layers would show one file two ways
        clones = layers
            .iter()
            .map(|l| {
                let c = mountapi::clone_path(l, false)?;
                mountapi::set_attrs(&c, mountapi::ATTR_RDONLY, false)?;
                Ok(c)
            })
            .collect::<Result<_>>()?;
    }
    let mut fds = Vec::with_capacity(clones.len());
    for (i, c) in clones.iter().enumerate() {
        let at = views.add(c, &format!("l{i}"), false)?;
        fds.push(open_root(&at)?);
    }
    Ok((fds, idmapped))
}

/// Makes the store (a sized tmpfs, tagged `<tag>-store`) in the view directory, with `upper` and
/// `work` for the root overlay, `upper` shaped like the image's root directory (`top`).
fn make_store(views: &mut ViewDir, tag: &str, size: StoreSize, top: &OwnedFd) -> Result<PathBuf> {
    let fs = mountapi::tmpfs(
        &[
            ("source".into(), format!("{tag}-store")),
            ("size".into(), size.bytes.to_string()),
            ("nr_inodes".into(), size.inodes.to_string()),
            ("mode".into(), "0711".into()),
            ("huge".into(), "never".into()),
        ],
        0,
    )
    .with_context(|| {
        format!(
            "cannot make the container's store (policy key {})",
            keys::WRITABLE
        )
    })?;
    let store = views.add_kept(&fs, "store")?;
    let st = fstree::stat_fd(top.as_raw_fd())?;
    for (d, owner, mode) in [
        ("upper", (st.st_uid, st.st_gid), st.st_mode & 0o1777),
        ("work", (0, 0), 0o700),
    ] {
        let p = store.join(d);
        std::fs::create_dir(&p).with_context(|| format!("cannot create {}", p.display()))?;
        std::os::unix::fs::chown(&p, Some(owner.0), Some(owner.1))?;
        std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(mode))?;
    }
    Ok(store)
}

/// Mounts a `nosuid,nodev` overlay of the `lower` layers (overlayfs' `lowerdir=` list) at `target`,
/// its upper layer and work directory `upper` and `work`: no index, no redirects, no metacopy
/// (features that would make the upper layer point into the lower ones).
fn mount_overlay(
    tag: &str,
    target: &Path,
    lower: &str,
    upper: &Path,
    work: &Path,
) -> nix::Result<()> {
    let data = format!(
        "lowerdir={lower},upperdir={},workdir={},index=off,redirect_dir=off,metacopy=off",
        upper.display(),
        work.display()
    );
    nix::mount::mount(
        Some(tag),
        target,
        Some("overlay"),
        nix::mount::MsFlags::MS_NOSUID | nix::mount::MsFlags::MS_NODEV,
        Some(data.as_str()),
    )
}

/// Mounts the root overlay of `layers` (open at `fds`) over `upper` (work directory `work`) at
/// `target`.
fn mount_root(tag: &str, fds: &[OwnedFd], upper: &Path, work: &Path, target: &Path) -> Result<()> {
    // the layers by fd (/proc/self/fd/N): short, whatever their paths, so that even an image of
    // many layers fits in the page mount(2) takes
    let lower: Vec<String> = fds
        .iter()
        .map(|f| format!("/proc/self/fd/{}", f.as_raw_fd()))
        .collect();
    mount_overlay(tag, target, &lower.join(":"), upper, work).map_err(|e| {
        anyhow!(
            "cannot mount the container's root overlay: {e} (overlayfs over the image's layers; policy key {})",
            keys::ROOTFS
        )
    })
}

/// Where the container's writes land for `req` (see the module documentation); for a client's
/// overlay, [`Writes::Layer`] is the choice, and [`assemble`] falls back to [`Writes::Mount`]
/// where the kernel cannot idmap its layers.
pub fn writes_for(source: &Source, caller_readonly: bool, own_mapping: bool) -> Writes {
    match source {
        Source::Directory => Writes::Scratch,
        _ if caller_readonly => Writes::Scratch,
        Source::Overlay { .. } if own_mapping => Writes::Layer,
        _ => Writes::Mount,
    }
}

/// The root of [`Writes::Scratch`]: the image's layers (idmapped) over a store. Returns the root's
/// path, the store's and whether the layers are idmapped.
fn scratch_root(req: &Request, views: &mut ViewDir, tag: &str) -> Result<(PathBuf, PathBuf, bool)> {
    let layers = req.source.image_layers(req.rootfs);
    let (fds, idmapped) = stack_layers(&layers, req.own_mapping, views)?;
    let store = make_store(views, tag, req.store, &fds[0])?;
    let root = views.entry("root", false)?;
    mount_root(tag, &fds, &store.join("upper"), &store.join("work"), &root)?;
    Ok((root, store, idmapped))
}

/// The root of [`Writes::Layer`]: the client's lower layers (idmapped) over its own upper layer
/// (idmapped with the host's writers, see [`IdMap::with_host_writers`]). `None` (nothing acquired
/// but what `views` and the ledger hold) where the kernel cannot idmap the layers.
fn layer_root(
    req: &Request,
    views: &mut ViewDir,
    tag: &str,
    token: &str,
    kept: &mut Option<layer::Kept>,
) -> Result<Option<(PathBuf, Bound)>> {
    let Source::Overlay {
        lowers,
        upper,
        work,
    } = req.source
    else {
        bail!("not a client's overlay");
    };
    let Some(mapping) = req.own_mapping else {
        return Ok(None);
    };
    let writers = mapping.with_host_writers().ok_or_else(|| {
        anyhow!(
            "the container's id mapping is not one block from id 0 (policy key {})",
            keys::USERNS
        )
    })?;
    for l in lowers {
        crate::trust::require_root_only(l, "client's image layer")?;
    }
    let (fds, idmapped) = stack_layers(lowers, Some(mapping), views)?;
    if !idmapped {
        return Ok(None);
    }
    let k = layer::Kept::plan(upper, req.keep_at.clone(), token)?;
    *kept = Some(k.clone());
    let dir = k.acquire()?;
    let c = mountapi::clone_fd(&dir)?;
    mountapi::set_attrs(&c, mountapi::ATTR_NOSUID | mountapi::ATTR_NODEV, false)?;
    if let Err(e) = mountapi::idmap(&c, &writers.namespace()?, false) {
        tracing::warn!(
            "the client's writable layer {} cannot be idmapped ({e}; its filesystem does not allow it): the container's writes go into it as the client's rootfs mount takes them (policy key {})",
            upper.display(),
            keys::USERNS
        );
        return Ok(None);
    }
    // before the overlay exists: everything made in the layer from now on is in its project
    let bound = k.bound(&dir, work.as_deref(), req.disk)?;
    drop(dir);
    let u = views.add(&c, "u", false)?;
    let root = views.entry("root", false)?;
    mount_root(tag, &fds, &u.join(&k.upper), &u.join(&k.work), &root)?;
    Ok(Some((root, bound)))
}

/// The root of [`Writes::Mount`]: a clone of the client's rootfs mount, idmapped onto the
/// container's block (with the host's writers) where the container has rloxsc's mapping and the
/// filesystem allows it. Returns the root's path and whether it is idmapped.
fn mount_root_clone(req: &Request, views: &mut ViewDir) -> Result<(PathBuf, bool)> {
    let c = mountapi::clone_path(req.rootfs, false)?;
    mountapi::set_attrs(&c, mountapi::ATTR_NOSUID | mountapi::ATTR_NODEV, false)?;
    let mut idmapped = false;
    if let Some(m) = req.own_mapping {
        if matches!(req.source, Source::Overlay { .. }) {
            tracing::warn!(
                "the client's overlay layers cannot be idmapped on this kernel (Linux 5.19+): the image's files show as nobody's inside, and the container's writes are stored with its host ids (policy key {})",
                keys::USERNS
            );
        } else if let Some(w) = m.with_host_writers() {
            match mountapi::idmap(&c, &w.namespace()?, false) {
                Ok(()) => idmapped = true,
                Err(e) => tracing::warn!(
                    "the rootfs {} cannot be idmapped ({e}): its files show as nobody's inside (policy key {})",
                    req.rootfs.display(),
                    keys::USERNS
                ),
            }
        }
    }
    Ok((
        views.add(&c, "root", false)?,
        idmapped || req.own_mapping.is_none(),
    ))
}

/// A writable path on the client's layer where the image holds nothing (the directory open at `fd`
/// in the root `rootfd` is empty): the container gets its directory of the client's upper layer
/// itself, idmapped as the layer is, and the client's view gets the same directory with the ids as
/// stored, so what a client copies in there as host root is the container's root's at once, and
/// what either side writes the other sees at once (one directory, no overlay between: a
/// long-lived process polling for files a client copies in, llm-sandbox's interactive runner,
/// reads them without an `exec` in between). Returns the bind source and the host-side clone, or
/// `None` (a window, then) where the image has content there or the upper directory holds
/// overlayfs's whiteouts.
#[allow(clippy::too_many_arguments)]
fn direct_path(
    rootfd: &OwnedFd,
    fd: &OwnedFd,
    dest: &Path,
    k: &layer::Kept,
    mapping: &IdMap,
    views: &mut ViewDir,
    i: usize,
    name: &str,
) -> Result<Option<(PathBuf, PathBuf)>> {
    let merged = resolve(rootfd, dest, true, libc::O_RDONLY | libc::O_DIRECTORY)?;
    if !fstree::is_empty_dir(&merged)? {
        return Ok(None);
    }
    // copied up (the directory and the ones above it made in the upper layer), attributes as they
    // are: a chown to its own owner
    let st = fstree::stat_fd(fd.as_raw_fd())?;
    // SAFETY: fchownat of an fd we hold, with AT_EMPTY_PATH, to the owner it has
    fstree::check(unsafe {
        libc::fchownat(
            merged.as_raw_fd(),
            c"".as_ptr(),
            st.st_uid,
            st.st_gid,
            libc::AT_EMPTY_PATH,
        )
    })
    .with_context(|| format!("cannot copy {} up into the client's layer", dest.display()))?;
    let layer_dir = k.open()?;
    let r = rel(dest);
    let upper_rel = Path::new(&k.upper).join(&r);
    let upper = openat2(
        layer_dir.as_raw_fd(),
        &upper_rel,
        libc::O_RDONLY | libc::O_DIRECTORY,
        crate::fsutil::RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS,
    )
    .with_context(|| format!("cannot open {} in the client's layer", dest.display()))?;
    if !fstree::is_empty_dir(&upper)? {
        return Ok(None); // whiteouts of the image's entries
    }
    let writers = mapping
        .with_host_writers()
        .ok_or_else(|| anyhow!("the container's mapping is not one block"))?;
    let inside = mountapi::clone_fd(&upper)?;
    mountapi::set_attrs(&inside, mountapi::ATTR_NOSUID | mountapi::ATTR_NODEV, false)?;
    mountapi::idmap(&inside, &writers.namespace()?, false)
        .with_context(|| format!("cannot idmap {} of the client's layer", dest.display()))?;
    let source = views.add(&inside, &format!("d{i}-{name}"), false)?;
    let outside = mountapi::clone_fd(&upper)?;
    mountapi::set_attrs(
        &outside,
        mountapi::ATTR_NOSUID | mountapi::ATTR_NODEV,
        false,
    )?;
    let host = views.add(&outside, &format!("h{i}-{name}"), false)?;
    Ok(Some((source, host)))
}

/// The caller's tmpcopyup tmpfs mounts: each its own tmpfs as the upper layer of an overlay whose
/// lower is the root's directory there (the tmpfs alone where that directory is empty). Returns
/// each destination with its view.
fn make_copyups(
    req: &Request,
    views: &mut ViewDir,
    rootfd: &OwnedFd,
    root_owner: (u32, u32),
    tag: &str,
) -> Result<Vec<(PathBuf, PathBuf)>> {
    let mut copyups = Vec::new();
    for (i, c) in req.copyups.iter().enumerate() {
        let Some(fd) = ensure_in_root(rootfd, &c.dest, false, 0o755, root_owner, true)? else {
            bail!(
                "the image reaches the tmpcopyup mount {} through a symlink (policy key {})",
                c.dest.display(),
                keys::TMPFS
            );
        };
        let st = fstree::stat_fd(fd.as_raw_fd())?;
        let fs = mountapi::tmpfs(&c.data, 0)?;
        let t = views.add(&fs, &format!("c{i}-tmpfs"), false)?;
        if fstree::is_empty_dir(&fstree::open_dir_at(fd.as_raw_fd(), c".")?)? {
            // nothing of the image to show: the caller's tmpfs itself, as runc's copy of nothing
            // leaves it, with the image directory's owner and mode unless the caller set them
            let set = |k: &str| c.data.iter().any(|(key, _)| key == k);
            if !set("uid") && !set("gid") {
                std::os::unix::fs::chown(&t, Some(st.st_uid), Some(st.st_gid))?;
            }
            if !set("mode") {
                std::fs::set_permissions(
                    &t,
                    std::os::unix::fs::PermissionsExt::from_mode(st.st_mode & 0o1777),
                )?;
            }
            copyups.push((c.dest.clone(), t));
            continue;
        }
        let lower = views.add(&mountapi::clone_fd(&fd)?, &format!("c{i}-lower"), false)?;
        for (d, mode) in [("upper", st.st_mode & 0o1777), ("work", 0o700)] {
            let p = t.join(d);
            std::fs::create_dir(&p)?;
            if d == "upper" {
                std::os::unix::fs::chown(&p, Some(st.st_uid), Some(st.st_gid))?;
            }
            std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(mode))?;
        }
        let target = views.entry(&format!("c{i}"), false)?;
        mount_overlay(
            tag,
            &target,
            &lower.display().to_string(),
            &t.join("upper"),
            &t.join("work"),
        )
        .map_err(|e| {
            anyhow!(
                "cannot make the tmpcopyup mount {}: {e} (policy key {})",
                c.dest.display(),
                keys::TMPFS
            )
        })?;
        copyups.push((c.dest.clone(), target));
    }
    Ok(copyups)
}

/// The container's root as [`assemble`] first makes it: where it is, where its writes land, the
/// store (for scratch), whether its layers are idmapped, the bound on its writes.
struct Root {
    root: PathBuf,
    writes: Writes,
    store: Option<PathBuf>,
    idmapped: bool,
    disk: Bound,
}

/// The root for `req`'s writes: over a store, over the client's layer, or a clone of its mount.
fn make_root(
    req: &Request,
    views: &mut ViewDir,
    tag: &str,
    token: &str,
    kept: &mut Option<layer::Kept>,
) -> Result<Root> {
    let mut writes = writes_for(req.source, req.caller_readonly, req.own_mapping.is_some());
    let mut store = None;
    let (root, idmapped, disk) = match writes {
        Writes::Scratch => {
            let (root, st, idmapped) = scratch_root(req, views, tag)?;
            store = Some(st);
            let bytes = req.store.bytes;
            (root, idmapped, Bound::Store { bytes })
        }
        Writes::Layer => match layer_root(req, views, tag, token, kept)? {
            Some((root, bound)) => (root, true, bound),
            None => {
                writes = Writes::Mount;
                let bound = crate::limits::disk::client_mount(req.disk)?;
                let (root, idmapped) = mount_root_clone(req, views)?;
                (root, idmapped, bound)
            }
        },
        Writes::Mount => {
            let bound = crate::limits::disk::client_mount(req.disk)?;
            let (root, idmapped) = mount_root_clone(req, views)?;
            (root, idmapped, bound)
        }
    };
    Ok(Root {
        root,
        writes,
        store,
        idmapped,
        disk,
    })
}

/// The host ids of container ids `(u, g)` under `mapping` (an id it does not map stays as it is).
fn host_owner(mapping: &IdMap, (u, g): (u32, u32)) -> (u32, u32) {
    (
        mapping.host_uid(u).unwrap_or(u),
        mapping.host_gid(g).unwrap_or(g),
    )
}

/// The writable paths [`make_writable`] made, and those that stay read-only (with why).
struct WritablePaths {
    writable: Vec<Writable>,
    skipped: Vec<(PathBuf, String)>,
}

/// The writable paths: windows onto the root's subtree (or straight into the client's layer), and
/// those that stay read-only.
fn make_writable(
    req: &Request,
    views: &mut ViewDir,
    rootfd: &OwnedFd,
    writes: Writes,
    kept: Option<&layer::Kept>,
) -> Result<WritablePaths> {
    let mut writable = Vec::new();
    let mut skipped = Vec::new();
    for (i, w) in req.writable.iter().enumerate() {
        let Some(fd) = ensure_in_root(
            rootfd,
            &w.dest,
            false,
            w.create_mode,
            host_owner(req.mapping, w.create_owner),
            true,
        )?
        else {
            skipped.push((
                w.dest.clone(),
                "the image reaches it through a symlink".to_string(),
            ));
            continue;
        };
        let st = fstree::stat_fd(fd.as_raw_fd())?;
        if fstree::kind(&st) != fstree::Kind::Dir {
            skipped.push((
                w.dest.clone(),
                "the image has no directory there".to_string(),
            ));
            continue;
        }
        let name = w
            .dest
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "root".into());
        if let (Writes::Layer, Some(k), Some(m)) = (writes, kept, req.own_mapping) {
            if let Some((source, host)) = direct_path(rootfd, &fd, &w.dest, k, m, views, i, &name)?
            {
                writable.push(Writable {
                    dest: w.dest.clone(),
                    source,
                    host: Some(host),
                });
                continue;
            }
        }
        let c = mountapi::clone_fd(&fd)?;
        let source = views.add(&c, &format!("w{i}-{name}"), false)?;
        writable.push(Writable {
            dest: w.dest.clone(),
            source,
            host: None,
        });
    }
    Ok(WritablePaths { writable, skipped })
}

/// Builds the container's root (see the module documentation) in `views`, with token `token`.
/// `kept` is set before the client's layer is acquired, for the caller's ledger.
pub fn assemble(
    req: &Request,
    views: &mut ViewDir,
    token: &str,
    kept: &mut Option<layer::Kept>,
) -> Result<Assembled> {
    let tag = tag_of(token);
    let Root {
        root,
        writes,
        store,
        idmapped,
        disk,
    } = make_root(req, views, &tag, token, kept)?;
    let rootfd = open_root(&root)?;
    let root_owner = host_owner(req.mapping, (0, 0));

    // mount targets the image lacks, made in the root (as runc makes them in the rootfs)
    for (dest, file) in &req.targets {
        ensure_in_root(&rootfd, dest, *file, 0o755, root_owner, false)?;
    }

    // the writable paths: windows onto the root's subtree
    let WritablePaths { writable, skipped } =
        make_writable(req, views, &rootfd, writes, kept.as_ref())?;

    let copyups = make_copyups(req, views, &rootfd, root_owner, &tag)?;

    Ok(Assembled {
        root,
        writes,
        store,
        layer: kept.clone(),
        disk,
        tag,
        idmapped,
        writable,
        skipped,
        copyups,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_land_in_the_clients_layer_only_where_it_gave_one() {
        let overlay = Source::Overlay {
            lowers: vec!["/l".into()],
            upper: "/u".into(),
            work: None,
        };
        assert_eq!(writes_for(&overlay, false, true), Writes::Layer);
        assert_eq!(
            writes_for(&overlay, true, true),
            Writes::Scratch,
            "root.readonly"
        );
        assert_eq!(
            writes_for(&overlay, false, false),
            Writes::Mount,
            "the caller's userns"
        );
        assert_eq!(writes_for(&Source::OwnMount, false, true), Writes::Mount);
        assert_eq!(writes_for(&Source::OwnMount, true, true), Writes::Scratch);
        assert_eq!(writes_for(&Source::Directory, false, true), Writes::Scratch);
    }
}
