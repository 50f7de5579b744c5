//! Step 2: the filesystem. The root is read-only; `/proc/sys`, `/sys` and every cgroupfs are read-only;
//! the standard masked paths are always masked; writable scratch exists only as size-limited
//! `nosuid,nodev` tmpfs; a caller's bind mounts get `nosuid,nodev` and binds of sensitive host paths are
//! refused; images whose `/proc`, `/sys` or `/dev` are symlinks are refused.

use std::path::{Path, PathBuf};

use oci_spec::runtime::{Mount, Spec};

use super::{refuse, Changes, HostFacts, Refusal};
use crate::paths::normal_abs;
use crate::policy::{self, keys, Policy};
use crate::specmount::is_bind;

/// Kernel filesystems a caller may mount (anything else but a bind mount is refused).
pub const KERNEL_MOUNT_TYPES: &[&str] = &[
    "proc", "sysfs", "tmpfs", "devpts", "mqueue", "cgroup", "cgroup2",
];

/// Whether a mount `type` may appear in a caller's spec (bind mounts are recognised by their options
/// and may be typed `bind` or `none`).
fn allowed_type(typ: &str) -> bool {
    KERNEL_MOUNT_TYPES.contains(&typ) || typ == "bind" || typ == "none"
}

/// Destinations whose symlinks in the image are refused (CVE-2023-27561, CVE-2025-31133, CVE-2025-52565).
pub const SYMLINK_SENSITIVE_DESTINATIONS: &[&str] = &[
    "/proc",
    "/sys",
    "/dev",
    "/dev/pts",
    "/dev/shm",
    "/dev/mqueue",
    "/sys/fs/cgroup",
];

/// Makes the root read-only and absolute, refusing a symlinked `/proc`, `/sys` or `/dev` in the image.
pub fn harden_root(
    spec: &mut Spec,
    facts: &HostFacts,
    changes: &mut Changes,
) -> Result<(), Refusal> {
    if let Some(bad) = facts.symlinked_destinations.first() {
        return Err(refuse(
            keys::ROOTFS,
            format!(
                "the image's {} is a symlink; rloxsc refuses images whose /proc, /sys or /dev are symlinks",
                bad.display()
            ),
        ));
    }
    let root = spec
        .root_mut()
        .as_mut()
        .expect("checked by validate_basics");
    if root.readonly() != Some(true) {
        root.set_readonly(Some(true));
        changes.push(keys::READONLY_ROOT, "root filesystem made read-only");
    }
    if root.path() != &facts.rootfs {
        root.set_path(facts.rootfs.clone());
    }
    let prop = spec
        .linux()
        .as_ref()
        .and_then(|l| l.rootfs_propagation().clone());
    // libcontainer 0.7 knows shared/private/slave/unbindable and always adds MS_REC, so the recursive
    // spellings containerd sends (`rslave` for any HostToContainer mount) map onto those
    let normalized = match prop.as_deref() {
        Some("rslave") => Some("slave"),
        Some("rprivate") => Some("private"),
        Some("runbindable") => Some("unbindable"),
        _ => None,
    };
    if let Some(n) = normalized {
        spec.linux_mut()
            .as_mut()
            .expect("namespaces step created linux")
            .set_rootfs_propagation(Some(n.into()));
    }
    if matches!(prop.as_deref(), Some("shared") | Some("rshared")) {
        // libcontainer 0.7 knows only shared/private/slave/unbindable and always adds MS_REC:
        // "slave" is rslave ("rslave" itself would fail create with UnknownRootfsPropagation)
        spec.linux_mut()
            .as_mut()
            .expect("namespaces step created linux")
            .set_rootfs_propagation(Some("slave".into()));
        changes.push(
            keys::READONLY_ROOT,
            "rootfsPropagation shared -> rslave (mounts never propagate back to the host)",
        );
    }
    Ok(())
}

fn opts(m: &Mount) -> Vec<String> {
    m.options().clone().unwrap_or_default()
}

/// Adds `flag` to `options` unless present; removes the opposite flag. Returns whether anything changed.
fn ensure_flag(options: &mut Vec<String>, flag: &str, opposite: &str) -> bool {
    let before = options.clone();
    options.retain(|o| o != opposite);
    if !options.iter().any(|o| o == flag) {
        options.push(flag.to_string());
    }
    *options != before
}

/// Clamps a tmpfs mount's `size=`: absent, zero (unlimited) or above the ceiling is replaced; never
/// above half the container's memory limit `memory` (a tmpfs's pages are charged to it).
fn clamp_tmpfs_size(
    options: &mut Vec<String>,
    policy: &Policy,
    memory: Option<u64>,
) -> Option<String> {
    let current = options
        .iter()
        .find_map(|o| o.strip_prefix("size=").map(str::to_string));
    let requested = current
        .as_deref()
        .and_then(crate::size::parse)
        .filter(|&v| v > 0);
    let mut size = policy.tmpfs_bytes.clamp(requested);
    if let Some(m) = memory {
        size = size.min((m / 2).max(1 << 20) / 1024 * 1024);
    }
    if requested == Some(size) {
        return None;
    }
    options.retain(|o| !o.starts_with("size=") && !o.starts_with("nr_blocks="));
    options.push(format!("size={}k", size / 1024));
    Some(format!(
        "size {} -> {}k",
        current.unwrap_or_else(|| "unlimited".into()),
        size / 1024
    ))
}

