//! The host setting Podman's `userns = "auto"` (contrib/podman/containers.conf) needs: ranges of
//! subordinate ids for the user `containers` in `/etc/subuid` and `/etc/subgid`, from which Podman
//! gives each container a mapping of its own (then rloxsc keeps it, and `podman cp` and the API's
//! put_archive write files the container's root owns). The range rloxsc adds lies below rloxsc's
//! own pool (`userns.pool`, host ids 2^30 and up), so the two never overlap. `rloxsc doctor` says
//! whether it is there; `rloxsc doctor --fix` adds it. (contrib's containers.conf no longer sets
//! `userns = "auto"`: Podman 4.3 then runs the runtime's create in a private mount namespace.)

use std::path::Path;

use anyhow::{Context, Result};

/// The first host id of the range added for `containers`.
pub const START: u64 = 1_000_000_000;
/// How many ids (1000 containers of 65536).
pub const COUNT: u64 = 65_536_000;

/// The files holding the ranges.
pub const FILES: [&str; 2] = ["/etc/subuid", "/etc/subgid"];

/// The `containers` range of `text` (a subuid/subgid file), if it has one: (start, count).
pub fn range_in(text: &str) -> Option<(u64, u64)> {
    text.lines().find_map(|l| {
        let mut f = l.trim().split(':');
        if f.next()? != "containers" {
            return None;
        }
        Some((f.next()?.parse().ok()?, f.next()?.parse().ok()?))
    })
}

/// What `path` says: `Ok(Some(range))`, `Ok(None)` when it has no `containers` line (or no file).
pub fn read(path: &Path) -> Result<Option<(u64, u64)>> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok(range_in(&t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// Whether range (start, count) overlaps rloxsc's pool `pool`.
pub fn overlaps_pool(range: (u64, u64), pool: &crate::policy::Pool) -> bool {
    let lo = pool.start as u64;
    let hi = lo + pool.blocks as u64 * crate::policy::BLOCK as u64;
    range.0 < hi && range.0 + range.1 > lo
}

/// Adds the `containers` range to each file that lacks one; returns the files changed.
pub fn fix() -> Result<Vec<String>> {
    let mut changed = Vec::new();
    for f in FILES {
        let p = Path::new(f);
        if read(p)?.is_some() {
            continue;
        }
        let mut text = std::fs::read_to_string(p).unwrap_or_default();
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format!("containers:{START}:{COUNT}\n"));
        crate::fsutil::replace_file(p, text.as_bytes(), 0o644, "subordinate id file")?;
        changed.push(f.to_string());
    }
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_added_range_is_found_and_lies_below_rloxscs_pool() {
        assert_eq!(
            range_in("alice:100000:65536\ncontainers:1000000000:65536000\n"),
            Some((START, COUNT))
        );
        assert_eq!(range_in("alice:100000:65536\n"), None);
        let pool = crate::policy::Pool::default();
        assert!(!overlaps_pool((START, COUNT), &pool));
        assert!(overlaps_pool((1 << 30, 10), &pool));
    }
}
