//! `limits.disk`: what a container may write into the client's writable layer, bounded by a
//! **project quota** where the layer's filesystem enforces one (ext4 made with `-O quota,project`
//! and mounted `prjquota`, XFS mounted `pquota`: what Docker's `--storage-opt size` uses).
//!
//! At create, before anything of the container runs, the client's upper layer and both overlay
//! work directories (rloxsc's and the client's, whose copy-ups rename into the layer) get one
//! project id with `PROJINHERIT`, so everything made in them later belongs to the project, and the
//! project gets the policy's limit in bytes and inodes. The id is the layer's own (derived from the
//! upper directory's inode, never one whose project holds anything else): a restarted container
//! finds its layer labelled already, and another layer never shares its count. overlayfs never
//! lets its writes bypass a quota (it drops `CAP_SYS_RESOURCE` from the mounter's credentials),
//! and the container's own processes have no `CAP_SYS_RESOURCE` on the host.
//!
//! A client that bounded the layer itself with a project of its own at most the policy's size
//! keeps its bound. Where no project quota is enforced, the layer is as large as its filesystem,
//! as under runc: logged, shown by `doctor`, `policy show` and the run record; a policy with
//! `required = true` makes create refuse there, naming what the filesystem lacks. Scratch writes
//! are bounded by the store everywhere; writes into the client's own mount (not an overlay rloxsc
//! stacks) have no bound rloxsc can set.
//!
//! Nothing is written back at delete: the labels and the limit stay the layer's, as Docker's do.

use std::ffi::CStr;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

use crate::fstree;
use crate::policy::keys;

/// `quotactl` sub-commands and the project quota type (linux/quota.h, linux/dqblk_xfs.h).
const Q_GETQUOTA: u32 = 0x80_0007;
const Q_SETQUOTA: u32 = 0x80_0008;
const Q_XGETQSTATV: u32 = (b'X' as u32) << 8 | 8;
const PRJQUOTA: u32 = 2;
/// `dqb_valid`: the block and inode limits are set.
const QIF_LIMITS: u32 = 1 | 4;
/// `fs_quota_statv.qs_flags`: project quota limits are enforced.
const FS_QUOTA_PDQ_ENFD: u16 = 1 << 5;
/// The `FS_IOC_FS{GET,SET}XATTR` ioctls and `FS_XFLAG_PROJINHERIT` (linux/fs.h).
const FS_IOC_FSGETXATTR: libc::c_ulong = 0x801c_581f;
const FS_IOC_FSSETXATTR: libc::c_ulong = 0x401c_5820;
const FS_XFLAG_PROJINHERIT: u32 = 0x200;
/// Project ids rloxsc gives start here (clients such as Docker count theirs up from 1).
const PROJECT_BASE: u32 = 1 << 30;

/// What bounds the bytes a container writes (recorded at create; the run record and the outside
/// check read it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Bound {
    /// A project quota on the client's writable layer.
    Quota {
        /// The project id.
        project: u32,
        /// Its limit in bytes.
        bytes: u64,
        /// Whether the client set it (its own project, at most the policy's size) rather than rloxsc.
        by_client: bool,
    },
    /// The container's store (scratch): bounded everywhere.
    Store {
        /// Its size in bytes.
        bytes: u64,
    },
    /// Nothing but the filesystem's size bounds it, as under runc.
    Unbounded {
        /// Why no bound could be set.
        cause: String,
    },
}

impl Bound {
    /// The bound in bytes, if there is one.
    pub fn bytes(&self) -> Option<u64> {
        match self {
            Bound::Quota { bytes, .. } | Bound::Store { bytes } => Some(*bytes),
            Bound::Unbounded { .. } => None,
        }
    }

