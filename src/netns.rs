//! Network namespace mechanics libcontainer leaves out: bringing the loopback interface of a new
//! network namespace up, so that programs in the container can use 127.0.0.1 (and only that).

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;

use anyhow::{bail, Context, Result};
use nix::sched::{setns, CloneFlags};

/// Runs `f` in the network namespace at `path` (this thread enters it and returns to its own). If
/// it cannot return, the runtime exits at once rather than go on in the wrong place.
pub fn in_network_namespace<T>(path: &Path, f: impl FnOnce() -> Result<T>) -> Result<T> {
    let own = File::open("/proc/thread-self/ns/net")
        .context("cannot open the runtime's network namespace")?;
    let theirs = File::open(path)
        .with_context(|| format!("cannot open network namespace {}", path.display()))?;
    setns(&theirs, CloneFlags::CLONE_NEWNET)
        .with_context(|| format!("cannot enter network namespace {}", path.display()))?;
    let result = f();
    if let Err(e) = setns(&own, CloneFlags::CLONE_NEWNET) {
        eprintln!("rloxsc: cannot return to the runtime's network namespace: {e}");
        std::process::exit(1);
    }
    result
}

/// Brings `lo` up in the network namespace of `pid`.
pub fn bring_loopback_up(pid: i32) -> Result<()> {
    in_network_namespace(Path::new(&format!("/proc/{pid}/ns/net")), set_lo_up)
        .context("cannot bring lo up in the container's network namespace")
}

/// Writes network sysctls (`net.*`, as in `linux.sysctl`) in the network namespace at `path`, from
/// outside: for a container that joins a network namespace its own user namespace does not own,
/// whose root could not write them itself.
pub fn write_sysctls_in(path: &Path, sysctls: &[(String, String)]) -> Result<()> {
    in_network_namespace(path, || {
        for (k, v) in sysctls {
            let rel = k.replace('.', "/");
            let safe = k.starts_with("net.")
                && rel.split('/').all(|c| {
                    !c.is_empty()
                        && c != ".."
                        && c.bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
                });
            if !safe {
                bail!("sysctl {k:?} is not a network sysctl name");
            }
            std::fs::write(Path::new("/proc/sys").join(&rel), v).with_context(|| {
                format!(
                    "cannot set sysctl {k}={v} in network namespace {}",
                    path.display()
                )
            })?;
        }
        Ok(())
    })
}

fn set_lo_up() -> Result<()> {
    // SAFETY: plain socket(2).
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        bail!("socket: {}", std::io::Error::last_os_error());
    }
    // SAFETY: we own the new fd.
    let sock = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    // SAFETY: ifreq is plain data; zeroed is valid.
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    for (i, b) in b"lo\0".iter().enumerate() {
        ifr.ifr_name[i] = *b as libc::c_char;
    }
    // SAFETY: ioctls on our socket with a valid ifreq.
    if unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFFLAGS, &mut ifr) } < 0 {
        bail!("SIOCGIFFLAGS lo: {}", std::io::Error::last_os_error());
    }
    // SAFETY: SIOCGIFFLAGS filled the flags member of the union, the one read and written here.
    unsafe { ifr.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short };
    // SAFETY: as above, SIOCSIFFLAGS with the same valid ifreq.
    if unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCSIFFLAGS, &ifr) } < 0 {
        bail!("SIOCSIFFLAGS lo: {}", std::io::Error::last_os_error());
    }
    Ok(())
}
