//! Network namespace mechanics libcontainer leaves out: bringing the loopback interface of a new
//! network namespace up, so that programs in the container can use 127.0.0.1 (and only that).

use std::fs::File;
use std::os::fd::AsRawFd;

use anyhow::{bail, Context, Result};
use nix::sched::{setns, CloneFlags};

/// Brings `lo` up in the network namespace of `pid`. The runtime enters that namespace for two ioctls
/// and returns to its own; if it cannot return, it exits at once rather than go on in the wrong place.
pub fn bring_loopback_up(pid: i32) -> Result<()> {
    let own =
        File::open("/proc/self/ns/net").context("cannot open the runtime's network namespace")?;
    let theirs = File::open(format!("/proc/{pid}/ns/net"))
        .context("cannot open the container's network namespace")?;
    setns(&theirs, CloneFlags::CLONE_NEWNET)
        .context("cannot enter the container's network namespace")?;
    let result = set_lo_up();
    if let Err(e) = setns(&own, CloneFlags::CLONE_NEWNET) {
        eprintln!("rloxsc: cannot return to the runtime's network namespace: {e}");
        std::process::exit(1);
    }
    result
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