    /// How the record, `doctor` and the logs say it.
    pub fn describe(&self) -> String {
        match self {
            Bound::Quota {
                project,
                bytes,
                by_client,
            } => format!(
                "a project quota of {} on the client's layer (project {project}{})",
                crate::policy::human_any(*bytes),
                if *by_client { ", the client's" } else { "" }
            ),
            Bound::Store { bytes } => {
                format!(
                    "the container's store, {}",
                    crate::policy::human_any(*bytes)
                )
            }
            Bound::Unbounded { cause } => format!("unbounded: {cause}"),
        }
    }
}

/// The policy's bound for one container: bytes, and whether a layer without a project quota is
/// refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Want {
    /// The limit in bytes.
    pub bytes: u64,
    /// `required = true`: no container is created where its layer cannot be bounded.
    pub required: bool,
    /// When the create must be done by (its limit, or the run's `--timeout`): labelling a layer
    /// that holds much stops there.
    pub deadline: std::time::Instant,
}

/// The inodes a project of `bytes` may hold: one per 4 KiB, at least 4096 (as the store).
pub fn inodes_for(bytes: u64) -> u64 {
    (bytes / 4096).max(4096)
}

/// The project id for a layer whose upper directory is inode `ino`, on the `attempt`th try (pure):
/// in rloxsc's range, never 0, stable for one directory.
pub fn project_for(ino: u64, attempt: u32) -> u32 {
    let folded = (ino ^ (ino >> 30) ^ (ino >> 60)) as u32;
    let mixed = folded.wrapping_add(attempt.wrapping_mul(0x9e37_79b9));
    PROJECT_BASE | (mixed & (PROJECT_BASE - 1)).max(1)
}

#[repr(C)]
#[derive(Default)]
struct FsXattr {
    xflags: u32,
    extsize: u32,
    nextents: u32,
    projid: u32,
    cowextsize: u32,
    pad: [u8; 8],
}

#[repr(C)]
#[derive(Default, Clone, Copy)]
struct DqBlk {
    bhardlimit: u64,
    bsoftlimit: u64,
    curspace: u64,
    ihardlimit: u64,
    isoftlimit: u64,
    curinodes: u64,
    btime: u64,
    itime: u64,
    valid: u32,
}

fn quotactl(fd: RawFd, cmd: u32, id: u32, addr: *mut libc::c_void) -> std::io::Result<()> {
    // SAFETY: quotactl_fd on a valid fd; `addr` points at a buffer of the size `cmd` writes or reads
    let rc = unsafe { libc::syscall(libc::SYS_quotactl_fd, fd, (cmd << 8) | PRJQUOTA, id, addr) };
    if rc < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(())
    }
}

fn get_xattr(fd: RawFd) -> std::io::Result<FsXattr> {
    let mut x = FsXattr::default();
    // SAFETY: FS_IOC_FSGETXATTR fills a struct fsxattr we own
    fstree::check(unsafe { libc::ioctl(fd, FS_IOC_FSGETXATTR, &mut x as *mut FsXattr) })?;
    Ok(x)
}

fn set_project(fd: RawFd, project: u32, inherit: bool) -> std::io::Result<()> {
    let mut x = get_xattr(fd)?;
    let flags = if inherit {
        x.xflags | FS_XFLAG_PROJINHERIT
    } else {
        x.xflags
    };
    if x.projid == project && x.xflags == flags {
        return Ok(());
    }
    x.projid = project;
    x.xflags = flags;
    // SAFETY: FS_IOC_FSSETXATTR reads the struct fsxattr we own
    fstree::check(unsafe { libc::ioctl(fd, FS_IOC_FSSETXATTR, &x as *const FsXattr) })
}

fn get_quota(fd: RawFd, project: u32) -> std::io::Result<DqBlk> {
    let mut q = DqBlk::default();
    quotactl(
        fd,
        Q_GETQUOTA,
        project,
        &mut q as *mut DqBlk as *mut libc::c_void,
    )?;
    Ok(q)
}

