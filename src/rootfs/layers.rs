//! What the caller's rootfs is made of: a plain directory (a bundle's rootfs), a client's overlay
//! snapshot (Docker's, Podman's, containerd's: its layers and the upper layer where the client keeps
//! the container's own writes), or another mount of its own (Docker's vfs driver, a bind). Read from
//! this process's mountinfo ([`crate::mountinfo`]).

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

use crate::mountinfo::Mount;
use crate::policy::keys;

/// The kind of the caller's rootfs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Source {
    /// A directory that is not a mount of its own: what the container writes is scratch, gone at
    /// delete (nothing else looks at it).
    Directory,
    /// A client's overlay snapshot mounted at the rootfs.
    Overlay {
        /// The read-only layers, topmost first.
        lowers: Vec<PathBuf>,
        /// The client's upper layer: the container's own layer, where its writes belong.
        upper: PathBuf,
        /// The client's overlay work directory (its copy-ups are renamed from there into the
        /// upper layer), when the mount names one.
        work: Option<PathBuf>,
    },
    /// A mount of its own that is not an overlay (or an overlay whose layers the host cannot reach):
    /// the rootfs directory itself is the image and the container's layer.
    OwnMount,
}

impl Source {
    /// Whether a client keeps this rootfs and looks into it (its copy API): the container's
    /// writes must land there.
    pub fn is_clients(&self) -> bool {
        !matches!(self, Source::Directory)
    }

    /// The layers a read-only view of the image stacks, topmost first: the client's upper layer
    /// (what it put in the container before start), then its lowers; or the rootfs itself.
    pub fn image_layers(&self, rootfs: &Path) -> Vec<PathBuf> {
        match self {
            Source::Overlay { lowers, upper, .. } => std::iter::once(upper.clone())
                .chain(lowers.iter().cloned())
                .collect(),
            _ => vec![rootfs.to_path_buf()],
        }
    }
}

/// Splits overlay's `lowerdir` value at its unescaped `:` (overlay lets a path escape `:` and `\`
/// with a backslash). A `::` (data-only layers, Linux 6.5) is refused: those layers are reachable
/// only through metacopy redirects, which rloxsc does not rebuild.
pub fn split_lowerdir(v: &str) -> Result<Vec<String>> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = v.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            ':' => {
                if chars.peek() == Some(&':') {
                    bail!(
                        "the rootfs overlay has data-only lower layers (::), which rloxsc cannot stack again (policy key {})",
                        keys::ROOTFS
                    );
                }
                out.push(std::mem::take(&mut cur));
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    Ok(out)
}

/// Resolves a layer path the client gave its mount: absolute as is; relative (Docker and containerd
/// mount from their storage directory with relative paths when the absolute ones do not fit in a
/// page) against `home`.
fn resolve(p: &str, home: Option<&Path>) -> Result<PathBuf> {
    let path = Path::new(p);
    if path.is_absolute() {
        return Ok(path.to_path_buf());
    }
    match home {
        Some(h) => Ok(h.join(path)),
        None => bail!(
            "the rootfs overlay names its layer {p:?} relative to a directory rloxsc cannot tell (policy key {})",
            keys::ROOTFS
        ),
    }
}

/// What the rootfs at `rootfs` (canonical) is, from the mount table `mounts` of this process.
pub fn of(rootfs: &Path, mounts: &[Mount]) -> Result<Source> {
    let Some(m) = crate::mountinfo::top_at(mounts, rootfs) else {
        return Ok(Source::Directory);
    };
    if let Some(other) = m.source.as_deref().filter(|s| s.starts_with("rloxsc-")) {
        // another container's root attached for its client: never an image to stack again
        bail!(
            "the rootfs {} already shows another rloxsc container's filesystem ({other}): two containers cannot share one client's rootfs (policy key {})",
            rootfs.display(),
            keys::ROOTFS
        );
    }
    if m.fstype != "overlay" || m.root != "/" {
        return Ok(Source::OwnMount);
    }
    let (Some(lower), Some(upper)) = (m.super_opt("lowerdir"), m.super_opt("upperdir")) else {
        // a read-only overlay (no upper layer): nothing of the client's to write into
        return Ok(Source::OwnMount);
    };
    // relative layers are relative to the client's storage directory: the one that holds the
    // upper layer's directory (`<home>/<id>/diff`, containerd's `<home>/<n>/fs`)
    let upper_abs = Path::new(upper).is_absolute();
    let home: Option<PathBuf> = if upper_abs {
        Path::new(upper)
            .parent()
            .and_then(Path::parent)
            .map(Path::to_path_buf)
    } else {
        // Docker mounts `<home>/<id>/merged` from `<home>` with `upperdir=<id>/diff`
        rootfs
            .parent()
            .and_then(Path::parent)
            .map(Path::to_path_buf)
    };
    let upper = resolve(upper, home.as_deref())?;
    let work = match m.super_opt("workdir") {
        Some(w) => Some(resolve(w, home.as_deref())?),
        None => None,
    };
    let mut lowers = Vec::new();
    for l in split_lowerdir(lower)? {
        lowers.push(resolve(&l, home.as_deref())?);
    }
    // Podman with `userns = "auto"` and containerd 2.x with a pod's user namespace stack idmapped
    // clones of the layers that they detach once the overlay is mounted: its layers are then not
    // reachable by path, and the overlay mount itself is the image (and the container's layer)
    if let Some(p) = std::iter::once(&upper).chain(&lowers).find(|p| !p.is_dir()) {
        if !in_hosts_mount_namespace() {
            // Podman 4.3 with `userns = "auto"`: create runs in a private mount namespace holding
            // the idmapped layers, start and delete outside it, where the store would be unreachable
            bail!(
                "the rootfs overlay's layer {} is reachable only in a private mount namespace, which this create runs in and later verbs do not (Podman's userns = \"auto\" does this): remove userns from containers.conf, rloxsc gives the container a user namespace of its own (policy key {})",
                p.display(),
                keys::WRITABLE
            );
        }
        tracing::info!(
            "the rootfs overlay's layer {} is not reachable from the host: the rootfs mount itself is the image and the container's layer (policy key {})",
            p.display(),
            keys::ROOTFS
        );
        return Ok(Source::OwnMount);
    }
    Ok(Source::Overlay {
        lowers,
        upper,
        work,
    })
}

