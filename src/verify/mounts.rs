//! Verification of the container's mounts from its mount table (`/proc/<pid>/mountinfo`): the root
//! read-only, kernel filesystems read-only, sized tmpfs, masked paths covered, binds and writable
//! paths as the hardened spec made them, and the root what create made it (`filesystem.*`,
//! `mounts.*`, `limits.disk`).

use std::path::{Path, PathBuf};

use oci_spec::runtime::Spec;

use super::{fail, Failure};
use crate::policy::keys;

/// What the container's root is: rloxsc's overlay (`source` tagged `rloxsc-...`) over a store whose
/// size the host's mount table shows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoreFacts {
    /// The root mount's filesystem type.
    pub root_fstype: String,
    /// The root mount's source.
    pub root_source: String,
    /// The overlay's upper layer, as the host names it.
    pub upper: Option<String>,
    /// The size of the tmpfs holding it, in bytes, on the host (`None`: no such tmpfs, or no size).
    pub store_bytes: Option<u64>,
    /// Where the container's writes were made to land (from the probe).
    pub expected: Option<crate::rootfs::Writes>,
    /// The bound create recorded and what the host shows of it on the upper layer (`limits.disk`).
    pub disk: Option<(
        crate::limits::disk::Bound,
        Result<crate::limits::disk::Seen, String>,
    )>,
}

impl From<crate::mountinfo::Mount> for MountLine {
    /// The verification's view of a mount read by [`crate::mountinfo`], the one mountinfo reader.
    fn from(m: crate::mountinfo::Mount) -> MountLine {
        MountLine {
            id: m.id.to_string(),
            parent: m.parent.to_string(),
            point: m.point.to_string_lossy().into_owned(),
            opts: m.opts,
            fstype: m.fstype,
            source: m.source.unwrap_or_default(),
            super_opts: m
                .super_opts
                .into_iter()
                .map(|(k, v)| match v {
                    Some(v) => format!("{k}={v}"),
                    None => k,
                })
                .collect::<Vec<_>>()
                .join(","),
        }
    }
}

/// Parses mountinfo text into mount lines (all of them, covered or not).
pub fn parse_mountinfo(text: &str) -> Result<Vec<MountLine>, String> {
    crate::mountinfo::parse(text)
        .map(|m| m.into_iter().map(MountLine::from).collect())
        .map_err(|e| e.to_string())
}

/// The container's root overlay and, from the host's own mount table, the size of its store.
pub(super) fn observe_store(mounts: &[MountLine]) -> StoreFacts {
    let visible = visible_mounts(mounts);
    let Some(root) = visible.iter().rev().find(|m| m.point == "/") else {
        return StoreFacts::default();
    };
    let upper = root
        .super_opts
        .split(',')
        .find_map(|o| o.strip_prefix("upperdir="))
        .map(str::to_string);
    // the filesystem holding the upper directory, asked directly (statfs: a tmpfs's blocks are its
    // size), not looked up in the host's whole mountinfo
    let store_bytes = upper.as_ref().and_then(|u| {
        let st = nix::sys::statfs::statfs(Path::new(u).parent()?).ok()?;
        (st.filesystem_type() == nix::sys::statfs::TMPFS_MAGIC)
            .then(|| st.blocks() * st.block_size() as u64)
    });
    StoreFacts {
        root_fstype: root.fstype.clone(),
        root_source: root.source.clone(),
        upper,
        store_bytes,
        expected: None,
        disk: None,
    }
}

/// The container's root is what create made it (docs/SPECIFICATION.md, `filesystem.writable`):
/// for scratch, rloxsc's overlay over a store of a bounded size; for the client's layer, rloxsc's
/// overlay (the read-only image below, the client's layer above); for the client's mount, not an
/// overlay of rloxsc's.
pub fn check_store(s: &StoreFacts) -> Vec<Failure> {
    use crate::rootfs::Writes;
    let Some(expected) = s.expected else {
        return vec![];
    };
    let ours = s.root_fstype == "overlay" && s.root_source.starts_with("rloxsc-");
    let wrong = |what: &str| {
        vec![fail(
            keys::WRITABLE,
            format!(
                "the container's root is a {} mount of {:?}, not {what}",
                s.root_fstype, s.root_source
            ),
        )]
    };
    if let Some((bound, seen)) = &s.disk {
        if let Err(why) = seen
            .as_ref()
            .map_err(Clone::clone)
            .and_then(|seen| crate::limits::disk::check(bound, seen))
        {
            return vec![fail(
                keys::DISK,
                format!("the container's writes are not bounded as create set them: {why}"),
            )];
        }
    }
    match expected {
        Writes::Mount if ours => wrong("the client's rootfs mount"),
        Writes::Mount => vec![],
        Writes::Layer if ours && s.upper.is_some() => vec![],
        Writes::Layer => wrong("rloxsc's overlay over the client's layer"),
        Writes::Scratch if !ours => wrong("rloxsc's overlay over its store"),
        Writes::Scratch => match s.store_bytes {
            Some(b) if b > 0 => vec![],
            _ => vec![fail(
                keys::WRITABLE,
                format!(
                    "the container's store ({}) has no size limit on the host, or is not mounted in this mount namespace (rloxsc's verbs must share the one create ran in)",
                    s.upper.as_deref().unwrap_or("no upper layer")
                ),
            )],
        },
    }
}

