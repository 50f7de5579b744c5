//! A small netlink client (no crate in the lock file speaks nf_tables, and the one on crates.io that
//! does is GPL): one socket per exchange, messages and attributes built into plain byte vectors, and
//! replies read until the acknowledgement, the end of a dump or an error. Used for the routing
//! family (addresses) and for nf_tables (the egress filter).

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use anyhow::{bail, Context, Result};

/// The netlink message header's length.
pub const NLMSG_HDR: usize = 16;
/// `NLA_F_NESTED`: the attribute holds attributes.
pub const NLA_F_NESTED: u16 = 0x8000;

/// A netlink socket of one protocol, bound by the kernel on first send; replies time out after five
/// seconds (a kernel that never answers is an error, never a hang).
pub struct Socket(OwnedFd);

impl Socket {
    /// Opens a socket of `protocol` (`NETLINK_ROUTE`, `NETLINK_NETFILTER`) in the current network
    /// namespace.
    pub fn open(protocol: i32) -> Result<Socket> {
        // SAFETY: plain socket(2).
        let fd = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                protocol,
            )
        };
        if fd < 0 {
            bail!("netlink socket: {}", std::io::Error::last_os_error());
        }
        // SAFETY: we own the new fd.
        let sock = Socket(unsafe { OwnedFd::from_raw_fd(fd) });
        let tv = libc::timeval {
            tv_sec: 5,
            tv_usec: 0,
        };
        // SAFETY: setsockopt(2) on our socket with a valid timeval of its size.
        let rc = unsafe {
            libc::setsockopt(
                sock.0.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                (&tv as *const libc::timeval).cast(),
                std::mem::size_of::<libc::timeval>() as libc::socklen_t,
            )
        };
        if rc < 0 {
            bail!("netlink SO_RCVTIMEO: {}", std::io::Error::last_os_error());
        }
        Ok(sock)
    }

    /// Sends one datagram (one message, or a batch of them back to back).
    pub fn send(&self, bytes: &[u8]) -> Result<()> {
        // SAFETY: send(2) of our own buffer on our socket (the kernel is the default destination).
        let n = unsafe { libc::send(self.0.as_raw_fd(), bytes.as_ptr().cast(), bytes.len(), 0) };
        if n < 0 || n as usize != bytes.len() {
            bail!("netlink send: {}", std::io::Error::last_os_error());
        }
        Ok(())
    }

    /// Reads replies, giving each to `each`, until it says [`Flow::Stop`]. `NLMSG_DONE` is given as
    /// [`Reply::Done`], every `NLMSG_ERROR` as [`Reply::Ack`] (errno 0 for an acknowledgement).
    pub fn receive(&self, mut each: impl FnMut(Reply<'_>) -> Result<Flow>) -> Result<()> {
        let mut buf = vec![0u8; 65536];
        loop {
            // SAFETY: recv(2) into our own buffer of its length.
            let n =
                unsafe { libc::recv(self.0.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::WouldBlock {
                    bail!("netlink: the kernel did not answer within 5 s");
                }
                bail!("netlink recv: {e}");
            }
            let n = n as usize;
            let mut off = 0usize;
            while off + NLMSG_HDR <= n {
                let len = u32::from_ne_bytes(buf[off..off + 4].try_into()?) as usize;
                let typ = u16::from_ne_bytes(buf[off + 4..off + 6].try_into()?);
                let seq = u32::from_ne_bytes(buf[off + 8..off + 12].try_into()?);
                if len < NLMSG_HDR || off + len > n {
                    bail!("netlink: a truncated message");
                }
                let body = &buf[off + NLMSG_HDR..off + len];
                let reply = match typ as i32 {
                    libc::NLMSG_DONE => Reply::Done,
                    libc::NLMSG_ERROR => {
                        let err = i32::from_ne_bytes(
                            body.get(..4)
                                .context("netlink: a short error message")?
                                .try_into()?,
                        );
                        Reply::Ack { seq, errno: -err }
                    }
                    _ => Reply::Message { typ, body },
                };
                if each(reply)? == Flow::Stop {
                    return Ok(());
                }
                off += align(len);
            }
        }
    }
}

/// One reply read from the socket.
#[derive(Debug)]
pub enum Reply<'a> {
    /// A message of type `typ` (its header stripped).
    Message {
        /// The message type.
        typ: u16,
        /// What follows the header.
        body: &'a [u8],
    },
    /// `NLMSG_ERROR`: the acknowledgement (`errno` 0) or failure of request `seq`.
    Ack {
        /// The request's sequence number.
        seq: u32,
        /// 0, or the positive errno.
        errno: i32,
    },
    /// `NLMSG_DONE`: the end of a dump.
    Done,
}

/// Whether [`Socket::receive`] reads on.
#[derive(Debug, PartialEq, Eq)]
pub enum Flow {
    /// Read the next reply.
    More,
    /// Return.
    Stop,
}

/// Rounds `n` up to netlink's 4-byte alignment.
pub fn align(n: usize) -> usize {
    (n + 3) & !3
}

