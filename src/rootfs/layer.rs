//! The client's writable layer (the upper layer of its overlay snapshot: Docker's `<id>/diff`,
//! containerd's `<n>/fs`, Podman's `<id>/diff`), where the container's writes land as they are made.
//!
//! At create the directory holding it is checked to be changeable only by root (every directory
//! above it root's and writable by no one else: a local user who could swap it could point the
//! container's writes, or its view of the image, anywhere; and what the container's root writes
//! there, set-id files included, is host root's on disk) and cloned once. The raw clone is kept
//! attached in the container's state directory (root's alone) for the container's life, so later
//! verbs reach the very layer create used and never reopen the client's path, which could have
//! changed since. rloxsc's overlay work directory is made in it, next to the upper layer (overlayfs
//! needs both on one mount, and the client's own work directory belongs to the client's overlay).
//! At delete the work directory is removed and the clone detached: nothing else of the layer is
//! touched, and nothing is copied.

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::fstree;
use crate::fsutil::{openat2, RESOLVE_BENEATH, RESOLVE_NO_SYMLINKS};
use crate::mountapi;
use crate::policy::keys;

/// The client's layer as kept for one container.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Kept {
    /// Where the clone of the directory holding the client's upper layer is attached.
    pub at: PathBuf,
    /// The upper layer's name in it.
    pub upper: String,
    /// rloxsc's overlay work directory's name in it.
    pub work: String,
    /// The client's upper layer, as the client named it (for messages).
    pub client_upper: PathBuf,
}

impl Kept {
    /// What will be kept of the client's upper layer `upper` for the container with view token
    /// `token`, at `at` (in its state directory). Nothing is acquired yet.
    pub fn plan(upper: &Path, at: PathBuf, token: &str) -> Result<Kept> {
        let name = upper
            .file_name()
            .and_then(|n| n.to_str())
            .filter(|_| upper.parent().is_some())
            .ok_or_else(|| {
                anyhow!(
                    "the rootfs overlay's upper layer {} has no name rloxsc can use (policy key {})",
                    upper.display(),
                    keys::ROOTFS
                )
            })?;
        Ok(Kept {
            at,
            upper: name.to_string(),
            work: format!("rloxsc-work-{token}"),
            client_upper: upper.to_path_buf(),
        })
    }

    /// Checks the directory holding the client's upper layer, clones it, attaches the clone at
    /// `self.at` and makes the work directory. Returns the clone's directory, open.
    pub fn acquire(&self) -> Result<OwnedFd> {
        let parent = self.client_upper.parent().expect("checked by plan");
        crate::trust::require_root_only(&self.client_upper, "client's writable layer").map_err(
            |e| {
                anyhow!(
                    "{e:#}; the container's writes would land there (policy key {}; a caller that keeps layers where others can write may send root.readonly: true, and the container's writes are then scratch)",
                    keys::ROOTFS
                )
            },
        )?;
        let clone = mountapi::clone_path(parent, false)?;
        // nosuid and nodev as every mount of the container's; not noexec: the container's direct
        // paths are clones of this one and run what is written there (a venv's pip)
        mountapi::set_attrs(&clone, mountapi::ATTR_NOSUID | mountapi::ATTR_NODEV, false)?;
        std::fs::create_dir(&self.at)
            .or_else(|e| {
                if e.kind() == std::io::ErrorKind::AlreadyExists {
                    Ok(())
                } else {
                    Err(e)
                }
            })
            .with_context(|| format!("cannot create {}", self.at.display()))?;
        mountapi::attach(&clone, &self.at)?;
        let dir = self.open()?;
        let upper = openat2(
            dir.as_raw_fd(),
            Path::new(&self.upper),
            libc::O_PATH | libc::O_DIRECTORY,
            RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS,
        )
        .with_context(|| {
            format!(
                "the client's writable layer {} is not a directory (policy key {})",
                self.client_upper.display(),
                keys::ROOTFS
            )
        })?;
        drop(upper);
        let name = std::ffi::CString::new(self.work.as_str())?;
        // SAFETY: mkdirat on the clone's directory fd with a NUL-terminated name
        fstree::check(unsafe { libc::mkdirat(dir.as_raw_fd(), name.as_ptr(), 0o700) })
            .with_context(|| {
                format!(
                    "cannot make rloxsc's work directory next to {}",
                    self.client_upper.display()
                )
            })?;
        Ok(dir)
    }

