//! The egress filter (pure): the rules `network.mode = "inbound-only"` puts in a container's network
//! namespace, each with its `nft` spelling for the docs and the logs, and the judgement of what was
//! read back from the kernel against them.
//!
//! In rloxsc's table `inet rloxsc`, one base chain `egress` on the output hook (priority 0, after
//! NAT), policy drop:
//!
//! | # | rule | why |
//! |---|---|---|
//! | 1, 2 | `ip daddr 127.0.0.11` rejected | Docker's embedded DNS listens on the container's loopback and forwards outward from the host |
//! | 3 | `oif lo` accepted | loopback, and the container's own addresses |
//! | 4 | `ct state established,related` accepted | replies to inbound connections and datagrams, their ICMP errors |
//! | 5 | ICMPv6 router and neighbour solicitations and adverts, MLD reports accepted | IPv6 on the link, so inbound IPv6 works |
//! | 6.. | each `egress_allow` entry accepted | the caller's allowlist |
//! | last-1 | TCP rejected with a reset | `connect` fails with ECONNREFUSED at once |
//! | last | everything else rejected with ICMP port unreachable | UDP (DNS included): `sendto` fails with EPERM, a connected socket then reads ECONNREFUSED |

use std::net::IpAddr;

use super::nftables::{base, meta, op, reject, Expr, Installed, ACCEPT, DROP, HOOK_OUTPUT};
use super::nftables::{NFPROTO_IPV4, NFPROTO_IPV6, PRIORITY};
use crate::egress_rule::EgressRule;

/// Docker's embedded DNS resolver's address in a container on a user-defined network.
pub const DOCKER_DNS: [u8; 4] = [127, 0, 0, 11];

const LOOPBACK_IFINDEX: u32 = 1;
const TCP: u8 = 6;
const UDP: u8 = 17;
const ICMPV6: u8 = 58;
const CT_ESTABLISHED_RELATED: u32 = 2 | 4;

/// One rule: its `nft` spelling and its expressions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// How `nft list table inet rloxsc` would show it.
    pub nft: String,
    /// What the kernel gets.
    pub exprs: Vec<Expr>,
}

fn rule(nft: impl Into<String>, exprs: Vec<Expr>) -> Rule {
    Rule {
        nft: nft.into(),
        exprs,
    }
}

fn l4(proto: u8) -> [Expr; 2] {
    [Expr::Meta(meta::L4PROTO), Expr::Cmp(op::EQ, vec![proto])]
}

fn destination(r: &EgressRule) -> Vec<Expr> {
    let (addr, mask) = r.addr_and_mask();
    let (family, offset) = match r.addr {
        IpAddr::V4(_) => (NFPROTO_IPV4, 16),
        IpAddr::V6(_) => (NFPROTO_IPV6, 24),
    };
    let mut e = vec![Expr::Meta(meta::NFPROTO), Expr::Cmp(op::EQ, vec![family])];
    if r.prefix > 0 {
        e.push(Expr::Payload {
            base: base::NETWORK,
            offset,
            len: addr.len() as u32,
        });
        if mask.iter().any(|b| *b != 0xff) {
            e.push(Expr::Mask(mask));
        }
        e.push(Expr::Cmp(op::EQ, addr));
    }
    e
}