fn set_quota(fd: RawFd, project: u32, bytes: u64) -> std::io::Result<()> {
    let mut q = DqBlk {
        bhardlimit: bytes.div_ceil(1024),
        ihardlimit: inodes_for(bytes),
        valid: QIF_LIMITS,
        ..Default::default()
    };
    quotactl(
        fd,
        Q_SETQUOTA,
        project,
        &mut q as *mut DqBlk as *mut libc::c_void,
    )
}

/// Why no project quota can bound what is written in the filesystem of `fd`, or `None` when one is
/// enforced there.
pub fn unsupported(fd: RawFd) -> Option<String> {
    // struct fs_quota_statv: qs_version (1) first, qs_flags at offset 2
    let mut buf = [0u8; 256];
    buf[0] = 1;
    match quotactl(fd, Q_XGETQSTATV, 0, buf.as_mut_ptr() as *mut libc::c_void) {
        Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => Some(format!(
            "no quota support there (the filesystem has no quota feature, or the kernel no quota support or no quotactl_fd, Linux 5.14+: {e})"
        )),
        Err(e) => Some(format!("the filesystem's quota state cannot be read ({e})")),
        Ok(()) if u16::from_ne_bytes([buf[2], buf[3]]) & FS_QUOTA_PDQ_ENFD == 0 => Some(
            "its filesystem enforces no project quota (ext4: made with -O quota,project and mounted with prjquota; XFS: mounted with pquota)"
                .to_string(),
        ),
        Ok(()) => None,
    }
}

/// Where the clients this host may have keep their layers (Docker, containerd, Podman as root).
pub const CLIENT_STORAGE: &[&str] = &[
    "/var/lib/docker",
    "/var/lib/containerd",
    "/var/lib/containers/storage",
];

/// The clients' storage directories present on this host, each with why no project quota bounds a
/// layer there (`None`: one does).
pub fn clients_storage() -> Vec<(std::path::PathBuf, Option<String>)> {
    CLIENT_STORAGE
        .iter()
        .filter_map(|d| {
            let fd = crate::fsutil::openat2(
                libc::AT_FDCWD,
                std::path::Path::new(d),
                libc::O_RDONLY | libc::O_DIRECTORY,
                0,
            )
            .ok()?;
            Some((d.into(), unsupported(fd.as_raw_fd())))
        })
        .collect()
}