/// Whether this process is in the mount namespace of PID 1 (of its pid namespace).
fn in_hosts_mount_namespace() -> bool {
    let ns = |p: &str| {
        std::fs::metadata(p).ok().map(|m| {
            use std::os::unix::fs::MetadataExt;
            (m.dev(), m.ino())
        })
    };
    match (ns("/proc/self/ns/mnt"), ns("/proc/1/ns/mnt")) {
        (Some(a), Some(b)) => a == b,
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lowerdir_splits_at_unescaped_colons() {
        assert_eq!(
            split_lowerdir("/a:/b\\:c:/d\\\\e").unwrap(),
            vec!["/a", "/b:c", "/d\\e"]
        );
        assert!(split_lowerdir("/a::/data").is_err());
    }

    fn line(point: &str, fstype: &str, sb: &str) -> Mount {
        crate::mountinfo::parse(&format!("1 2 0:1 / {point} rw - {fstype} src {sb}\n"))
            .unwrap()
            .remove(0)
    }

    #[test]
    fn a_directory_that_is_no_mount_is_scratch() {
        let mounts = vec![line("/", "ext4", "rw")];
        assert_eq!(
            of(Path::new("/b/rootfs"), &mounts).unwrap(),
            Source::Directory
        );
    }

    #[test]
    fn an_overlay_gives_its_layers_relative_ones_resolved_in_the_clients_home() {
        let d = std::env::temp_dir().join(format!("rloxsc-layers-{}", std::process::id()));
        for sub in ["l/A", "l/B", "id1/diff", "id1/merged"] {
            std::fs::create_dir_all(d.join(sub)).unwrap();
        }
        let merged = d.join("id1/merged");
        let abs = line(
            merged.to_str().unwrap(),
            "overlay",
            &format!(
                "rw,lowerdir={0}/l/A:{0}/l/B,upperdir={0}/id1/diff,workdir={0}/id1/work",
                d.display()
            ),
        );
        let rel = line(
            merged.to_str().unwrap(),
            "overlay",
            "rw,lowerdir=l/A:l/B,upperdir=id1/diff,workdir=id1/work",
        );
        for m in [abs, rel] {
            match of(&merged, &[m]).unwrap() {
                Source::Overlay {
                    lowers,
                    upper,
                    work,
                } => {
                    assert_eq!(lowers, vec![d.join("l/A"), d.join("l/B")]);
                    assert_eq!(upper, d.join("id1/diff"));
                    assert_eq!(work, Some(d.join("id1/work")));
                }
                other => panic!("{other:?}"),
            }
        }
        let gone = line(
            merged.to_str().unwrap(),
            "overlay",
            "rw,lowerdir=/nonexistent/x,upperdir=id1/diff,workdir=id1/work",
        );
        // (Podman's userns = "auto": idmapped layer clones detached after the overlay was mounted)
        assert_eq!(of(&merged, &[gone]).unwrap(), Source::OwnMount);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn another_mount_of_its_own_is_the_containers_layer() {
        let mounts = vec![line("/var/lib/docker/vfs/dir/x", "ext4", "rw")];
        assert_eq!(
            of(Path::new("/var/lib/docker/vfs/dir/x"), &mounts).unwrap(),
            Source::OwnMount
        );
    }
}