/// Gives a devpts mount a `max=` within the policy: every devpts instance but the host's first draws
/// its ptys from one pool (kernel.pty.max less kernel.pty.reserve), so without a bound one container
/// could take every pty the other containers would get.
fn clamp_devpts_max(options: &mut Vec<String>, policy: &Policy) -> Option<String> {
    let current = options
        .iter()
        .find_map(|o| o.strip_prefix("max=").map(str::to_string));
    let requested = current
        .as_deref()
        .and_then(|v| v.parse::<u64>().ok())
        .filter(|&v| v > 0);
    let max = policy.ptys.clamp(requested);
    if requested == Some(max) {
        return None;
    }
    options.retain(|o| !o.starts_with("max="));
    options.push(format!("max={max}"));
    Some(format!(
        "max {} -> {max}",
        current.unwrap_or_else(|| "unlimited".into())
    ))
}

fn is_sensitive_source(src: &Path, facts: &HostFacts) -> Option<String> {
    let file_name = src.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if policy::SENSITIVE_SOCKET_NAMES.contains(&file_name) {
        return Some(format!(
            "{} is a container runtime's control socket",
            src.display()
        ));
    }
    let mut sensitive: Vec<PathBuf> = policy::SENSITIVE_HOST_PATHS
        .iter()
        .map(PathBuf::from)
        .collect();
    sensitive.push(facts.runtime_root.clone());
    for s in &sensitive {
        // the source is the sensitive path, or a parent directory that exposes it
        if s.starts_with(src) {
            return Some(format!(
                "{} exposes the host's {}",
                src.display(),
                s.display()
            ));
        }
    }
    for t in policy::SENSITIVE_HOST_TREES {
        if src.starts_with(t) {
            return Some(format!("{} lies inside the host's {}", src.display(), t));
        }
    }
    if src.starts_with(&facts.runtime_root) {
        return Some(format!("{} lies inside rloxsc's own state", src.display()));
    }
    None
}

/// Tightens the caller's mounts and adds the ones the hardened default needs.
pub fn harden_mounts(
    spec: &mut Spec,
    policy: &Policy,
    facts: &HostFacts,
    changes: &mut Changes,
) -> Result<(), Refusal> {
    let caller = spec.mounts().clone().unwrap_or_default();
    let memory = memory_limit(spec);
    let mut out: Vec<Mount> = Vec::with_capacity(caller.len() + 2);
    // writable paths of an earlier hardening (this spec hardened again): made again below
    let mut prior: Vec<PathBuf> = Vec::new();
    for m in caller {
        let dest = m.destination().display().to_string();
        if is_writable_path(&m) {
            // rloxsc's own mark: only the policy's writable paths carry it (added again below)
            if m.source().as_deref() == Some(Path::new(WRITABLE_SOURCE)) {
                prior.push(normal_abs(m.destination()));
            } else {
                changes.push(
                    keys::WRITABLE,
                    format!("mount at {dest} marked {WRITABLE_MARK} dropped: only the policy makes writable paths"),
                );
            }
            continue;
        }
        let typ = m.typ().clone().unwrap_or_else(|| "none".into());
        let mut o = opts(&m);
        let mut m = m;
        if is_bind(&m) {
            harden_bind(&mut m, &mut o, &dest, policy, facts, changes)?;
        } else if !harden_kernel_mount(&typ, &mut o, &dest, memory, policy, changes)? {
            continue;
        }
        m.set_options(Some(o));
        out.push(m);
    }

    let has = |out: &Vec<Mount>, d: &str| out.iter().any(|m| m.destination() == Path::new(d));
    for (dest, typ, src, options) in required_mounts() {
        if !has(&out, dest) {
            let mut m = mount(dest, typ, src, &options);
            if typ == "tmpfs" {
                // within limits.tmpfs like the caller's (found by fuzz/: /dev/shm kept 64 MiB under a
                // lower ceiling, and hardening the result again clamped it)
                let mut o = opts(&m);
                clamp_tmpfs_size(&mut o, policy, memory_limit(spec));
                m.set_options(Some(o));
            }
            if typ == "devpts" {
                let mut o = opts(&m);
                clamp_devpts_max(&mut o, policy);
                m.set_options(Some(o));
            }
            out.push(m);
            changes.push(keys::READONLY_PATHS, format!("added {typ} mount at {dest}"));
        }
    }
    add_writable_paths(spec, &mut out, policy, facts, &prior, changes);
    spec.set_mounts(Some(out));
    Ok(())
}