/// One mount from mountinfo.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountLine {
    /// Mount id.
    pub id: String,
    /// Parent mount id.
    pub parent: String,
    /// Mount point, unescaped.
    pub point: String,
    /// Per-mount options (`ro`, `nosuid`, ...).
    pub opts: Vec<String>,
    /// Filesystem type.
    pub fstype: String,
    /// Superblock options, comma-separated.
    pub super_opts: String,
    /// The mount's source.
    pub source: String,
}

/// Keeps only the visible mounts: a mount with another mount stacked on the same point (whose parent
/// is it) is covered and unreachable without mount privileges.
fn visible_mounts(all: &[MountLine]) -> Vec<MountLine> {
    // a mount is hidden when it is covered, or when any mount it hangs below is hidden
    let covered = |m: &MountLine| all.iter().any(|o| o.parent == m.id && o.point == m.point);
    let by_id: std::collections::HashMap<&str, &MountLine> =
        all.iter().map(|m| (m.id.as_str(), m)).collect();
    let hidden = |m: &MountLine| {
        let mut cur = Some(m);
        let mut steps = 0;
        while let Some(c) = cur {
            if covered(c) {
                return true;
            }
            steps += 1;
            if steps > all.len() {
                break;
            }
            cur = by_id
                .get(c.parent.as_str())
                .copied()
                .filter(|p| p.id != c.id);
        }
        false
    };
    all.iter().filter(|m| !hidden(m)).cloned().collect()
}

/// The destinations of the spec's bind mounts.
fn bind_destinations(spec: &Spec) -> Vec<PathBuf> {
    spec.mounts()
        .iter()
        .flatten()
        .filter(|m| crate::specmount::is_bind(m))
        .map(|m| m.destination().clone())
        // a bind at the root would exempt every mount below it
        .filter(|d| d != Path::new("/"))
        .collect()
}

/// Whether mount point `point` is a bind's destination or lies below one: a host filesystem bound
/// in (a host directory on a tmpfs, `/tmp` on Debian 13), whose size is the host's and whose pages
/// the container's writes are charged for, not a tmpfs made for the container.
fn is_bound_in(point: &str, binds: &[PathBuf]) -> bool {
    let p = Path::new(point);
    binds.iter().any(|b| p.starts_with(b))
}

/// The root is read-only; every sysfs and cgroupfs is read-only; `/proc/sys` is read-only; every tmpfs
/// made for the container has a size (a host tmpfs bound in keeps the host's); every masked path
/// that exists is covered by a mount.
pub fn check_mounts(
    all: &[MountLine],
    spec: &Spec,
    existing: &std::collections::BTreeSet<String>,
) -> Vec<Failure> {
    let mounts = visible_mounts(all);
    let binds = bind_destinations(spec);
    let mut out = Vec::new();
    let ro = |o: &Vec<String>| o.iter().any(|x| x == "ro");
    let top = |mp: &str| {
        mounts
            .iter()
            .rev()
            .find(|m| m.point == mp)
            .map(|m| (m.point.clone(), m.opts.clone()))
    };
    match top("/") {
        Some(m) if ro(&m.1) => {}
        Some(_) => out.push(fail(
            keys::READONLY_ROOT,
            "the container's root filesystem is writable",
        )),
        None => out.push(fail(keys::READONLY_ROOT, "the container has no root mount")),
    }
    for m in &mounts {
        if matches!(m.fstype.as_str(), "cgroup" | "cgroup2" | "sysfs") && !ro(&m.opts) {
            out.push(fail(
                keys::READONLY_PATHS,
                format!(
                    "{} at {} is writable inside the container",
                    m.fstype, m.point
                ),
            ));
        }
        if m.fstype == "devpts" && !m.super_opts.split(',').any(|o| o.starts_with("max=")) {
            out.push(fail(
                keys::PTYS,
                format!("devpts at {} has no pty limit (max=)", m.point),
            ));
        }
        if m.fstype == "tmpfs"
            && !m.super_opts.split(',').any(|o| o.starts_with("size="))
            && !ro(&m.opts)
            && !is_bound_in(&m.point, &binds)
        {
            out.push(fail(
                keys::TMPFS,
                format!("writable tmpfs at {} has no size limit", m.point),
            ));
        }
    }
    out.extend(check_binds_and_writable(&mounts, spec));
    out.extend(check_requested_readonly(&mounts, spec));
    for p in ["/proc/sys", "/proc/sysrq-trigger"] {
        if let Some(m) = top(p) {
            if !ro(&m.1) {
                out.push(fail(
                    keys::READONLY_PATHS,
                    format!("{p} is writable inside the container"),
                ));
            }
        } else if existing.contains(p) {
            out.push(fail(
                keys::READONLY_PATHS,
                format!("{p} is not read-only inside the container"),
            ));
        }
    }
    let masked = spec
        .linux()
        .as_ref()
        .and_then(|l| l.masked_paths().clone())
        .unwrap_or_default();
    for p in masked {
        if top(&p).is_none() && existing.contains(&p) {
            out.push(fail(
                keys::MASKED_PATHS,
                format!("{p} is not masked inside the container"),
            ));
        }
    }
    out
}

