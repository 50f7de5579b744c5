//! Interfaces of a container's network namespace, the mechanics libcontainer leaves out: bringing
//! the loopback interface of a new network namespace up, and, under `network.mode =
//! "loopback-only"`, making unusable the interfaces a caller put into the container's own network
//! namespace (Docker's default bridge moves a veth in from a prestart hook): each is set down and
//! loses every address, so only loopback carries traffic; the container cannot undo it (no
//! CAP_NET_ADMIN), and verification checks it from outside.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;

use anyhow::{bail, Context, Result};
use nix::sched::{setns, CloneFlags};

use super::netlink::{self, Socket};

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

/// Whether `spec` gives the container a network namespace of its own (a new one, not one joined by
/// path).
pub fn has_own_network_namespace(spec: &oci_spec::runtime::Spec) -> bool {
    spec.linux()
        .as_ref()
        .and_then(|l| l.namespaces().as_ref())
        .is_some_and(|ns| {
            ns.iter().any(|n| {
                n.typ() == oci_spec::runtime::LinuxNamespaceType::Network && n.path().is_none()
            })
        })
}

/// The interface names of `/proc/<pid>/net/dev` as verification judges them: each interface that is
/// not the kernel's own and is down without an address gets the suffix [`INERT`]. Where the states
/// cannot be read the names are returned as they are (and judged as usable).
pub fn mark_inert(pid: i32, names: Vec<String>) -> Vec<String> {
    if names.iter().all(|n| KERNEL_DEVICES.contains(&n.as_str())) {
        return names;
    }
    let Ok(states) = interface_states(pid) else {
        return names;
    };
    names
        .into_iter()
        .map(|n| {
            let inert = !KERNEL_DEVICES.contains(&n.as_str())
                && states
                    .iter()
                    .any(|(s, up, addrs)| *s == n && !up && *addrs == 0);
            if inert {
                format!("{n}{INERT}")
            } else {
                n
            }
        })
        .collect()
}

/// Interfaces the kernel makes in every new network namespace (loopback, and the fallback tunnels of
/// loaded tunnel modules, which are down and connected to nothing).
pub const KERNEL_DEVICES: &[&str] = &[
    "lo", "sit0", "tunl0", "ip6tnl0", "gre0", "gretap0", "erspan0", "ip6gre0", "ip6_vti0",
    "ip_vti0",
];

/// The suffix verification gives an interface that is down and has no address (see
/// [`interface_states`]): such an interface carries no traffic.
pub const INERT: &str = " (down, no address)";

/// Under `network.mode = "loopback-only"`, for a container with a network namespace of its own:
/// every interface besides the kernel's own ([`KERNEL_DEVICES`]) that the caller's hooks put there is
/// set down and its addresses are removed. Returns the interfaces it changed (logged by the caller).
pub fn contain_interfaces(pid: i32) -> Result<Vec<String>> {
    let names = callers_interfaces(pid)?;
    if names.is_empty() {
        return Ok(names);
    }
    in_network_namespace(Path::new(&format!("/proc/{pid}/ns/net")), || {
        for n in &names {
            set_down(n).with_context(|| format!("cannot set {n} down"))?;
            delete_addresses(n).with_context(|| format!("cannot remove the addresses of {n}"))?;
        }
        Ok(())
    })
    .context("cannot make the caller's interfaces in the container's network namespace unusable")?;
    Ok(names)
}

/// The names of every interface of the network namespace of `pid` (`/proc/<pid>/net/dev`).
pub fn names(pid: i32) -> Result<Vec<String>> {
    Ok(
        crate::fsutil::read_small_string(format!("/proc/{pid}/net/dev"))
            .with_context(|| format!("cannot read /proc/{pid}/net/dev"))?
            .lines()
            .skip(2)
            .filter_map(|l| l.split(':').next().map(|n| n.trim().to_string()))
            .filter(|n| !n.is_empty())
            .collect(),
    )
}

/// The interfaces of the network namespace of `pid` besides the kernel's own ([`KERNEL_DEVICES`]):
/// the ones a caller put there.
pub fn callers_interfaces(pid: i32) -> Result<Vec<String>> {
    Ok(names(pid)?
        .into_iter()
        .filter(|n| !KERNEL_DEVICES.contains(&n.as_str()))
        .collect())
}