/// A caller's bind mount: its source resolved and judged (never sensitive, never a writable bind of
/// the runtime's binary), nosuid,nodev to the bottom, read-only to the bottom where it is read-only
/// (and for a host system path, or under `writable_binds = false`), never shared.
fn harden_bind(
    m: &mut Mount,
    o: &mut Vec<String>,
    dest: &str,
    policy: &Policy,
    facts: &HostFacts,
    changes: &mut Changes,
) -> Result<(), Refusal> {
    let src = m.source().clone().unwrap_or_default();
    let known = facts.canonical_sources.get(&src).cloned();
    if src.is_relative() {
        // relative to the bundle (OCI); libcontainer would resolve it against rloxsc's cwd, so
        // the hardened spec names the resolved path, the one judged below
        let Some(resolved) = known.clone() else {
            return Err(refuse(
                keys::SENSITIVE_BINDS,
                format!(
                    "bind mount of {:?} onto {dest} refused: a relative source must exist in the bundle",
                    src.display().to_string()
                ),
            ));
        };
        changes.push(
            keys::SENSITIVE_BINDS,
            format!(
                "bind mount {dest}: relative source {} resolved in the bundle to {}",
                src.display(),
                resolved.display()
            ),
        );
        m.set_source(Some(resolved));
    }
    let canonical = known.unwrap_or(src.clone());
    if let Some(why) = is_sensitive_source(&canonical, facts) {
        return Err(refuse(
            keys::SENSITIVE_BINDS,
            format!("bind mount of {} onto {dest} refused: {why}", src.display()),
        ));
    }
    // the plain flags reach the top mount only: an rbind's submounts need the recursive
    // ones (mount_setattr), and the caller's recursive opposites (rsuid, rdev, rrw) would
    // undo them below the top (found by conformance: `rbind,rrw` gave a writable bind)
    let mut changed = ensure_flag(o, "nosuid", "suid");
    changed |= ensure_flag(o, "rnosuid", "rsuid");
    changed |= ensure_flag(o, "nodev", "dev");
    changed |= ensure_flag(o, "rnodev", "rdev");
    if !policy.writable_binds {
        changed |= ensure_flag(o, "ro", "rw");
        changed |= ensure_flag(o, "rro", "rrw");
    } else if !o.iter().any(|x| x == "ro") && policy::is_system_path(&canonical) {
        // the container's root owns what it binds (crate::views idmaps a bind onto its
        // directory's owner): a host system directory stays read-only
        ensure_flag(o, "ro", "rw");
        ensure_flag(o, "rro", "rrw");
        changes.push(
            keys::WRITABLE_BINDS,
            format!(
                "bind mount of {} onto {dest} made read-only: it is a system path of the host",
                canonical.display()
            ),
        );
    }
    // a read-only bind is read-only down to every submount: plain `ro` reaches the top
    // mount only (runc leaves the host's mounts below it writable; a caller who bound a
    // directory read-only did not mean to hand out what is mounted inside it, and
    // containerd 1.6 drops the CRI's recursive_read_only to a plain `ro`)
    if o.iter().any(|x| x == "ro") {
        changed |= ensure_flag(o, "rro", "rrw");
    }
    if !o.iter().any(|x| x == "ro") {
        if let Some(bin) = facts
            .runtime_binaries
            .iter()
            .find(|b| b.parent().is_some_and(|d| d.starts_with(&canonical)) || **b == canonical)
        {
            return Err(refuse(
                keys::SENSITIVE_BINDS,
                format!(
                    "writable bind mount of {} onto {dest} refused: it holds the runtime's own binary {} (a container could replace it by rename); bind it read-only",
                    src.display(),
                    bin.display()
                ),
            ));
        }
    }
    if o.iter().any(|x| x == "shared" || x == "rshared") {
        o.retain(|x| x != "shared" && x != "rshared");
        o.push("rslave".into());
        changed = true;
    }
    if changed {
        changes.push(
            keys::WRITABLE_BINDS,
            format!("bind mount {dest}: options now {}", o.join(",")),
        );
    }
    Ok(())
}

/// A kernel filesystem's mount: an allowed type, with the flags its type needs; `false` when it is
/// dropped (an extra proc mount, which would be unmasked).
fn harden_kernel_mount(
    typ: &str,
    o: &mut Vec<String>,
    dest: &str,
    memory: Option<u64>,
    policy: &Policy,
    changes: &mut Changes,
) -> Result<bool, Refusal> {
    if !allowed_type(typ) {
        return Err(refuse(
            keys::MOUNT_TYPES,
            format!("mount of type {typ:?} onto {dest} refused: only proc, sysfs, tmpfs, devpts, mqueue, cgroup and bind mounts are allowed"),
        ));
    } else {
        // recursive "clear" options would undo the flags forced below (sysfs `rrw`)
        let before = o.len();
        o.retain(|x| !matches!(x.as_str(), "rrw" | "rsuid" | "rdev" | "rexec"));
        if o.len() != before {
            changes.push(
                keys::MOUNT_TYPES,
                format!("{typ} at {dest}: recursive rrw/rsuid/rdev/rexec dropped"),
            );
        }
        match typ {
            "proc" => {
                if dest != "/proc" {
                    changes.push(
                        keys::MASKED_PATHS,
                        format!("dropped extra proc mount at {dest} (it would be unmasked)"),
                    );
                    return Ok(false);
                }
            }
            "sysfs" | "cgroup" | "cgroup2" => {
                let mut changed = ensure_flag(o, "ro", "rw");
                for f in ["nosuid", "nodev", "noexec"] {
                    changed |= ensure_flag(o, f, "");
                }
                if changed {
                    changes.push(
                        keys::READONLY_PATHS,
                        format!("{typ} at {dest} mounted read-only"),
                    );
                }
            }
            "tmpfs" => {
                let mut what = Vec::new();
                // runc's tmpcopyup (copy the image's directory in; Podman asks for it) is done
                // by rloxsc from outside (crate::views, crate::writable), as for its own
                // writable paths
                if ensure_flag(o, "nosuid", "suid") {
                    what.push("nosuid".to_string());
                }
                if dest != "/dev" && ensure_flag(o, "nodev", "dev") {
                    what.push("nodev".to_string());
                }
                if let Some(s) = clamp_tmpfs_size(o, policy, memory) {
                    what.push(s);
                }
                if !what.is_empty() {
                    changes.push(keys::TMPFS, format!("tmpfs at {dest}: {}", what.join(", ")));
                }
            }
            "devpts" | "mqueue" => {
                let mut changed = ensure_flag(o, "nosuid", "suid");
                changed |= ensure_flag(o, "noexec", "exec");
                if changed {
                    changes.push(keys::MOUNT_TYPES, format!("{typ} at {dest}: nosuid,noexec"));
                }
                if typ == "devpts" {
                    if let Some(s) = clamp_devpts_max(o, policy) {
                        changes.push(keys::PTYS, format!("devpts at {dest}: {s}"));
                    }
                }
            }
            _ => {
                return Err(refuse(
                    keys::MOUNT_TYPES,
                    format!("mount of type {typ:?} onto {dest} without bind options refused"),
                ))
            }
        }
    }
    Ok(true)
}