/// Every mount the spec asks for read-only (its options end on `ro` rather than `rw`) is read-only at
/// its destination: libcontainer mounted a read-only `/dev` read-write and never remounted it.
fn check_requested_readonly(mounts: &[MountLine], spec: &Spec) -> Vec<Failure> {
    let mut out = Vec::new();
    for m in spec.mounts().iter().flatten() {
        let wants_ro = m
            .options()
            .iter()
            .flatten()
            .rfind(|o| *o == "ro" || *o == "rw")
            .is_some_and(|o| o == "ro");
        if !wants_ro {
            continue;
        }
        let dest = m.destination().to_string_lossy();
        let dest = match dest.trim_end_matches('/') {
            "" => "/",
            d => d,
        };
        if let Some(top) = mounts.iter().rev().find(|l| l.point == dest) {
            if !top.opts.iter().any(|o| o == "ro") {
                out.push(fail(
                    keys::READONLY_PATHS,
                    format!(
                        "{dest} ({}) is writable inside the container, but its mount asks for ro",
                        top.fstype
                    ),
                ));
            }
        }
    }
    out
}

/// Every mount at or below a caller's bind destination is nosuid and nodev (and read-only when the
/// hardened spec made the bind read-only): an rbind brings the source's submounts, which the plain
/// flags do not reach. Any other writable mount must be scratch (a sized tmpfs), proc (whose
/// `/proc/sys` is checked apart), devpts, mqueue, a masked path or a device node under /dev.
fn check_binds_and_writable(mounts: &[MountLine], spec: &Spec) -> Vec<Failure> {
    let mut out = Vec::new();
    let has = |o: &Vec<String>, f: &str| o.iter().any(|x| x == f);
    let under = |point: &str, dest: &str| {
        point == dest
            || (dest == "/" && point.starts_with('/'))
            || point.starts_with(&format!("{}/", dest.trim_end_matches('/')))
    };
    // (destination, read-only at its top, read-only recursively)
    let binds: Vec<(String, bool, bool)> = spec
        .mounts()
        .iter()
        .flatten()
        .filter(|m| crate::specmount::is_bind(m))
        .map(|m| {
            let has_opt = |f: &str| m.options().iter().flatten().any(|o| o == f);
            (
                m.destination().display().to_string(),
                has_opt("ro"),
                has_opt("rro"),
            )
        })
        .collect();
    let masked: Vec<String> = spec
        .linux()
        .as_ref()
        .and_then(|l| l.masked_paths().clone())
        .unwrap_or_default();
    for m in mounts.iter().filter(|m| m.point != "/") {
        // the innermost bind destination holding this mount
        let bind = binds
            .iter()
            .filter(|(d, _, _)| under(&m.point, d))
            .max_by_key(|(d, _, _)| d.len());
        if let Some((dest, ro, rro)) = bind {
            let mut missing: Vec<&str> = ["nosuid", "nodev"]
                .into_iter()
                .filter(|f| !has(&m.opts, f))
                .collect();
            // `ro` makes the bind's top read-only, `rro` every mount below it too; a host mount below
            // a non-recursive read-only bind stays as the host has it, as under runc (the hardening
            // adds `rro` wherever writable binds are not allowed or the source is a system path)
            let top = m.point == dest.trim_end_matches('/');
            if (*ro && top || *rro) && !has(&m.opts, "ro") {
                missing.push("ro");
            }
            if !missing.is_empty() {
                out.push(fail(
                    keys::WRITABLE_BINDS,
                    format!(
                        "mount at {} (bind mount {dest}) lacks {} inside the container",
                        m.point,
                        missing.join(",")
                    ),
                ));
            }
            continue;
        }
        // rloxsc's own overlays: a caller's tmpcopyup tmpfs (its upper layer that sized tmpfs)
        let own_overlay = m.fstype == "overlay" && m.source.starts_with("rloxsc-");
        let scratch_or_kernel =
            matches!(m.fstype.as_str(), "tmpfs" | "proc" | "devpts" | "mqueue") || own_overlay;
        let device_node = m.point.starts_with("/dev/") && m.point.matches('/').count() == 2;
        if !has(&m.opts, "ro") && !scratch_or_kernel && !device_node && !masked.contains(&m.point) {
            out.push(fail(
                keys::READONLY_ROOT,
                format!(
                    "writable {} mount at {} inside the container is neither scratch nor a caller's bind",
                    m.fstype, m.point
                ),
            ));
        }
    }
    out
}