/// Every interface of the network namespace of `pid`, from outside: its name, whether it is up, and
/// how many addresses it has.
pub fn interface_states(pid: i32) -> Result<Vec<(String, bool, usize)>> {
    let names = names(pid)?;
    in_network_namespace(Path::new(&format!("/proc/{pid}/ns/net")), || {
        let addrs = addresses()?;
        names
            .iter()
            .map(|n| {
                let up = flags(n)? & libc::IFF_UP as libc::c_short != 0;
                let index = ifindex(n)?;
                Ok((
                    n.clone(),
                    up,
                    addrs.iter().filter(|a| a.index == index).count(),
                ))
            })
            .collect()
    })
}

fn inet_socket() -> Result<std::os::fd::OwnedFd> {
    // SAFETY: plain socket(2).
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        bail!("socket: {}", std::io::Error::last_os_error());
    }
    // SAFETY: we own the new fd.
    Ok(unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) })
}

fn ifreq_for(name: &str) -> Result<libc::ifreq> {
    // SAFETY: ifreq is plain data; zeroed is valid.
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    if name.len() >= ifr.ifr_name.len() || name.as_bytes().contains(&0) {
        bail!("bad interface name {name:?}");
    }
    for (i, b) in name.bytes().enumerate() {
        ifr.ifr_name[i] = b as libc::c_char;
    }
    Ok(ifr)
}

fn flags(name: &str) -> Result<libc::c_short> {
    let sock = inet_socket()?;
    let mut ifr = ifreq_for(name)?;
    // SAFETY: SIOCGIFFLAGS on our socket with a valid ifreq.
    if unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFFLAGS, &mut ifr) } < 0 {
        bail!("SIOCGIFFLAGS {name}: {}", std::io::Error::last_os_error());
    }
    // SAFETY: SIOCGIFFLAGS filled the flags member of the union.
    Ok(unsafe { ifr.ifr_ifru.ifru_flags })
}

fn set_down(name: &str) -> Result<()> {
    let sock = inet_socket()?;
    let mut ifr = ifreq_for(name)?;
    // SAFETY: SIOCGIFFLAGS on our socket with a valid ifreq.
    if unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFFLAGS, &mut ifr) } < 0 {
        bail!("SIOCGIFFLAGS {name}: {}", std::io::Error::last_os_error());
    }
    // SAFETY: SIOCGIFFLAGS filled the flags member of the union, the one read and written here.
    unsafe { ifr.ifr_ifru.ifru_flags &= !(libc::IFF_UP as libc::c_short) };
    // SAFETY: SIOCSIFFLAGS with the same valid ifreq.
    if unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCSIFFLAGS, &ifr) } < 0 {
        bail!("SIOCSIFFLAGS {name}: {}", std::io::Error::last_os_error());
    }
    Ok(())
}

fn ifindex(name: &str) -> Result<u32> {
    let c = std::ffi::CString::new(name)?;
    // SAFETY: a valid NUL-terminated name.
    let i = unsafe { libc::if_nametoindex(c.as_ptr()) };
    if i == 0 {
        bail!("no interface {name}: {}", std::io::Error::last_os_error());
    }
    Ok(i)
}

/// One address of an `RTM_GETADDR` dump: its interface, and the message to send back as `RTM_DELADDR`
/// (the `ifaddrmsg` and its attributes).
struct Address {
    index: u32,
    body: Vec<u8>,
}

const IFADDRMSG: usize = 8;

/// Every address of the current network namespace (IPv4 and IPv6).
fn addresses() -> Result<Vec<Address>> {
    let sock = Socket::open(libc::NETLINK_ROUTE)?;
    let req = [0u8; IFADDRMSG]; // ifa_family AF_UNSPEC: every family
    let msg = netlink::message(
        libc::RTM_GETADDR,
        (libc::NLM_F_REQUEST | libc::NLM_F_DUMP) as u16,
        1,
        &req,
    );
    let mut out = Vec::new();
    netlink::request(&sock, &msg, 1, |typ, body| {
        if typ == libc::RTM_NEWADDR && body.len() >= IFADDRMSG {
            let index = u32::from_ne_bytes(body[4..8].try_into().unwrap_or([0; 4]));
            out.push(Address {
                index,
                body: body.to_vec(),
            });
        }
    })?;
    Ok(out)
}

fn delete_addresses(name: &str) -> Result<()> {
    let index = ifindex(name)?;
    let sock = Socket::open(libc::NETLINK_ROUTE)?;
    for (i, a) in addresses()?
        .into_iter()
        .filter(|a| a.index == index)
        .enumerate()
    {
        let seq = 2 + i as u32;
        let msg = netlink::message(
            libc::RTM_DELADDR,
            (libc::NLM_F_REQUEST | libc::NLM_F_ACK) as u16,
            seq,
            &a.body,
        );
        netlink::request(&sock, &msg, seq, |_, _| {})?;
    }
    Ok(())
}