/// The rules for an allowlist, in order.
pub fn rules(allow: &[EgressRule]) -> Vec<Rule> {
    let dns = EgressRule::parse("127.0.0.11").expect("a literal address");
    let mut out = vec![
        rule(
            "ip daddr 127.0.0.11 meta l4proto tcp reject with tcp reset",
            [destination(&dns), l4(TCP).to_vec(), vec![Expr::Reject(reject::TCP_RST, None)]].concat(),
        ),
        rule(
            "ip daddr 127.0.0.11 reject with icmpx port-unreachable",
            [
                destination(&dns),
                vec![Expr::Reject(reject::ICMPX, Some(reject::PORT_UNREACH))],
            ]
            .concat(),
        ),
        rule(
            "meta oif lo accept",
            vec![
                Expr::Meta(meta::OIF),
                Expr::Cmp(op::EQ, LOOPBACK_IFINDEX.to_ne_bytes().to_vec()),
                Expr::Verdict(ACCEPT),
            ],
        ),
        rule(
            "ct state established,related accept",
            vec![
                Expr::CtState,
                Expr::Mask(CT_ESTABLISHED_RELATED.to_ne_bytes().to_vec()),
                Expr::Cmp(op::NEQ, vec![0; 4]),
                Expr::Verdict(ACCEPT),
            ],
        ),
        rule(
            "icmpv6 type { nd-router-solicit, nd-router-advert, nd-neighbor-solicit, nd-neighbor-advert } accept",
            [
                l4(ICMPV6).to_vec(),
                vec![
                    Expr::Payload { base: base::TRANSPORT, offset: 0, len: 1 },
                    Expr::Cmp(op::GTE, vec![133]),
                    Expr::Cmp(op::LTE, vec![136]),
                    Expr::Verdict(ACCEPT),
                ],
            ]
            .concat(),
        ),
        rule(
            "icmpv6 type mld2-listener-report accept",
            [
                l4(ICMPV6).to_vec(),
                vec![
                    Expr::Payload { base: base::TRANSPORT, offset: 0, len: 1 },
                    Expr::Cmp(op::EQ, vec![143]),
                    Expr::Verdict(ACCEPT),
                ],
            ]
            .concat(),
        ),
    ];
    for a in allow {
        let family = if a.addr.is_ipv4() { "ip" } else { "ip6" };
        match a.port {
            None => out.push(rule(
                format!("{family} daddr {} accept", net_text(a)),
                [destination(a), vec![Expr::Verdict(ACCEPT)]].concat(),
            )),
            Some(p) => {
                for (name, proto) in [("tcp", TCP), ("udp", UDP)] {
                    out.push(rule(
                        format!("{family} daddr {} {name} dport {p} accept", net_text(a)),
                        [
                            destination(a),
                            l4(proto).to_vec(),
                            vec![
                                Expr::Payload {
                                    base: base::TRANSPORT,
                                    offset: 2,
                                    len: 2,
                                },
                                Expr::Cmp(op::EQ, p.to_be_bytes().to_vec()),
                                Expr::Verdict(ACCEPT),
                            ],
                        ]
                        .concat(),
                    ));
                }
            }
        }
    }
    out.push(rule(
        "meta l4proto tcp reject with tcp reset",
        [l4(TCP).to_vec(), vec![Expr::Reject(reject::TCP_RST, None)]].concat(),
    ));
    out.push(rule(
        "reject with icmpx port-unreachable",
        vec![Expr::Reject(reject::ICMPX, Some(reject::PORT_UNREACH))],
    ));
    out
}

fn net_text(a: &EgressRule) -> String {
    EgressRule { port: None, ..*a }.to_string()
}

/// The expressions of [`rules`], as [`super::nftables::install`] takes them.
pub fn exprs(allow: &[EgressRule]) -> Vec<Vec<Expr>> {
    rules(allow).into_iter().map(|r| r.exprs).collect()
}

/// What the kernel holds when the filter for `allow` is installed, as [`super::nftables::read`]
/// returns it (less the attributes the kernel adds on its own).
pub fn expected(allow: &[EgressRule]) -> Installed {
    Installed {
        table_flags: 0,
        chain: Some((HOOK_OUTPUT, PRIORITY, DROP, "filter".into())),
        rules: exprs(allow)
            .iter()
            .map(|r| r.iter().map(Expr::as_read).collect())
            .collect(),
    }
}

/// Judges what the kernel holds against the filter for `allow`: `None` when it is exactly that
/// filter, else what differs.
pub fn differs(installed: Option<&Installed>, allow: &[EgressRule]) -> Option<String> {
    differs_in(installed, allow).map(|d| format!("the egress filter is not rloxsc's: {d}"))
}

