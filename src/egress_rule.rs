//! The egress allowlist's vocabulary (pure, no I/O): one entry is an address or a CIDR with an
//! optional port, as the policy file (`[network] egress_allow`), the `run.rloxsc.egress_allow`
//! annotation and `rloxsc update --egress-allow` spell it: `10.1.2.3:3128`, `192.0.2.0/24:443`,
//! `fd00::/64`, `[fd00::1]:443`, `[fd00::/64]:443`. No names: a proxy on the list resolves them.
//!
//! An entry with a port allows TCP and UDP to that port; without one, every protocol and port.

use std::fmt;
use std::net::IpAddr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// One allowed egress destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EgressRule {
    /// The network's address, with every bit past `prefix` cleared.
    pub addr: IpAddr,
    /// The prefix length (32 or 128 for one address).
    pub prefix: u8,
    /// The TCP/UDP destination port, if the entry names one.
    pub port: Option<u16>,
}

impl EgressRule {
    /// Parses one entry; the error says what is wrong with it.
    pub fn parse(text: &str) -> Result<EgressRule, String> {
        let t = text.trim();
        let bad = |why: &str| format!("egress entry {t:?}: {why}");
        let (net, port) = if let Some(rest) = t.strip_prefix('[') {
            let (inner, after) = rest
                .split_once(']')
                .ok_or_else(|| bad("an opening [ without its ]"))?;
            let port = match after {
                "" => None,
                p => Some(p.strip_prefix(':').ok_or_else(|| bad("text after ]"))?),
            };
            (inner, port)
        } else if t.matches(':').count() == 1 {
            let (a, p) = t.split_once(':').unwrap_or((t, ""));
            (a, Some(p))
        } else {
            (t, None)
        };
        let port = match port {
            None => None,
            Some(p) => Some(
                p.parse::<u16>()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or_else(|| bad("the port is not a number from 1 to 65535"))?,
            ),
        };
        let (addr, prefix) = match net.split_once('/') {
            Some((a, l)) => (a, Some(l)),
            None => (net, None),
        };
        let addr: IpAddr = addr.parse().map_err(|_| {
            bad("not an IPv4 or IPv6 address (names are not allowed: put a proxy on the list)")
        })?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => max,
            Some(l) => l.parse::<u8>().ok().filter(|&n| n <= max).ok_or_else(|| {
                bad(&format!(
                    "the prefix length is not a number from 0 to {max}"
                ))
            })?,
        };
        Ok(EgressRule {
            addr: mask(addr, prefix),
            prefix,
            port,
        })
    }

    /// Parses a list: comma- or whitespace-separated entries (the annotation's and `update`'s form);
    /// an empty text is the empty list.
    pub fn parse_list(text: &str) -> Result<Vec<EgressRule>, String> {
        text.split(|c: char| c == ',' || c.is_whitespace())
            .filter(|s| !s.is_empty())
            .map(EgressRule::parse)
            .collect()
    }

    /// Whether every destination `other` allows is allowed by `self` too.
    pub fn covers(&self, other: &EgressRule) -> bool {
        self.addr.is_ipv4() == other.addr.is_ipv4()
            && self.prefix <= other.prefix
            && mask(other.addr, self.prefix) == self.addr
            && (self.port.is_none() || self.port == other.port)
    }

    /// The network's address as bytes (4 or 16) and the prefix's mask of the same length.
    pub fn addr_and_mask(&self) -> (Vec<u8>, Vec<u8>) {
        let bytes = match self.addr {
            IpAddr::V4(a) => a.octets().to_vec(),
            IpAddr::V6(a) => a.octets().to_vec(),
        };
        let mut m = vec![0u8; bytes.len()];
        for (i, b) in m.iter_mut().enumerate() {
            let bits = (self.prefix as usize).saturating_sub(i * 8).min(8);
            *b = if bits == 0 { 0 } else { 0xffu8 << (8 - bits) };
        }
        (bytes, m)
    }
}

/// Whether every entry of `narrow` is covered by one of `wide`.
pub fn within(narrow: &[EgressRule], wide: &[EgressRule]) -> bool {
    narrow.iter().all(|n| wide.iter().any(|w| w.covers(n)))
}