/// The option that marks rloxsc's own writable paths (never a caller's: removed from theirs):
/// [`crate::rootfs`] makes each a window onto the container's root overlay, or a store path.
pub const WRITABLE_MARK: &str = "x-rloxsc-writable";

/// The source of a writable path in the hardened spec: [`crate::rootfs`] gives it its real one.
pub const WRITABLE_SOURCE: &str = "/run/rloxsc-views/writable";

/// The process's HOME as the process will have it: its environment's, else the image's passwd
/// file's (as [`super::harden_process`] sets it).
fn home_of(spec: &Spec, facts: &HostFacts) -> Option<PathBuf> {
    let p = spec.process().as_ref()?;
    let env_home = p
        .env()
        .iter()
        .flatten()
        .find_map(|e| e.strip_prefix("HOME=").filter(|v| !v.is_empty()));
    let home = match env_home {
        Some(h) => h.to_string(),
        None => facts.image_home.as_ref()?.home().to_string(),
    };
    Some(normal_abs(Path::new(&home)))
}

/// Whether a writable-path mount is one of rloxsc's own (a bind with [`WRITABLE_MARK`]).
pub fn is_writable_path(m: &Mount) -> bool {
    opts(m).iter().any(|o| o == WRITABLE_MARK)
}

/// Adds the policy's writable paths (`filesystem.writable`): a bind of the container's own root
/// there (made by [`crate::rootfs`]), unless the caller mounts something at or above it (the
/// caller's mounts win), the path is a system path or holds one (a workdir under `/usr`, or `/var`,
/// stays read-only), the image reaches it through a symlink, or, for a path other than the workdir,
/// HOME and `/tmp`, the image lacks that directory. Each goes before any caller mount below it, so
/// a volume at `/tmp/x` stays visible.
fn add_writable_paths(
    spec: &Spec,
    out: &mut Vec<Mount>,
    policy: &Policy,
    facts: &HostFacts,
    prior: &[PathBuf],
    changes: &mut Changes,
) {
    let cwd = spec.process().as_ref().map(|p| normal_abs(p.cwd()));
    let home = home_of(spec, facts);
    let mut done: Vec<PathBuf> = Vec::new();
    for w in &policy.writable {
        let (path, what) = match w.path.as_str() {
            policy::WORKDIR => (cwd.clone(), "the working directory"),
            policy::HOME => (home.clone(), "HOME"),
            p => (Some(PathBuf::from(p)), "the writable path"),
        };
        let Some(path) = path else { continue };
        if path == Path::new("/") || done.iter().any(|d| path.starts_with(d)) {
            continue;
        }
        if policy::is_system_path(&path) {
            changes.push(
                keys::WRITABLE,
                format!(
                    "{what} {} is a system path or holds one: it stays read-only",
                    path.display()
                ),
            );
            continue;
        }
        if facts.symlinked_writable.contains(&path) {
            changes.push(
                keys::WRITABLE,
                format!(
                    "the image reaches {} through a symlink: it stays read-only",
                    path.display()
                ),
            );
            continue;
        }
        if !w.always() && !facts.image_dirs.contains(&path) {
            continue;
        }
        if out.iter().any(|m| {
            m.destination() != Path::new("/") && path.starts_with(normal_abs(m.destination()))
        }) {
            continue;
        }
        // first, before every other mount: a mount elsewhere whose target the image links into a
        // writable path (an /etc/hosts symlink into /tmp) then lands in the writable path
        let at = done.len();
        out.insert(
            at,
            mount(
                &path.display().to_string(),
                "bind",
                WRITABLE_SOURCE,
                &[
                    "bind",
                    "nosuid",
                    "nodev",
                    "rnosuid",
                    "rnodev",
                    WRITABLE_MARK,
                ],
            ),
        );
        if !prior.contains(&path) {
            changes.push(
                keys::WRITABLE,
                format!(
                    "{} writable (the container's writes land in its store)",
                    path.display()
                ),
            );
        }
        done.push(path);
    }
}

/// The size of the container's store: the policy's, never above half the container's memory limit
/// (its pages are charged to the container: a store as large as the memory that pays for it would
/// turn a full disk into an OOM kill instead of ENOSPC).
pub fn store_bytes(spec: &Spec, policy: &Policy, changes: &mut Changes) -> u64 {
    let want = policy.store_bytes.default;
    let Some(mem) = memory_limit(spec) else {
        return want;
    };
    let cap = (mem / 2).max(1 << 20);
    if want > cap {
        changes.push(
            keys::WRITABLE,
            format!(
                "the container's store is {} (half its memory limit of {}), not {}",
                policy::human_any(cap),
                policy::human_any(mem),
                policy::human_any(want)
            ),
        );
        return cap;
    }
    want
}

