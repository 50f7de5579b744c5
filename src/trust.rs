//! Which host files rloxsc may trust: those only root can change. A policy file that a local user can
//! write (or replace, through a directory above it that they can write) would let them widen what root's
//! rloxsc gives containers; a state root they control would let them make root's rloxsc signal or
//! remove what they choose. The rule is sshd's `StrictModes`, with one refinement for shared
//! directories: the path and every directory above it must be owned by root and writable by no one
//! else; a directory above it may be world-writable only if it is sticky (like `/tmp`: nobody but the
//! owner can rename or remove a root-owned entry in it). Symlinks on the way must be root's too, and
//! their targets are checked the same way.

use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::policy::keys;

/// How many symlinks a trusted path may go through.
const MAX_LINKS: usize = 40;

/// Fails unless `path` (which may not exist yet) can only be changed by root: see the module
/// documentation. `what` names it in the error ("policy file", "state root").
pub fn require_root_only(path: &Path, what: &str) -> Result<()> {
    let abs = std::path::absolute(path)
        .with_context(|| format!("cannot resolve the {what} {}", path.display()))?;
    let mut pending: Vec<PathBuf> = components(&abs);
    pending.reverse();
    let mut cur = PathBuf::from("/");
    check_dir(&cur, what, path, false)?;
    let mut links = 0;
    while let Some(c) = pending.pop() {
        if c.as_os_str() == ".." {
            cur.pop();
            continue;
        }
        cur.push(&c);
        let md = match std::fs::symlink_metadata(&cur) {
            Ok(m) => m,
            // the rest does not exist yet: what exists above it was checked
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => {
                return Err(e)
                    .with_context(|| format!("cannot check the {what} {}", path.display()))
            }
        };
        let last = pending.is_empty();
        if md.file_type().is_symlink() {
            links += 1;
            if links > MAX_LINKS {
                bail!(
                    "the {what} {} goes through too many symlinks",
                    path.display()
                );
            }
            if md.uid() != 0 {
                bail!(
                    "refusing the {what} {}: {} is a symlink owned by uid {}, not root (policy key {})",
                    path.display(),
                    cur.display(),
                    md.uid(),
                    keys::TRUSTED_FILES
                );
            }
            let target = std::fs::read_link(&cur)?;
            cur.pop();
            if target.is_absolute() {
                cur = PathBuf::from("/");
            }
            let mut t = components(&target);
            t.reverse();
            pending.extend(t);
            continue;
        }
        if md.is_dir() && !last {
            check_dir(&cur, what, path, true)?;
        } else {
            check_final(&cur, &md, what, path)?;
        }
    }
    Ok(())
}

fn components(p: &Path) -> Vec<PathBuf> {
    p.components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(PathBuf::from(n)),
            Component::ParentDir => Some(PathBuf::from("..")),
            _ => None,
        })
        .collect()
}

fn check_dir(dir: &Path, what: &str, path: &Path, sticky_ok: bool) -> Result<()> {
    let md = std::fs::metadata(dir).with_context(|| format!("cannot check {}", dir.display()))?;
    let writable_by_others = md.mode() & 0o022 != 0;
    let sticky = md.mode() & 0o1000 != 0;
    if md.uid() != 0 || (writable_by_others && !(sticky && sticky_ok)) {
        bail!(
            "refusing the {what} {}: the directory {} is {} (mode {:04o}); it and every directory above it must be root's and writable only by root (policy key {})",
            path.display(),
            dir.display(),
            if md.uid() != 0 { format!("owned by uid {}", md.uid()) } else { "writable by other users".to_string() },
            md.mode() & 0o7777,
            keys::TRUSTED_FILES
        );
    }
    Ok(())
}

fn check_final(p: &Path, md: &std::fs::Metadata, what: &str, path: &Path) -> Result<()> {
    if md.uid() != 0 || md.mode() & 0o022 != 0 {
        bail!(
            "refusing the {what} {}: {} is {} (mode {:04o}); it must be root's and writable only by root (policy key {})",
            path.display(),
            p.display(),
            if md.uid() != 0 { format!("owned by uid {}", md.uid()) } else { "writable by other users".to_string() },
            md.mode() & 0o7777,
            keys::TRUSTED_FILES
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("rloxsc-trust-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
        d
    }

    // These need root (the files must be root's to pass); as another user they are skipped.
    fn root() -> bool {
        // SAFETY: geteuid has no preconditions
        unsafe { libc::geteuid() == 0 }
    }

    #[test]
    fn root_only_paths_pass_others_are_refused() {
        if !root() {
            return;
        }
        let d = dir("a");
        let f = d.join("policy.toml");
        std::fs::write(&f, "").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
        require_root_only(&f, "policy file").unwrap();
        // under sticky /tmp it still passes; a missing file below a good directory too
        require_root_only(&d.join("missing/deeper"), "state root").unwrap();
        // world-writable file
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o666)).unwrap();
        let e = require_root_only(&f, "policy file")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("writable by other users") && e.contains(keys::TRUSTED_FILES),
            "{e}"
        );
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
        // owned by another user
        std::os::unix::fs::chown(&f, Some(65534), None).unwrap();
        assert!(require_root_only(&f, "policy file")
            .unwrap_err()
            .to_string()
            .contains("uid 65534"));
        std::os::unix::fs::chown(&f, Some(0), None).unwrap();
        // in a directory another user can write (not sticky)
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(require_root_only(&f, "policy file").is_err());
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
        // a symlink owned by another user, and one owned by root to a good file
        let l = d.join("link");
        std::os::unix::fs::symlink(&f, &l).unwrap();
        require_root_only(&l, "policy file").unwrap();
        std::os::unix::fs::lchown(&l, Some(65534), None).unwrap();
        assert!(require_root_only(&l, "policy file")
            .unwrap_err()
            .to_string()
            .contains("symlink"));
        std::fs::remove_dir_all(&d).unwrap();
    }
}
