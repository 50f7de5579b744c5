//! The one reader of `/proc/<pid>/mountinfo`: parsed by `procfs`, every field unescaped once (the
//! kernel writes a space, tab, newline or backslash in a path, and a comma, `=` or backslash in an
//! option value, as a backslash and three octal digits).

use std::path::PathBuf;

use anyhow::{anyhow, Result};

/// One line of mountinfo.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    /// Mount id.
    pub id: i32,
    /// Parent mount id.
    pub parent: i32,
    /// The directory of the filesystem that is this mount's root.
    pub root: String,
    /// Where it is mounted.
    pub point: PathBuf,
    /// Per-mount options (`ro`, `nosuid`, `idmapped`, ...), sorted.
    pub opts: Vec<String>,
    /// Filesystem type.
    pub fstype: String,
    /// The mount's source (`none` and empty as `None`).
    pub source: Option<String>,
    /// Per-superblock options as `(key, value)`, in the kernel's order.
    pub super_opts: Vec<(String, Option<String>)>,
}

impl Mount {
    /// The value of superblock option `key`, when it has one.
    pub fn super_opt(&self, key: &str) -> Option<&str> {
        self.super_opts
            .iter()
            .find(|(k, _)| k == key)
            .and_then(|(_, v)| v.as_deref())
    }

    /// Whether per-mount option `o` is set.
    pub fn has_opt(&self, o: &str) -> bool {
        self.opts.iter().any(|x| x == o)
    }
}

/// Undoes the kernel's octal escapes (`\040` for a space, ...). Anything else is kept as is.
pub fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            let v = (b[i + 1] - b'0') as u32 * 64
                + (b[i + 2] - b'0') as u32 * 8
                + (b[i + 3] - b'0') as u32;
            if let Ok(byte) = u8::try_from(v) {
                out.push(byte);
                i += 4;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn convert(m: procfs::process::MountInfo) -> Mount {
    let mut opts: Vec<String> = m.mount_options.into_keys().collect();
    opts.sort();
    // procfs keeps the superblock options in a map: their order (overlay's lowerdir before upperdir)
    // does not matter to anything read here
    let mut super_opts: Vec<(String, Option<String>)> = m
        .super_options
        .into_iter()
        .map(|(k, v)| (unescape(&k), v.map(|v| unescape(&v))))
        .collect();
    super_opts.sort();
    Mount {
        id: m.mnt_id,
        parent: m.pid,
        root: unescape(&m.root),
        point: PathBuf::from(unescape(&m.mount_point.to_string_lossy())),
        opts,
        fstype: m.fs_type,
        source: m.mount_source.map(|s| unescape(&s)),
        super_opts,
    }
}

/// The mounts of process `pid`'s mount namespace, as it sees them.
pub fn of_pid(pid: i32) -> Result<Vec<Mount>> {
    let p = procfs::process::Process::new(pid).map_err(|e| anyhow!("/proc/{pid}: {e}"))?;
    let m = p
        .mountinfo()
        .map_err(|e| anyhow!("/proc/{pid}/mountinfo: {e}"))?;
    Ok(m.0.into_iter().map(convert).collect())
}

/// This process's mounts.
pub fn own() -> Result<Vec<Mount>> {
    of_pid(std::process::id() as i32)
}

/// Parses mountinfo text (tests, and a mountinfo read through an open `/proc/<pid>`).
pub fn parse(text: &str) -> Result<Vec<Mount>> {
    use procfs::FromBufRead;
    procfs::process::MountInfos::from_buf_read(text.as_bytes())
        .map(|m| m.0.into_iter().map(convert).collect())
        .map_err(|e| anyhow!("cannot parse mountinfo: {e}"))
}

/// The topmost mount at `point` (the one a path lookup of `point` lands on), if any.
pub fn top_at<'a>(mounts: &'a [Mount], point: &std::path::Path) -> Option<&'a Mount> {
    mounts.iter().rev().find(|m| m.point == point)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn octal_escapes_are_undone_once() {
        assert_eq!(unescape(r"/a\040b"), "/a b");
        assert_eq!(unescape(r"x\134040"), r"x\040");
        assert_eq!(unescape(r"lower\054dir"), "lower,dir");
        assert_eq!(unescape(r"trailing\04"), r"trailing\04");
        assert_eq!(unescape(r"\777"), r"\777");
    }

    #[test]
    fn overlay_lines_give_their_layers_and_source() {
        let text = "101 27 0:50 / /var/lib/docker/overlay2/abc/merged rw,relatime shared:70 - overlay overlay rw,lowerdir=/l/A:/l/B\\054x,upperdir=/u/diff,workdir=/u/work,index=off\n";
        let m = parse(text).unwrap();
        assert_eq!(m.len(), 1);
        let m = &m[0];
        assert_eq!(m.fstype, "overlay");
        assert_eq!(
            m.point,
            PathBuf::from("/var/lib/docker/overlay2/abc/merged")
        );
        assert_eq!(m.super_opt("lowerdir"), Some("/l/A:/l/B,x"));
        assert_eq!(m.super_opt("upperdir"), Some("/u/diff"));
        assert!(m.has_opt("rw"));
        assert_eq!(m.source.as_deref(), Some("overlay"));
    }
}