fn differs_in(installed: Option<&Installed>, allow: &[EgressRule]) -> Option<String> {
    let Some(i) = installed else {
        return Some(
            "the container's network namespace has no egress filter (table inet rloxsc is missing)"
                .into(),
        );
    };
    if i.table_flags != 0 {
        return Some(format!(
            "table inet rloxsc has flags {:#x} (dormant: switched off)",
            i.table_flags
        ));
    }
    match &i.chain {
        None => return Some("table inet rloxsc has no chain egress".into()),
        Some((hook, prio, policy, typ))
            if (*hook, *prio, *policy, typ.as_str())
                != (HOOK_OUTPUT, PRIORITY, DROP, "filter") =>
        {
            return Some(format!(
                "chain egress is hook {hook} priority {prio} policy {policy} type {typ:?}, not a filter on the output hook at priority {PRIORITY} with policy drop"
            ))
        }
        Some(_) => {}
    }
    let want = rules(allow);
    if i.rules.len() != want.len() {
        return Some(format!(
            "chain egress holds {} rules, the filter has {}",
            i.rules.len(),
            want.len()
        ));
    }
    for (n, (got, w)) in i.rules.iter().zip(&want).enumerate() {
        let same =
            got.len() == w.exprs.len() && got.iter().zip(&w.exprs).all(|(g, e)| g.is(&e.as_read()));
        if !same {
            return Some(format!("rule {} of chain egress is not `{}`", n + 1, w.nft));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn installed(allow: &[EgressRule]) -> Installed {
        expected(allow)
    }

    #[test]
    fn the_filter_ends_in_rejections_and_allows_each_entry() {
        let allow = EgressRule::parse_list("10.1.2.3:3128,fd00::/64").unwrap();
        let r = rules(&allow);
        assert_eq!(r.len(), 6 + 2 + 1 + 2);
        assert_eq!(r[r.len() - 1].nft, "reject with icmpx port-unreachable");
        assert!(r
            .iter()
            .any(|x| x.nft == "ip daddr 10.1.2.3 tcp dport 3128 accept"));
        assert!(r.iter().any(|x| x.nft == "ip6 daddr fd00::/64 accept"));
        // a /64 is masked, a single address is not
        let v6 = r.iter().find(|x| x.nft.starts_with("ip6")).unwrap();
        assert!(v6.exprs.iter().any(|e| matches!(e, Expr::Mask(_))));
        let v4 = r.iter().find(|x| x.nft.contains("10.1.2.3")).unwrap();
        assert!(!v4.exprs.iter().any(|e| matches!(e, Expr::Mask(_))));
    }

    #[test]
    fn what_was_installed_matches_and_every_change_is_named() {
        let allow = EgressRule::parse_list("10.1.2.3:3128").unwrap();
        assert_eq!(differs(Some(&installed(&allow)), &allow), None);
        assert!(differs(None, &allow).unwrap().contains("missing"));
        // a wider list than the one in force
        assert!(differs(Some(&installed(&allow)), &[])
            .unwrap()
            .contains("rules"));
        let mut i = installed(&allow);
        i.rules.remove(2);
        assert!(differs(Some(&i), &allow).is_some());
        let mut i = installed(&allow);
        i.rules.swap(2, 3);
        assert!(differs(Some(&i), &allow).unwrap().contains("rule 3"));
        let mut i = installed(&allow);
        i.table_flags = 1;
        assert!(differs(Some(&i), &allow).unwrap().contains("dormant"));
        let mut i = installed(&allow);
        i.chain = Some((HOOK_OUTPUT, PRIORITY, ACCEPT, "filter".into()));
        assert!(differs(Some(&i), &allow).unwrap().contains("policy drop"));
        let mut i = installed(&allow);
        i.chain = None;
        assert!(differs(Some(&i), &allow).is_some());
    }
}