/// The container's memory limit in bytes, when the (hardened) spec sets one.
fn memory_limit(spec: &Spec) -> Option<u64> {
    spec.linux()
        .as_ref()?
        .resources()
        .as_ref()?
        .memory()
        .as_ref()?
        .limit()
        .filter(|&v| v > 0)
        .map(|v| v as u64)
}

/// Mounts every container gets when the caller lacks them: /proc and /sys are needed for masking and
/// verification, /dev for the allowed device nodes.
fn required_mounts() -> Vec<(&'static str, &'static str, &'static str, Vec<&'static str>)> {
    vec![
        ("/proc", "proc", "proc", vec!["nosuid", "noexec", "nodev"]),
        (
            "/dev",
            "tmpfs",
            "tmpfs",
            vec!["nosuid", "strictatime", "mode=755", "size=65536k"],
        ),
        (
            "/dev/pts",
            "devpts",
            "devpts",
            vec![
                "nosuid",
                "noexec",
                "newinstance",
                "ptmxmode=0666",
                "mode=0620",
            ],
        ),
        (
            "/dev/shm",
            "tmpfs",
            "shm",
            vec!["nosuid", "noexec", "nodev", "mode=1777", "size=65536k"],
        ),
        (
            "/dev/mqueue",
            "mqueue",
            "mqueue",
            vec!["nosuid", "noexec", "nodev"],
        ),
        (
            "/sys",
            "sysfs",
            "sysfs",
            vec!["nosuid", "noexec", "nodev", "ro"],
        ),
    ]
}

fn mount(dest: &str, typ: &str, src: &str, options: &[&str]) -> Mount {
    let mut m = Mount::default();
    m.set_destination(PathBuf::from(dest));
    m.set_typ(Some(typ.to_string()));
    m.set_source(Some(PathBuf::from(src)));
    m.set_options(Some(options.iter().map(|s| s.to_string()).collect()));
    m
}