/// One netlink message: the header (`typ`, `flags`, `seq`, port 0) and `body`.
pub fn message(typ: u16, flags: u16, seq: u32, body: &[u8]) -> Vec<u8> {
    let len = NLMSG_HDR + body.len();
    let mut msg = Vec::with_capacity(align(len));
    msg.extend_from_slice(&(len as u32).to_ne_bytes());
    msg.extend_from_slice(&typ.to_ne_bytes());
    msg.extend_from_slice(&flags.to_ne_bytes());
    msg.extend_from_slice(&seq.to_ne_bytes());
    msg.extend_from_slice(&0u32.to_ne_bytes());
    msg.extend_from_slice(body);
    msg.resize(align(len), 0);
    msg
}

/// Attributes being built: each `put` appends one, padded.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Attrs(pub Vec<u8>);

impl Attrs {
    /// An empty set.
    pub fn new() -> Attrs {
        Attrs::default()
    }

    /// Appends attribute `typ` holding `data`.
    pub fn put(mut self, typ: u16, data: &[u8]) -> Attrs {
        let len = 4 + data.len();
        self.0.extend_from_slice(&(len as u16).to_ne_bytes());
        self.0.extend_from_slice(&typ.to_ne_bytes());
        self.0.extend_from_slice(data);
        self.0.resize(self.0.len() + align(len) - len, 0);
        self
    }

    /// Appends a NUL-terminated string.
    pub fn put_str(self, typ: u16, s: &str) -> Attrs {
        let mut d = s.as_bytes().to_vec();
        d.push(0);
        self.put(typ, &d)
    }

    /// Appends a big-endian u32 (nf_tables' numbers).
    pub fn put_be32(self, typ: u16, v: u32) -> Attrs {
        self.put(typ, &v.to_be_bytes())
    }

    /// Appends `inner` as a nested attribute. Without `NLA_F_NESTED`, as libmnl writes them and
    /// nf_tables dumps them back, so a rule read back compares byte for byte.
    pub fn nest(self, typ: u16, inner: Attrs) -> Attrs {
        self.put(typ, &inner.0)
    }
}

/// The attributes of `bytes` in order, as (type without the nested flag, payload).
pub fn parse_attrs(bytes: &[u8]) -> Vec<(u16, &[u8])> {
    let mut out = Vec::new();
    let mut off = 0usize;
    while off + 4 <= bytes.len() {
        let len = u16::from_ne_bytes([bytes[off], bytes[off + 1]]) as usize;
        let typ = u16::from_ne_bytes([bytes[off + 2], bytes[off + 3]]) & !NLA_F_NESTED & 0x3fff;
        if len < 4 || off + len > bytes.len() {
            break;
        }
        out.push((typ, &bytes[off + 4..off + len]));
        off += align(len);
    }
    out
}

/// The payload of the first attribute `typ` in `bytes`.
pub fn attr(bytes: &[u8], typ: u16) -> Option<&[u8]> {
    parse_attrs(bytes)
        .into_iter()
        .find(|(t, _)| *t == typ)
        .map(|(_, d)| d)
}

/// Sends `request` and reads until its acknowledgement (`seq`), giving every other message to
/// `each`; an errno from the kernel is returned as an error.
pub fn request(
    sock: &Socket,
    request: &[u8],
    seq: u32,
    mut each: impl FnMut(u16, &[u8]),
) -> Result<()> {
    sock.send(request)?;
    let mut failure = None;
    sock.receive(|r| {
        Ok(match r {
            Reply::Message { typ, body } => {
                each(typ, body);
                Flow::More
            }
            Reply::Done => Flow::Stop,
            Reply::Ack { errno, .. } if errno != 0 => {
                failure = Some(errno);
                Flow::Stop
            }
            Reply::Ack { seq: s, .. } if s == seq => Flow::Stop,
            Reply::Ack { .. } => Flow::More,
        })
    })?;
    match failure {
        Some(e) => Err(std::io::Error::from_raw_os_error(e).into()),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_round_trip_with_padding_and_nesting() {
        let inner = Attrs::new().put_be32(1, 7).put_str(2, "lo");
        let a = Attrs::new().put(3, &[1, 2, 3]).nest(4, inner.clone());
        assert_eq!(a.0.len() % 4, 0);
        let p = parse_attrs(&a.0);
        assert_eq!(p.len(), 2);
        assert_eq!(p[0], (3, &[1u8, 2, 3][..]));
        assert_eq!(p[1].0, 4);
        assert_eq!(p[1].1, &inner.0[..]);
        assert_eq!(attr(p[1].1, 2), Some(&b"lo\0"[..]));
    }

    #[test]
    fn messages_are_aligned_and_carry_their_length() {
        let m = message(16, 1, 9, &[1, 2, 3, 4, 5]);
        assert_eq!(m.len(), 24);
        assert_eq!(u32::from_ne_bytes(m[..4].try_into().unwrap()), 21);
    }
}
