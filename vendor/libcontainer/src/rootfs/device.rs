use std::os::fd::AsFd;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::io::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use libc;
use nix::fcntl::{OFlag, OpenHow, ResolveFlag, open, openat2};
use nix::sys::stat::{FileStat, Mode, fstat, umask};
use nix::unistd::{Gid, Uid};
use oci_spec::runtime::LinuxDevice;

use super::utils::to_sflag;
use crate::syscall::Syscall;
use crate::syscall::syscall::create_syscall;
use crate::utils::PathBufExt;

#[derive(Debug, thiserror::Error)]
pub enum DeviceError {
    #[error("{0:?} is not a valid device path")]
    InvalidDevicePath(std::path::PathBuf),
    #[error("failed syscall to create device")]
    Syscall(#[from] crate::syscall::SyscallError),
    #[error(transparent)]
    Nix(#[from] nix::Error),
    #[error(transparent)]
    Other(Box<dyn std::error::Error + Send + Sync>),
    #[error("{0}")]
    Custom(String),
}

type Result<T> = std::result::Result<T, DeviceError>;

pub(crate) fn open_device_fd(dev_path: &Path) -> nix::Result<(OwnedFd, FileStat)> {
    let fd = open(
        dev_path,
        OFlag::O_PATH | OFlag::O_CLOEXEC,
        Mode::from_bits_truncate(0o000),
    )?;
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    let stat = fstat(owned.as_raw_fd())?;
    Ok((owned, stat))
}

pub(crate) fn verify_dev_null(stat: &FileStat) -> Result<()> {
    if stat.st_mode & libc::S_IFMT != libc::S_IFCHR {
        return Err(DeviceError::Custom(
            "device is not a character device".to_string(),
        ));
    }

    let actual_major = libc::major(stat.st_rdev) as i64;
    let actual_minor = libc::minor(stat.st_rdev) as i64;
    if actual_major != 1 || actual_minor != 3 {
        return Err(DeviceError::Custom(format!(
            "device dev null major/minor mismatch: expected 1/3, actual {}/{}",
            actual_major, actual_minor
        )));
    }
    Ok(())
}

pub struct Device {
    syscall: Box<dyn Syscall>,
}

impl Default for Device {
    fn default() -> Self {
        Self::new()
    }
}

impl Device {
    pub fn new() -> Device {
        Device {
            syscall: create_syscall(),
        }
    }

    pub fn new_with_syscall(syscall: Box<dyn Syscall>) -> Device {
        Device { syscall }
    }

    pub fn create_devices<'a, I>(&self, rootfs: &Path, devices: I, bind: bool) -> Result<()>
    where
        I: IntoIterator<Item = &'a LinuxDevice>,
    {
        let old_mode = umask(Mode::from_bits_truncate(0o000));
        // a bind target is made inside the rootfs opened once (openat2 in its root), not through
        // a path canonicalized again for each device
        let root = if bind { Some(open_rootfs(rootfs)?) } else { None };
        devices
            .into_iter()
            .map(|dev| {
                if !dev.path().starts_with("/dev") {
                    tracing::error!(
                        "{:?} is not a valid device path starting with /dev",
                        dev.path()
                    );
                    return Err(DeviceError::InvalidDevicePath(dev.path().to_path_buf()));
                }

                if let Some(root) = &root {
                    self.bind_dev_at(root, rootfs, dev)
                } else {
                    self.mknod_dev(rootfs, dev)
                }
            })
            .collect::<Result<Vec<_>>>()?;
        umask(old_mode);

        Ok(())
    }

    #[cfg(test)]
    fn bind_dev(&self, rootfs: &Path, dev: &LinuxDevice) -> Result<()> {
        self.bind_dev_at(&open_rootfs(rootfs)?, rootfs, dev)
    }

    /// Binds the host's `dev` onto a file made for it in the rootfs `root` (opened from `rootfs`):
    /// the target is created (or, when it exists, resolved) with openat2 inside the root, and the
    /// device's mount is cloned (open_tree) and moved onto that handle, so no path is looked up
    /// twice and nothing is followed out of the root.
    fn bind_dev_at(&self, root: &OwnedFd, rootfs: &Path, dev: &LinuxDevice) -> Result<()> {
        let relative = dev.path().as_relative().map_err(|err| DeviceError::Other(err.into()))?;
        let target = dev_target(root, rootfs, relative).inspect_err(|err| {
            tracing::error!("failed to make the bind target of {:?}: {}", dev.path(), err);
        })?;
        let source = dev
            .path()
            .to_str()
            .ok_or_else(|| DeviceError::InvalidDevicePath(dev.path().to_path_buf()))?;
        let tree = self.syscall.open_tree(
            libc::AT_FDCWD,
            Some(source),
            (libc::OPEN_TREE_CLONE | libc::OPEN_TREE_CLOEXEC) as u32,
        )?;
        self.syscall
            .move_mount(
                tree.as_fd(),
                None,
                target.as_fd(),
                None,
                crate::syscall::linux::MOVE_MOUNT_F_EMPTY_PATH
                    | crate::syscall::linux::MOVE_MOUNT_T_EMPTY_PATH,
            )
            .map_err(|err| {
                tracing::error!(?err, path = ?dev.path(), "failed to mount bind dev");
                err
            })?;
        Ok(())
    }

    fn mknod_dev(&self, rootfs: &Path, dev: &LinuxDevice) -> Result<()> {
        fn makedev(major: i64, minor: i64) -> u64 {
            ((minor & 0xff)
                | ((major & 0xfff) << 8)
                | ((minor & !0xff) << 12)
                | ((major & !0xfff) << 32)) as u64
        }

        let full_container_path = create_container_dev_path(rootfs, dev)?;

        self.syscall
            .mknod(
                &full_container_path,
                to_sflag(dev.typ()),
                Mode::from_bits_truncate(dev.file_mode().unwrap_or(0o666)),
                makedev(dev.major(), dev.minor()),
            )
            .map_err(|err| {
                tracing::error!(
                    ?err,
                    path = ?full_container_path,
                    major = ?dev.major(),
                    minor = ?dev.minor(),
                    "failed to mknod device"
                );

                err
            })?;
        self.syscall
            .chown(
                &full_container_path,
                dev.uid().map(Uid::from_raw),
                dev.gid().map(Gid::from_raw),
            )
            .map_err(|err| {
                tracing::error!(
                    path = ?full_container_path,
                    ?err,
                    uid = ?dev.uid(),
                    gid = ?dev.gid(),
                    "failed to chown device"
                );

                err
            })?;

        Ok(())
    }
}

/// The rootfs directory, opened once for the bind targets of its devices.
fn open_rootfs(rootfs: &Path) -> Result<OwnedFd> {
    let fd = open(
        rootfs,
        OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )?;
    // SAFETY: open just returned this descriptor, which nothing else owns
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The file a device is bound onto: made in the root (`O_CREAT | O_EXCL`, 0644) or, when it
/// exists already, resolved in it; a missing parent directory is made first (pathrs, in the root).
fn dev_target(root: &OwnedFd, rootfs: &Path, relative: &Path) -> Result<OwnedFd> {
    let in_root = |flags: OFlag, mode: u64| {
        let how = OpenHow::new()
            .flags(flags | OFlag::O_CLOEXEC)
            .mode(Mode::from_bits_truncate(mode as libc::mode_t))
            .resolve(ResolveFlag::RESOLVE_IN_ROOT | ResolveFlag::RESOLVE_NO_MAGICLINKS);
        // openat2 fails with EAGAIN when a rename raced the lookup: retried, as pathrs does
        let mut tries = 0;
        loop {
            match openat2(root.as_raw_fd(), relative, how) {
                Err(nix::Error::EAGAIN) if tries < 16 => tries += 1,
                // SAFETY: openat2 just returned this descriptor, which nothing else owns
                other => return other.map(|fd| unsafe { OwnedFd::from_raw_fd(fd) }),
            }
        }
    };
    let create = || in_root(OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL, 0o644);
    match create() {
        Ok(fd) => Ok(fd),
        Err(nix::Error::EEXIST) => Ok(in_root(OFlag::O_PATH, 0)?),
        Err(nix::Error::ENOENT) => {
            if let Some(parent) = relative.parent().filter(|p| !p.as_os_str().is_empty()) {
                pathrs::Root::open(rootfs)
                    .and_then(|r| r.mkdir_all(parent, &std::fs::Permissions::from_mode(0o755)))
                    .map_err(|err| DeviceError::Other(err.into()))?;
            }
            Ok(create()?)
        }
        Err(err) => Err(err.into()),
    }
}

fn create_container_dev_path(rootfs: &Path, dev: &LinuxDevice) -> Result<PathBuf> {
    let relative_dev_path = dev.path().as_relative().map_err(|err| {
        tracing::error!(
            "failed to convert {:?} to relative path: {}",
            dev.path(),
            err
        );
        DeviceError::Other(err.into())
    })?;
    let full_container_path = safe_path::scoped_join(rootfs, relative_dev_path).map_err(|err| {
        tracing::error!("failed to join {rootfs:?} with {:?}: {err}", dev.path());
        DeviceError::Other(err.into())
    })?;
    std::fs::create_dir_all(
        full_container_path
            .parent()
            .unwrap_or_else(|| Path::new("")),
    )
    .map_err(|err| {
        tracing::error!(
            "failed to create parent dir of {:?}: {}",
            full_container_path,
            err
        );
        DeviceError::Other(err.into())
    })?;

    Ok(full_container_path)
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use anyhow::Result;
    use nix::sys::stat::SFlag;
    use nix::unistd::{Gid, Uid};
    use oci_spec::runtime::{LinuxDeviceBuilder, LinuxDeviceType};

    use super::*;
    use crate::syscall::test::{ChownArgs, MknodArgs, TestHelperSyscall};

    #[test]
    fn test_bind_dev() -> Result<()> {
        let tmp_dir = tempfile::tempdir()?;
        let device = Device::new_with_syscall(Box::<TestHelperSyscall>::default());
        assert!(
            device
                .bind_dev(
                    tmp_dir.path(),
                    &LinuxDeviceBuilder::default()
                        .path(PathBuf::from("/dev/null"))
                        .build()
                        .unwrap(),
                )
                .is_ok()
        );

        let helper = device
            .syscall
            .as_any()
            .downcast_ref::<TestHelperSyscall>()
            .unwrap();
        let trees = helper.get_open_tree_args();
        assert_eq!(1, trees.len());
        assert_eq!(Some("/dev/null".to_string()), trees[0].path);
        assert!(tmp_dir.path().join("dev").join("null").is_file());
        Ok(())
    }

    #[test]
    fn test_mknod_dev() -> Result<()> {
        let tmp_dir = tempfile::tempdir()?;
        let device = Device::new_with_syscall(Box::<TestHelperSyscall>::default());
        assert!(
            device
                .mknod_dev(
                    tmp_dir.path(),
                    &LinuxDeviceBuilder::default()
                        .path(PathBuf::from("/null"))
                        .major(1)
                        .minor(3)
                        .typ(LinuxDeviceType::C)
                        .file_mode(0o644u32)
                        .uid(1000u32)
                        .gid(1000u32)
                        .build()
                        .unwrap(),
                )
                .is_ok()
        );

        let want_mknod = MknodArgs {
            path: tmp_dir.path().join("null"),
            kind: SFlag::S_IFCHR,
            perm: Mode::S_IRUSR | Mode::S_IWUSR | Mode::S_IRGRP | Mode::S_IROTH,
            dev: 259,
        };
        let got_mknod = &device
            .syscall
            .as_any()
            .downcast_ref::<TestHelperSyscall>()
            .unwrap()
            .get_mknod_args()[0];
        assert_eq!(want_mknod, *got_mknod);

        let want_chown = ChownArgs {
            path: tmp_dir.path().join("null"),
            owner: Some(Uid::from_raw(1000)),
            group: Some(Gid::from_raw(1000)),
        };
        let got_chown = &device
            .syscall
            .as_any()
            .downcast_ref::<TestHelperSyscall>()
            .unwrap()
            .get_chown_args()[0];
        assert_eq!(want_chown, *got_chown);

        Ok(())
    }

    #[test]
    fn test_create_devices() -> Result<()> {
        let tmp_dir = tempfile::tempdir()?;
        let device = Device::new_with_syscall(Box::<TestHelperSyscall>::default());

        let devices = vec![
            LinuxDeviceBuilder::default()
                .path(PathBuf::from("/dev/null"))
                .major(1)
                .minor(3)
                .typ(LinuxDeviceType::C)
                .file_mode(0o644u32)
                .uid(1000u32)
                .gid(1000u32)
                .build()
                .unwrap(),
        ];

        assert!(
            device
                .create_devices(tmp_dir.path(), &devices, true)
                .is_ok()
        );

        let mount_args = device
            .syscall
            .as_any()
            .downcast_ref::<TestHelperSyscall>()
            .unwrap()
            .get_open_tree_args();
        assert_eq!(1, mount_args.len());
        assert_eq!(Some("/dev/null".to_string()), mount_args[0].path);
        assert!(tmp_dir.path().join("dev/null").is_file());

        assert!(
            device
                .create_devices(tmp_dir.path(), &devices, false)
                .is_ok()
        );

        let want = MknodArgs {
            path: tmp_dir.path().join("dev/null"),
            kind: SFlag::S_IFCHR,
            perm: Mode::S_IRUSR | Mode::S_IWUSR | Mode::S_IRGRP | Mode::S_IROTH,
            dev: 259,
        };
        let got = &device
            .syscall
            .as_any()
            .downcast_ref::<TestHelperSyscall>()
            .unwrap()
            .get_mknod_args()[0];
        assert_eq!(want, *got);

        Ok(())
    }
}