    /// Bounds what is written into the kept upper layer (`limits.disk`, see
    /// [`crate::limits::disk::bound_layer`]): a project quota on it, on rloxsc's work directory and
    /// on the client's (`work`, when it is next to the upper layer). `dir` is the kept clone's
    /// directory, open.
    pub fn bound(
        &self,
        dir: &OwnedFd,
        work: Option<&Path>,
        want: crate::limits::disk::Want,
    ) -> Result<crate::limits::disk::Bound> {
        let client_work = work
            .filter(|w| w.parent() == self.client_upper.parent())
            .and_then(|w| w.file_name())
            .map(|n| std::ffi::CString::new(n.as_encoded_bytes()))
            .transpose()?;
        let ours = std::ffi::CString::new(self.work.as_str())?;
        let upper = std::ffi::CString::new(self.upper.as_str())?;
        let mut works = vec![ours.as_c_str()];
        works.extend(client_work.as_deref());
        let bound = crate::limits::disk::bound_layer(dir, &upper, &works, want)?;
        if let crate::limits::disk::Bound::Unbounded { cause } = &bound {
            tracing::info!(
                "what the container writes into the client's layer {} is bounded only by its filesystem: {cause} (policy key {})",
                self.client_upper.display(),
                keys::DISK
            );
        }
        Ok(bound)
    }

    /// The kept clone's directory, open.
    pub fn open(&self) -> Result<OwnedFd> {
        openat2(
            libc::AT_FDCWD,
            &self.at,
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW,
            0,
        )
        .with_context(|| format!("cannot open {}", self.at.display()))
    }

    /// The client's upper layer in the kept clone, open.
    pub fn open_upper(&self) -> Result<OwnedFd> {
        let dir = self.open()?;
        openat2(
            dir.as_raw_fd(),
            Path::new(&self.upper),
            libc::O_RDONLY | libc::O_DIRECTORY,
            RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS,
        )
        .with_context(|| format!("cannot open the kept {}", self.client_upper.display()))
    }

    /// Whether a mount is attached at `self.at` (the root of a mount there: whatever the path
    /// `self.at` goes through, `/var/run` or `/run`).
    fn attached(&self) -> bool {
        let Ok(c) = mountapi::cstr(&self.at) else {
            return false;
        };
        crate::fsutil::statx_attributes(&c, libc::AT_SYMLINK_NOFOLLOW)
            .is_some_and(|(attrs, _)| attrs & libc::STATX_ATTR_MOUNT_ROOT as u64 != 0)
    }

    /// Removes the work directory and detaches the clone (each only if there). Touches nothing
    /// else of the client's layer.
    pub fn release(&self) -> Result<()> {
        if self.attached() {
            let dir = self.open()?;
            let name = std::ffi::CString::new(self.work.as_str())?;
            let mut removed = 0;
            match fstree::remove_entry(dir.as_raw_fd(), &name, 0, &mut removed) {
                Ok(()) => {}
                Err(e) => {
                    return Err(e).with_context(|| {
                        format!(
                            "cannot remove rloxsc's work directory next to {}",
                            self.client_upper.display()
                        )
                    })
                }
            }
            drop(dir);
            mountapi::detach(&self.at);
            if self.attached() {
                bail!("cannot detach {}", self.at.display());
            }
        }
        match std::fs::remove_dir(&self.at) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(e).with_context(|| format!("cannot remove {}", self.at.display()))
            }
            _ => Ok(()),
        }
    }
}