/// Always masks the standard paths and makes `/proc/sys` etc. read-only. The cgroup mounts need no
/// read-only paths of their own: they are read-only mounts ([`harden_mounts`]), which libcontainer
/// (patch 0008) applies to every cgroup v1 hierarchy and to the tmpfs holding them, and the
/// verification proves every cgroup filesystem read-only from outside.
pub fn harden_masked_and_readonly_paths(spec: &mut Spec, changes: &mut Changes) {
    let linux = spec.linux_mut().get_or_insert_with(Default::default);

    let mut masked = linux.masked_paths().clone().unwrap_or_default();
    let added: Vec<&str> = policy::MASKED_PATHS
        .iter()
        .copied()
        .filter(|p| !masked.iter().any(|m| m == p))
        .collect();
    if !added.is_empty() {
        masked.extend(added.iter().map(|s| s.to_string()));
        changes.push(keys::MASKED_PATHS, format!("masked {}", added.join(", ")));
    }
    linux.set_masked_paths(Some(masked));

    let mut ro = linux.readonly_paths().clone().unwrap_or_default();
    let want: Vec<String> = policy::READONLY_PATHS
        .iter()
        .map(|s| s.to_string())
        .collect();
    let added: Vec<String> = want.into_iter().filter(|p| !ro.contains(p)).collect();
    if !added.is_empty() {
        ro.extend(added.iter().cloned());
        changes.push(
            keys::READONLY_PATHS,
            format!("read-only {}", added.join(", ")),
        );
    }
    linux.set_readonly_paths(Some(ro));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harden::testutil::*;

    fn mount_at<'a>(s: &'a Spec, dest: &str) -> Option<&'a Mount> {
        s.mounts()
            .as_ref()
            .unwrap()
            .iter()
            .find(|m| m.destination() == Path::new(dest))
    }

    fn run_mounts(s: &mut Spec) -> Result<Changes, Refusal> {
        let mut c = Changes::default();
        harden_mounts(s, &Policy::default(), &facts(), &mut c)?;
        Ok(c)
    }

    #[test]
    fn root_becomes_readonly_and_absolute() {
        let mut s = careless_spec();
        let mut c = Changes::default();
        harden_root(&mut s, &facts(), &mut c).unwrap();
        assert_eq!(s.root().as_ref().unwrap().readonly(), Some(true));
        assert_eq!(
            s.root().as_ref().unwrap().path(),
            Path::new("/bundle/rootfs")
        );
        assert_eq!(c.0.len(), 1);
    }

    #[test]
    fn symlinked_proc_is_refused() {
        let mut s = careless_spec();
        let mut f = facts();
        f.symlinked_destinations.push("/proc".into());
        let r = harden_root(&mut s, &f, &mut Changes::default()).unwrap_err();
        assert!(r.reason.contains("symlink"));
    }

    #[test]
    fn sysfs_and_cgroup_become_readonly() {
        let mut s = careless_spec();
        run_mounts(&mut s).unwrap();
        for d in ["/sys", "/sys/fs/cgroup"] {
            let o = opts(mount_at(&s, d).unwrap());
            assert!(o.contains(&"ro".to_string()), "{d}: {o:?}");
            assert!(!o.contains(&"rw".to_string()), "{d}: {o:?}");
        }
    }

    #[test]
    fn tmp_is_a_writable_path_never_suid_or_dev() {
        let mut s = careless_spec();
        run_mounts(&mut s).unwrap();
        let m = mount_at(&s, "/tmp").unwrap();
        assert!(is_writable_path(m));
        let o = opts(m);
        assert!(o.contains(&"nosuid".into()) && o.contains(&"nodev".into()));
        assert!(o.contains(&"rnosuid".into()) && o.contains(&"rnodev".into()));
    }

    #[test]
    fn tmpfs_is_never_above_half_the_memory_limit() {
        let mut s = careless_spec();
        let mut ms = s.mounts().clone().unwrap();
        ms.push(mount("/big", "tmpfs", "tmpfs", &["size=1g"]));
        s.set_mounts(Some(ms));
        let mut c = Changes::default();
        crate::harden::resources::harden_limits(&mut s, &Policy::default(), &mut c);
        run_mounts(&mut s).unwrap();
        let o = opts(mount_at(&s, "/big").unwrap());
        assert!(o.contains(&"size=262144k".into()), "{o:?}");
        let mut c = Changes::default();
        assert_eq!(store_bytes(&s, &Policy::default(), &mut c), 256 << 20);
        let small = Policy {
            memory_bytes: crate::policy::Limit {
                default: 64 << 20,
                ceiling: 16 << 30,
            },
            ..Policy::default()
        };
        let mut s = careless_spec();
        crate::harden::resources::harden_limits(&mut s, &small, &mut c);
        let mut c = Changes::default();
        assert_eq!(store_bytes(&s, &small, &mut c), 32 << 20);
        assert!(
            c.0.iter().any(|c| c.what.contains("half its memory limit")),
            "{c:?}"
        );
    }

    #[test]
    fn unlimited_tmpfs_is_clamped_and_small_kept() {
        let mut s = careless_spec();
        let mut ms = s.mounts().clone().unwrap();
        ms.push(mount("/big", "tmpfs", "tmpfs", &["size=100g"]));
        ms.push(mount("/small", "tmpfs", "tmpfs", &["size=1m"]));
        ms.push(mount("/none", "tmpfs", "tmpfs", &[]));
        s.set_mounts(Some(ms));
        run_mounts(&mut s).unwrap();
        assert!(opts(mount_at(&s, "/big").unwrap()).contains(&"size=1048576k".into()));
        assert!(opts(mount_at(&s, "/small").unwrap()).contains(&"size=1m".into()));
        assert!(opts(mount_at(&s, "/none").unwrap()).contains(&"size=65536k".into()));
    }

    #[test]
    fn sensitive_binds_are_refused() {
        for src in [
            "/",
            "/proc",
            "/sys/kernel",
            "/var/run/docker.sock",
            "/run/containerd",
            "/var",
            "/dev/sda",
            "/run/rloxsc/x",
        ] {
            let mut s = careless_spec();
            let mut ms = s.mounts().clone().unwrap();
            ms.push(mount("/host", "bind", src, &["rbind"]));
            s.set_mounts(Some(ms));
            let r = run_mounts(&mut s).unwrap_err();
            assert_eq!(r.key, keys::SENSITIVE_BINDS, "{src}");
        }
    }

    #[test]
    fn symlinked_bind_source_is_judged_by_its_target() {
        let mut s = careless_spec();
        let mut ms = s.mounts().clone().unwrap();
        ms.push(mount("/host", "bind", "/tmp/innocent", &["rbind"]));
        s.set_mounts(Some(ms));
        let mut f = facts();
        f.canonical_sources
            .insert("/tmp/innocent".into(), "/".into());
        let r = harden_mounts(&mut s, &Policy::default(), &f, &mut Changes::default()).unwrap_err();
        assert_eq!(r.key, keys::SENSITIVE_BINDS);
    }

    // Regression: a relative bind source is relative to the bundle (OCI), but libcontainer resolved it
    // against rloxsc's cwd, unchecked: `run/rloxsc` from cwd `/` bind-mounted the runtime's state.
    #[test]
    fn relative_bind_source_is_resolved_in_the_bundle_or_refused() {
        let mut s = careless_spec();
        let mut ms = s.mounts().clone().unwrap();
        ms.push(mount("/host", "bind", "run/rloxsc", &["rbind"]));
        s.set_mounts(Some(ms));
        let r = run_mounts(&mut s.clone()).unwrap_err();
        assert_eq!(r.key, keys::SENSITIVE_BINDS);
        assert!(r.reason.contains("must exist in the bundle"), "{r}");

        let mut f = facts();
        f.canonical_sources
            .insert("run/rloxsc".into(), "/bundle/run/rloxsc".into());
        harden_mounts(&mut s, &Policy::default(), &f, &mut Changes::default()).unwrap();
        assert_eq!(
            mount_at(&s, "/host").unwrap().source().as_deref(),
            Some(Path::new("/bundle/run/rloxsc"))
        );

        // `..` out of the bundle to a sensitive path is judged by where it lands
        let mut s = careless_spec();
        let mut ms = s.mounts().clone().unwrap();
        ms.push(mount("/host", "bind", "../../..", &["rbind"]));
        s.set_mounts(Some(ms));
        let mut f = facts();
        f.canonical_sources.insert("../../..".into(), "/".into());
        let r = harden_mounts(&mut s, &Policy::default(), &f, &mut Changes::default()).unwrap_err();
        assert_eq!(r.key, keys::SENSITIVE_BINDS);
    }

    // Regression (found by fuzz/harden_spec): the /dev/shm rloxsc adds kept 64 MiB under a lower
    // limits.tmpfs ceiling, so hardening the hardened spec changed it again.
    #[test]
    fn added_tmpfs_mounts_respect_the_tmpfs_ceiling() {
        let p = Policy {
            tmpfs_bytes: crate::policy::Limit {
                default: 1 << 20,
                ceiling: 8 << 20,
            },
            ..Policy::default()
        };
        let mut s = careless_spec();
        harden_mounts(&mut s, &p, &facts(), &mut Changes::default()).unwrap();
        for dest in ["/dev", "/dev/shm"] {
            let o = opts(mount_at(&s, dest).unwrap());
            let size = o
                .iter()
                .find_map(|x| x.strip_prefix("size="))
                .and_then(crate::size::parse);
            assert!(size.is_some_and(|v| v <= 8 << 20), "{dest}: {o:?}");
        }
        let once = s.clone();
        harden_mounts(&mut s, &p, &facts(), &mut Changes::default()).unwrap();
        assert_eq!(s, once);
    }

    #[test]
    fn ordinary_binds_get_nosuid_nodev() {
        let mut s = careless_spec();
        let mut ms = s.mounts().clone().unwrap();
        ms.push(mount(
            "/data",
            "bind",
            "/srv/data",
            &["rbind", "rw", "suid"],
        ));
        ms.push(mount(
            "/etc/hosts",
            "bind",
            "/var/lib/docker/containers/abc/hosts",
            &["rbind"],
        ));
        s.set_mounts(Some(ms));
        run_mounts(&mut s).unwrap();
        let o = opts(mount_at(&s, "/data").unwrap());
        assert!(
            o.contains(&"nosuid".into())
                && o.contains(&"nodev".into())
                && !o.contains(&"suid".into())
        );
    }

    #[test]
    fn readonly_binds_when_policy_says_so() {
        let mut s = careless_spec();
        let mut ms = s.mounts().clone().unwrap();
        ms.push(mount("/data", "bind", "/srv/data", &["rbind", "rw"]));
        s.set_mounts(Some(ms));
        let p = Policy {
            writable_binds: false,
            ..Policy::default()
        };
        harden_mounts(&mut s, &p, &facts(), &mut Changes::default()).unwrap();
        assert!(opts(mount_at(&s, "/data").unwrap()).contains(&"ro".into()));
    }

    // Regression (conformance): `rbind,rsuid,rdev,rrw` kept the submounts of a bind (or the whole bind)
    // suid, dev and writable: the plain flags reach the top mount only.
    #[test]
    fn binds_get_recursive_flags_and_lose_recursive_opposites() {
        let mut s = careless_spec();
        let mut ms = s.mounts().clone().unwrap();
        ms.push(mount(
            "/data",
            "bind",
            "/srv/data",
            &["rbind", "rsuid", "rdev", "rrw"],
        ));
        ms.push(mount("/sys2", "sysfs", "sysfs", &["rrw", "rexec"]));
        s.set_mounts(Some(ms));
        let p = Policy {
            writable_binds: false,
            ..Policy::default()
        };
        harden_mounts(&mut s, &p, &facts(), &mut Changes::default()).unwrap();
        let o = opts(mount_at(&s, "/data").unwrap());
        for want in ["nosuid", "rnosuid", "nodev", "rnodev", "ro", "rro"] {
            assert!(o.contains(&want.to_string()), "{want} missing: {o:?}");
        }
        for gone in ["rsuid", "rdev", "rrw"] {
            assert!(!o.contains(&gone.to_string()), "{gone} kept: {o:?}");
        }
        let o = opts(mount_at(&s, "/sys2").unwrap());
        assert!(!o.iter().any(|x| x == "rrw" || x == "rexec"), "{o:?}");
        // writable binds allowed: still recursively nosuid/nodev
        let mut s = careless_spec();
        let mut ms = s.mounts().clone().unwrap();
        ms.push(mount("/data", "bind", "/srv/data", &["rbind", "rsuid"]));
        s.set_mounts(Some(ms));
        run_mounts(&mut s).unwrap();
        let o = opts(mount_at(&s, "/data").unwrap());
        assert!(
            o.contains(&"rnosuid".into())
                && o.contains(&"rnodev".into())
                && !o.contains(&"rsuid".into()),
            "{o:?}"
        );
    }

    #[test]
    fn tmpcopyup_is_kept_for_the_views_to_do() {
        let mut s = careless_spec();
        let mut ms = s.mounts().clone().unwrap();
        ms.push(mount(
            "/run",
            "tmpfs",
            "tmpfs",
            &["rw", "nosuid", "nodev", "tmpcopyup"],
        ));
        s.set_mounts(Some(ms));
        run_mounts(&mut s).unwrap();
        assert!(opts(mount_at(&s, "/run").unwrap()).contains(&"tmpcopyup".into()));
    }

    #[test]
    fn block_device_mounts_are_refused() {
        let mut s = careless_spec();
        let mut ms = s.mounts().clone().unwrap();
        ms.push(mount("/disk", "ext4", "/dev/vda", &[]));
        s.set_mounts(Some(ms));
        assert_eq!(run_mounts(&mut s).unwrap_err().key, keys::MOUNT_TYPES);
    }

    #[test]
    fn extra_proc_mount_is_dropped() {
        let mut s = careless_spec();
        let mut ms = s.mounts().clone().unwrap();
        ms.push(mount("/hostproc", "proc", "proc", &[]));
        s.set_mounts(Some(ms));
        run_mounts(&mut s).unwrap();
        assert!(mount_at(&s, "/hostproc").is_none());
    }

    #[test]
    fn masked_and_readonly_paths_are_set_without_one_per_cgroup_hierarchy() {
        let mut s = careless_spec();
        let mut c = Changes::default();
        harden_masked_and_readonly_paths(&mut s, &mut c);
        let l = s.linux().as_ref().unwrap();
        let m = l.masked_paths().as_ref().unwrap();
        assert!(m.contains(&"/proc/kcore".to_string()));
        let ro = l.readonly_paths().as_ref().unwrap();
        assert!(ro.contains(&"/proc/sys".to_string()));
        // the cgroup mount itself is read-only (sysfs_and_cgroup_become_readonly): no bind-remount of
        // each hierarchy on top of it
        assert!(
            !ro.iter().any(|p| p.starts_with("/sys/fs/cgroup")),
            "{ro:?}"
        );
    }

    fn with_cwd(cwd: &str) -> Spec {
        let mut s = careless_spec();
        let mut p = s.process().clone().unwrap();
        p.set_cwd(PathBuf::from(cwd));
        s.set_process(Some(p));
        s
    }

    fn dests(s: &Spec) -> Vec<String> {
        s.mounts()
            .iter()
            .flatten()
            .map(|m| m.destination().display().to_string())
            .collect()
    }

    #[test]
    fn the_workdir_home_and_tmp_become_writable_paths() {
        let mut s = with_cwd("/sandbox/./x/..");
        let mut p = s.process().clone().unwrap();
        let mut env = p.env().clone().unwrap_or_default();
        env.push("HOME=/home/me".into());
        p.set_env(Some(env));
        s.set_process(Some(p));
        run_mounts(&mut s).unwrap();
        for d in ["/sandbox", "/tmp", "/home/me"] {
            let m = mount_at(&s, d).unwrap_or_else(|| panic!("no {d}"));
            assert!(is_writable_path(m), "{d}");
            assert_eq!(m.source().as_deref(), Some(Path::new(WRITABLE_SOURCE)));
        }
        // /var/tmp only when the image has it (facts() has none)
        assert!(mount_at(&s, "/var/tmp").is_none());
    }

    #[test]
    fn a_directory_holding_a_system_path_stays_read_only() {
        for cwd in ["/var", "/var/lib", "/usr/local"] {
            let mut s = with_cwd(cwd);
            let c = run_mounts(&mut s).unwrap();
            assert!(mount_at(&s, cwd).is_none(), "{cwd}");
            assert!(
                c.0.iter().any(|c| c.what.contains("stays read-only")),
                "{cwd}"
            );
        }
    }

    #[test]
    fn a_callers_writable_mark_never_makes_a_path_writable() {
        let mut s = careless_spec();
        let mut ms = s.mounts().clone().unwrap();
        ms.push(mount("/etc", "bind", "/srv/x", &["rbind", WRITABLE_MARK]));
        s.set_mounts(Some(ms));
        run_mounts(&mut s).unwrap();
        assert!(mount_at(&s, "/etc").is_none());
    }

    #[test]
    fn a_writable_bind_of_a_host_system_path_is_made_read_only() {
        let mut s = careless_spec();
        let mut ms = s.mounts().clone().unwrap();
        ms.push(mount("/x", "bind", "/usr/share", &["rbind", "rw"]));
        s.set_mounts(Some(ms));
        run_mounts(&mut s).unwrap();
        let o = opts(mount_at(&s, "/x").unwrap());
        assert!(
            o.contains(&"ro".into()) && o.contains(&"rro".into()),
            "{o:?}"
        );
    }

    #[test]
    fn a_system_workdir_stays_read_only() {
        for cwd in ["/usr/src/app", "/etc", "/"] {
            let mut s = with_cwd(cwd);
            let c = run_mounts(&mut s).unwrap();
            if cwd != "/" {
                assert!(mount_at(&s, cwd).is_none(), "{cwd}");
                assert!(
                    c.0.iter().any(|c| c.what.contains("stays read-only")),
                    "{cwd}"
                );
            }
        }
    }

    #[test]
    fn the_callers_mounts_win_and_stay_visible_below() {
        let mut s = with_cwd("/work");
        let mut ms = s.mounts().clone().unwrap();
        ms.push(mount("/tmp/x", "bind", "/srv/data", &["rbind", "ro"]));
        ms.push(mount("/work", "bind", "/srv/work", &["rbind", "rw"]));
        s.set_mounts(Some(ms));
        run_mounts(&mut s).unwrap();
        let d = dests(&s);
        let tmp = d.iter().position(|x| x == "/tmp").unwrap();
        let below = d.iter().position(|x| x == "/tmp/x").unwrap();
        assert!(
            tmp < below,
            "rloxsc's /tmp must come before the caller's /tmp/x: {d:?}"
        );
        assert_eq!(d.iter().filter(|x| *x == "/work").count(), 1, "{d:?}");
        assert!(!opts(mount_at(&s, "/work").unwrap()).contains(&WRITABLE_MARK.to_string()));
    }

    #[test]
    fn an_image_symlink_on_the_way_keeps_a_path_read_only() {
        let mut f = facts();
        f.symlinked_writable = vec![PathBuf::from("/tmp")];
        let mut s = with_cwd("/");
        let mut c = Changes::default();
        harden_mounts(&mut s, &Policy::default(), &f, &mut c).unwrap();
        assert!(mount_at(&s, "/tmp").is_none());
    }
}