/// The list as the annotation and `update` spell it (comma-separated, canonical).
pub fn format_list(list: &[EgressRule]) -> String {
    list.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

fn mask(addr: IpAddr, prefix: u8) -> IpAddr {
    match addr {
        IpAddr::V4(a) => {
            let m = if prefix == 0 {
                0
            } else {
                u32::MAX << (32 - prefix as u32)
            };
            IpAddr::V4((u32::from(a) & m).into())
        }
        IpAddr::V6(a) => {
            let m = if prefix == 0 {
                0
            } else {
                u128::MAX << (128 - prefix as u32)
            };
            IpAddr::V6((u128::from(a) & m).into())
        }
    }
}

impl fmt::Display for EgressRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let full = if self.addr.is_ipv4() { 32 } else { 128 };
        let net = if self.prefix == full {
            self.addr.to_string()
        } else {
            format!("{}/{}", self.addr, self.prefix)
        };
        match (self.port, self.addr.is_ipv6()) {
            (None, _) => write!(f, "{net}"),
            (Some(p), false) => write!(f, "{net}:{p}"),
            (Some(p), true) => write!(f, "[{net}]:{p}"),
        }
    }
}

impl Serialize for EgressRule {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for EgressRule {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        EgressRule::parse(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(s: &str) -> EgressRule {
        EgressRule::parse(s).unwrap()
    }

    #[test]
    fn the_issue_s_spellings_parse_and_print_back() {
        for s in [
            "10.1.2.3:3128",
            "fd00::/64",
            "192.0.2.0/24:443",
            "[fd00::1]:443",
            "[fd00::/64]:53",
            "10.0.0.1",
            "0.0.0.0/0",
        ] {
            assert_eq!(r(s).to_string(), s);
        }
        assert_eq!(r("192.0.2.77/24").to_string(), "192.0.2.0/24");
        assert_eq!(r("[fd00::1]").to_string(), "fd00::1");
    }

    #[test]
    fn names_bad_ports_and_prefixes_are_refused() {
        for s in [
            "proxy.local:3128",
            "10.0.0.1:0",
            "10.0.0.1:70000",
            "10.0.0.0/33",
            "fd00::/129",
            "[fd00::1",
            "[fd00::1]x",
            "",
        ] {
            assert!(EgressRule::parse(s).is_err(), "{s} parsed");
        }
    }

    #[test]
    fn covering_is_by_network_and_port() {
        assert!(r("10.0.0.0/8").covers(&r("10.1.2.3:3128")));
        assert!(r("10.1.2.3:3128").covers(&r("10.1.2.3:3128")));
        assert!(!r("10.1.2.3:3128").covers(&r("10.1.2.3")));
        assert!(!r("10.1.2.3:3128").covers(&r("10.1.2.3:80")));
        assert!(!r("10.1.2.0/24").covers(&r("10.1.0.0/16")));
        assert!(!r("0.0.0.0/0").covers(&r("fd00::1")));
        assert!(within(
            &[r("10.1.2.3:3128")],
            &[r("fd00::/64"), r("10.0.0.0/8")]
        ));
        assert!(!within(&[r("11.1.2.3")], &[r("10.0.0.0/8")]));
        assert!(within(&[], &[]));
    }

    #[test]
    fn masks_have_the_prefix_s_bits() {
        let (a, m) = r("192.0.2.0/20").addr_and_mask();
        assert_eq!(a, vec![192, 0, 0, 0]);
        assert_eq!(m, vec![255, 255, 240, 0]);
        let (_, m) = r("fd00::/64").addr_and_mask();
        assert_eq!(m[..8], [255; 8]);
        assert_eq!(m[8..], [0; 8]);
    }

    #[test]
    fn lists_are_comma_or_space_separated() {
        let l = EgressRule::parse_list("10.0.0.1:3128, fd00::/64").unwrap();
        assert_eq!(format_list(&l), "10.0.0.1:3128,fd00::/64");
        assert!(EgressRule::parse_list("").unwrap().is_empty());
        assert!(EgressRule::parse_list("a").is_err());
    }
}