/// Gives the directory open at `dir` and everything below it project `project` (directories
/// with `PROJINHERIT`), never following what the container or the client put there: directories
/// are opened by fd relative to their parent with `O_NOFOLLOW`, only directories and regular files
/// are opened (never a FIFO or a device), symlinks keep theirs. Bounded in depth.
fn label(
    dir: &OwnedFd,
    project: u32,
    depth: usize,
    labelled: &mut u64,
    deadline: std::time::Instant,
) -> std::io::Result<()> {
    if depth > fstree::MAX_DEPTH {
        return Err(std::io::Error::other("nested too deep to label"));
    }
    if std::time::Instant::now() > deadline {
        return Err(std::io::Error::other(
            "the create's time limit passed (limits.create_timeout or --timeout)",
        ));
    }
    set_project(dir.as_raw_fd(), project, true)?;
    *labelled += 1;
    for name in fstree::names_in(dir)? {
        let st = fstree::lstat_at(dir.as_raw_fd(), &name)?;
        match fstree::kind(&st) {
            fstree::Kind::Dir => {
                let d = fstree::open_dir_at(dir.as_raw_fd(), &name)?;
                label(&d, project, depth + 1, labelled, deadline)?;
            }
            fstree::Kind::File => {
                let f = fstree::open_at(
                    dir.as_raw_fd(),
                    &name,
                    libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY,
                    0,
                )?;
                let now = fstree::stat_fd(f.as_raw_fd())?;
                if fstree::kind(&now) == fstree::Kind::File && now.st_ino == st.st_ino {
                    set_project(f.as_raw_fd(), project, false)?;
                    *labelled += 1;
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// Bounds what is written in the client's upper layer `upper` (a directory in `parent`, the kept
/// clone of the directory holding it) with a project quota of `want.bytes`, labelling the work
/// directories `works` (in `parent`; one that is not there is skipped) with it too. Returns the
/// bound in force, [`Bound::Unbounded`] where no project quota is enforced (an error instead under
/// `want.required`), or an error naming the path and the cause when a step fails.
pub fn bound_layer(parent: &OwnedFd, upper: &CStr, works: &[&CStr], want: Want) -> Result<Bound> {
    let fail = |what: String| -> anyhow::Error {
        anyhow::anyhow!(
            "cannot bound what the container writes into the client's layer: {what} (policy key {})",
            keys::DISK
        )
    };
    let up = fstree::open_dir_at(parent.as_raw_fd(), upper)
        .map_err(|e| fail(format!("cannot open its upper layer: {e}")))?;
    if let Some(cause) = unsupported(up.as_raw_fd()) {
        return unbounded(cause, want);
    }
    let st = fstree::stat_fd(up.as_raw_fd()).map_err(|e| fail(e.to_string()))?;
    let has = get_xattr(up.as_raw_fd())
        .map_err(|e| fail(format!("cannot read its project: {e}")))?
        .projid;
    let ours = (0..16).map(|a| project_for(st.st_ino, a)).find(|&p| {
        p == has
            || match get_quota(up.as_raw_fd(), p) {
                Ok(q) => q.curinodes == 0 && q.curspace == 0,
                // XFS: no quota record for the id, so nothing is in the project
                Err(e) => e.raw_os_error() == Some(libc::ENOENT),
            }
    });
    let Some(project) = ours else {
        return Err(fail(
            "every project id it could take already holds other files".to_string(),
        ));
    };
    if has != 0 && has != project {
        // the client's own project: kept when its limit is at most the policy's
        if let Ok(q) = get_quota(up.as_raw_fd(), has) {
            let bytes = q.bhardlimit.saturating_mul(1024);
            if bytes > 0 && bytes <= want.bytes {
                return Ok(Bound::Quota {
                    project: has,
                    bytes,
                    by_client: true,
                });
            }
        }
    }
    if has != project {
        let mut labelled = 0;
        label(&up, project, 0, &mut labelled, want.deadline)
            .map_err(|e| fail(format!("cannot give its files project {project}: {e}")))?;
        tracing::debug!("{labelled} entries of the client's layer labelled project {project}");
    }
    for w in works {
        match fstree::open_dir_at(parent.as_raw_fd(), w) {
            Ok(d) => label(&d, project, 0, &mut 0, want.deadline).map_err(|e| {
                fail(format!(
                    "cannot give the work directory {} project {project}: {e}",
                    w.to_string_lossy()
                ))
            })?,
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {}
            Err(e) => return Err(fail(format!("{}: {e}", w.to_string_lossy()))),
        }
    }
    set_quota(up.as_raw_fd(), project, want.bytes)
        .map_err(|e| fail(format!("cannot set project {project}'s limit: {e}")))?;
    Ok(Bound::Quota {
        project,
        bytes: want.bytes,
        by_client: false,
    })
}

/// The bound where the container writes into the client's rootfs mount itself (the caller's own
/// user namespace, a mount that is not an overlay rloxsc stacks): none rloxsc can set; refused
/// under `want.required`.
pub fn client_mount(want: Want) -> Result<Bound> {
    unbounded(
        "the container writes into the client's rootfs mount itself (not an overlay whose layers rloxsc stacks), which rloxsc cannot bound".to_string(),
        want,
    )
}

/// [`Bound::Unbounded`] for `cause`, or the refusal when the policy requires a bound.
fn unbounded(cause: String, want: Want) -> Result<Bound> {
    if want.required {
        bail!(
            "refusing to create a container whose writes no project quota can bound: {cause}; the policy requires the bound (policy key {}, required = true)",
            keys::DISK
        );
    }
    Ok(Bound::Unbounded { cause })
}

/// What the host shows of a layer's bound (the outside check): the upper directory's project and
/// whether it is inherited, and the project's limit in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seen {
    /// The upper directory's project id.
    pub project: u32,
    /// Whether it carries `PROJINHERIT`.
    pub inherit: bool,
    /// The project's hard limit in bytes (0: none).
    pub limit_bytes: u64,
    /// Whether the filesystem enforces project quotas.
    pub enforced: bool,
}

/// Reads what bounds the directory `path` on the host.
pub fn observe(path: &std::path::Path) -> Result<Seen, String> {
    // (the kept layer in rloxsc's state directory, whose path is root's: `--root` may go through
    // the root-owned /var/run link, so only the last component is not followed)
    let d = crate::fsutil::openat2(
        libc::AT_FDCWD,
        path,
        libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW,
        0,
    )
    .map_err(|e| format!("{}: {e}", path.display()))?;
    let x = get_xattr(d.as_raw_fd()).map_err(|e| format!("{}: {e}", path.display()))?;
    let limit_bytes = get_quota(d.as_raw_fd(), x.projid)
        .map(|q| q.bhardlimit.saturating_mul(1024))
        .unwrap_or(0);
    Ok(Seen {
        project: x.projid,
        inherit: x.xflags & FS_XFLAG_PROJINHERIT != 0,
        limit_bytes,
        enforced: unsupported(d.as_raw_fd()).is_none(),
    })
}

/// Whether what the host shows (`seen`) is the bound create recorded (pure): the project on the
/// upper layer, inherited, enforced, with that limit.
pub fn check(bound: &Bound, seen: &Seen) -> Result<(), String> {
    let Bound::Quota { project, bytes, .. } = bound else {
        return Ok(());
    };
    if !seen.enforced {
        return Err("its filesystem no longer enforces project quotas".to_string());
    }
    if seen.project != *project || !seen.inherit {
        return Err(format!(
            "the client's layer is in project {} ({}), not {project} inherited",
            seen.project,
            if seen.inherit {
                "inherited"
            } else {
                "not inherited"
            }
        ));
    }
    if seen.limit_bytes == 0 || seen.limit_bytes > bytes.div_ceil(1024) * 1024 {
        return Err(format!(
            "project {project}'s limit is {} bytes, not {bytes}",
            seen.limit_bytes
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_layers_project_is_its_own_stable_and_in_rloxscs_range() {
        let p = project_for(123_456, 0);
        assert_eq!(p, project_for(123_456, 0));
        assert!(p >= PROJECT_BASE && p != u32::MAX);
        assert_ne!(p, project_for(123_457, 0));
        assert_ne!(p, project_for(123_456, 1), "another try, another id");
        assert!(project_for(0, 0) > PROJECT_BASE, "never the base itself");
        assert!(project_for(u64::MAX, 7) >= PROJECT_BASE);
    }

    #[test]
    fn the_outside_check_wants_the_project_inherited_enforced_and_limited() {
        let b = Bound::Quota {
            project: PROJECT_BASE + 5,
            bytes: 10 << 20,
            by_client: false,
        };
        let good = Seen {
            project: PROJECT_BASE + 5,
            inherit: true,
            limit_bytes: 10 << 20,
            enforced: true,
        };
        assert_eq!(check(&b, &good), Ok(()));
        for bad in [
            Seen {
                inherit: false,
                ..good
            },
            Seen { project: 0, ..good },
            Seen {
                limit_bytes: 0,
                ..good
            },
            Seen {
                limit_bytes: 11 << 20,
                ..good
            },
            Seen {
                enforced: false,
                ..good
            },
        ] {
            assert!(check(&b, &bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            check(
                &Bound::Unbounded { cause: "x".into() },
                &Seen {
                    enforced: false,
                    ..good
                }
            ),
            Ok(())
        );
    }
}
