//! nf_tables over netlink: the few expressions the egress filter needs, encoded as the kernel takes
//! them; the filter installed as one atomic batch; and read back, table, chain and rules, for the
//! outside check. Everything acts on the network namespace of the calling thread
//! ([`super::interfaces::in_network_namespace`] puts it where it belongs).

use anyhow::{bail, Context, Result};

use super::netlink::{self, attr, parse_attrs, Attrs, Flow, Reply, Socket};

/// The table rloxsc owns in a container's network namespace (family `inet`: IPv4 and IPv6).
pub const TABLE: &str = "rloxsc";
/// Its one chain, a base chain on the output hook.
pub const CHAIN: &str = "egress";
/// The chain's priority: filter (0), after the caller's NAT rewrote a destination (Docker's
/// embedded DNS), so the destination judged is the one the packet goes to.
pub const PRIORITY: i32 = 0;

const NETLINK_NETFILTER: i32 = 12;
const NFNL_SUBSYS_NFTABLES: u16 = 10;
const NFNL_MSG_BATCH_BEGIN: u16 = 0x10;
const NFNL_MSG_BATCH_END: u16 = 0x11;
const NFPROTO_INET: u8 = 1;
/// `NFPROTO_IPV4`, as `meta nfproto` loads it.
pub const NFPROTO_IPV4: u8 = 2;
/// `NFPROTO_IPV6`.
pub const NFPROTO_IPV6: u8 = 10;

const MSG_NEWTABLE: u16 = 0;
const MSG_GETTABLE: u16 = 1;
const MSG_DELTABLE: u16 = 2;
const MSG_NEWCHAIN: u16 = 3;
const MSG_GETCHAIN: u16 = 4;
const MSG_NEWRULE: u16 = 6;
const MSG_GETRULE: u16 = 7;

const TABLE_NAME: u16 = 1;
const TABLE_FLAGS: u16 = 2;
const CHAIN_TABLE: u16 = 1;
const CHAIN_NAME: u16 = 3;
const CHAIN_HOOK: u16 = 4;
const CHAIN_POLICY: u16 = 5;
const CHAIN_TYPE: u16 = 7;
const HOOK_HOOKNUM: u16 = 1;
const HOOK_PRIORITY: u16 = 2;
const RULE_TABLE: u16 = 1;
const RULE_CHAIN: u16 = 2;
const RULE_EXPRESSIONS: u16 = 4;
const LIST_ELEM: u16 = 1;
const EXPR_NAME: u16 = 1;
const EXPR_DATA: u16 = 2;
const DATA_VALUE: u16 = 1;
const DATA_VERDICT: u16 = 2;
const VERDICT_CODE: u16 = 1;

/// `NF_INET_LOCAL_OUT`: packets the namespace's own sockets send.
pub const HOOK_OUTPUT: u32 = 3;
/// `NF_ACCEPT` (a verdict and a chain policy).
pub const ACCEPT: i32 = 1;
/// `NF_DROP`.
pub const DROP: i32 = 0;
const REG_1: u32 = 1;
const REG_VERDICT: u32 = 0;

/// `meta` keys the filter loads.
pub mod meta {
    /// Output interface index.
    pub const OIF: u32 = 5;
    /// `NFPROTO_IPV4` or `NFPROTO_IPV6`.
    pub const NFPROTO: u32 = 15;
    /// The layer 4 protocol number.
    pub const L4PROTO: u32 = 16;
}

/// `cmp` operators.
pub mod op {
    /// Equal.
    pub const EQ: u32 = 0;
    /// Not equal.
    pub const NEQ: u32 = 1;
    /// Less than or equal.
    pub const LTE: u32 = 3;
    /// Greater than or equal.
    pub const GTE: u32 = 5;
}

/// `payload` bases.
pub mod base {
    /// The IPv4 or IPv6 header.
    pub const NETWORK: u32 = 1;
    /// The TCP, UDP or ICMP header.
    pub const TRANSPORT: u32 = 2;
}

/// `reject` types.
pub mod reject {
    /// A TCP reset.
    pub const TCP_RST: u32 = 1;
    /// An ICMP or ICMPv6 unreachable of the packet's family (`icmpx`).
    pub const ICMPX: u32 = 2;
    /// `icmpx` code: port unreachable (the sender's socket reads ECONNREFUSED).
    pub const PORT_UNREACH: u8 = 1;
}

/// One nf_tables expression; every load goes to register 1, every compare reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expr {
    /// `meta KEY` into register 1.
    Meta(u32),
    /// `len` bytes at `offset` of header `base` into register 1.
    Payload {
        /// The header ([`base`]).
        base: u32,
        /// Byte offset in it.
        offset: u32,
        /// How many bytes.
        len: u32,
    },
    /// `ct state` into register 1.
    CtState,
    /// Register 1 = (register 1 & mask) ^ 0 over `mask.len()` bytes.
    Mask(Vec<u8>),
    /// Compare register 1 with `data` ([`op`]); the rule stops here when false.
    Cmp(u32, Vec<u8>),
    /// The verdict ([`ACCEPT`], [`DROP`]).
    Verdict(i32),
    /// Reject: [`reject`] type and, for `icmpx`, its code.
    Reject(u32, Option<u8>),
}

impl Expr {
    fn name(&self) -> &'static str {
        match self {
            Expr::Meta(_) => "meta",
            Expr::Payload { .. } => "payload",
            Expr::CtState => "ct",
            Expr::Mask(_) => "bitwise",
            Expr::Cmp(..) => "cmp",
            Expr::Verdict(_) => "immediate",
            Expr::Reject(..) => "reject",
        }
    }

    /// The expression's own attributes (`NFTA_EXPR_DATA`'s content), as the kernel dumps them too.
    fn data(&self) -> Attrs {
        let value = |d: &[u8]| Attrs::new().put(DATA_VALUE, d);
        match self {
            Expr::Meta(key) => Attrs::new().put_be32(2, *key).put_be32(1, REG_1),
            Expr::Payload { base, offset, len } => Attrs::new()
                .put_be32(1, REG_1)
                .put_be32(2, *base)
                .put_be32(3, *offset)
                .put_be32(4, *len),
            Expr::CtState => Attrs::new().put_be32(1, REG_1).put_be32(2, 0),
            Expr::Mask(mask) => Attrs::new()
                .put_be32(1, REG_1)
                .put_be32(2, REG_1)
                .put_be32(3, mask.len() as u32)
                .nest(4, value(mask))
                .nest(5, value(&vec![0; mask.len()])),
            Expr::Cmp(o, data) => Attrs::new()
                .put_be32(1, REG_1)
                .put_be32(2, *o)
                .nest(3, value(data)),
            Expr::Verdict(v) => Attrs::new().put_be32(1, REG_VERDICT).nest(
                2,
                Attrs::new().nest(DATA_VERDICT, Attrs::new().put_be32(VERDICT_CODE, *v as u32)),
            ),
            Expr::Reject(t, code) => {
                let a = Attrs::new().put_be32(1, *t);
                match code {
                    Some(c) => a.put(2, &[*c]),
                    None => a,
                }
            }
        }
    }

    fn encode(&self) -> Attrs {
        Attrs::new()
            .put_str(EXPR_NAME, self.name())
            .nest(EXPR_DATA, self.data())
    }

    /// The expression as one decoded element of a rule read back: its name and its attributes.
    pub fn as_read(&self) -> ReadExpr {
        ReadExpr {
            name: self.name().to_string(),
            attrs: parse_attrs(&self.data().0)
                .into_iter()
                .map(|(t, d)| (t, d.to_vec()))
                .collect(),
        }
    }
}

/// One expression of a rule as the kernel dumped it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadExpr {
    /// The expression type.
    pub name: String,
    /// Its attributes (type, payload), in the kernel's order.
    pub attrs: Vec<(u16, Vec<u8>)>,
}

impl ReadExpr {
    /// Whether this dumped expression is `want`: same name, and each attribute rloxsc sets there
    /// with the same bytes (the kernel may dump more, such as `bitwise`'s operation).
    pub fn is(&self, want: &ReadExpr) -> bool {
        self.name == want.name
            && want
                .attrs
                .iter()
                .all(|(t, d)| self.attrs.iter().any(|(u, e)| u == t && e == d))
    }
}

/// What the kernel holds for rloxsc's table in a network namespace.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Installed {
    /// The table's flags (`dormant` = 1 would switch it off).
    pub table_flags: u32,
    /// The chain's hook, priority, policy and type, if the chain exists.
    pub chain: Option<(u32, i32, i32, String)>,
    /// Its rules, in order.
    pub rules: Vec<Vec<ReadExpr>>,
}

fn nfgen(family: u8, res_id: u16) -> [u8; 4] {
    let r = res_id.to_be_bytes();
    [family, 0, r[0], r[1]]
}

fn nft_type(msg: u16) -> u16 {
    (NFNL_SUBSYS_NFTABLES << 8) | msg
}

fn body(attrs: Attrs) -> Vec<u8> {
    let mut b = nfgen(NFPROTO_INET, 0).to_vec();
    b.extend_from_slice(&attrs.0);
    b
}

const REQ: u16 = libc::NLM_F_REQUEST as u16;
const ACK: u16 = libc::NLM_F_ACK as u16;
const CREATE: u16 = libc::NLM_F_CREATE as u16;
const APPEND: u16 = libc::NLM_F_APPEND as u16;
const EXCL: u16 = libc::NLM_F_EXCL as u16;

/// How [`install`] treats a table that may already be there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A new network namespace: the table is created, and the batch fails (EEXIST) if one is there.
    /// Nothing is deleted, so the netlink socket's release does not wait for nf_tables to free the
    /// old objects after an RCU grace period (~13 ms measured on 6.18).
    Create,
    /// The table is replaced whole (`update --egress-allow`, a namespace joined by path).
    Replace,
}

/// The batch that puts rloxsc's table holding `rules` in the current network namespace (the kernel
/// applies it whole or not at all). Under [`Mode::Replace`]: add the table (a no-op if it exists),
/// delete it with whatever it held, add it again with the chain and its rules. Returns the bytes,
/// the number of acknowledgements to read, and the sequence number of the chain's message.
pub fn batch(rules: &[Vec<Expr>], mode: Mode) -> (Vec<u8>, u32, u32) {
    let mut out = netlink::message(
        NFNL_MSG_BATCH_BEGIN,
        REQ,
        0,
        &nfgen(libc::AF_UNSPEC as u8, NFNL_SUBSYS_NFTABLES),
    );
    let chain_seq = if mode == Mode::Replace { 4 } else { 2 };
    let mut seq = 0u32;
    let mut push = |out: &mut Vec<u8>, msg: u16, flags: u16, attrs: Attrs| {
        seq += 1;
        out.extend(netlink::message(
            nft_type(msg),
            REQ | ACK | flags,
            seq,
            &body(attrs),
        ));
    };
    let table = || {
        Attrs::new()
            .put_str(TABLE_NAME, TABLE)
            .put_be32(TABLE_FLAGS, 0)
    };
    if mode == Mode::Replace {
        push(&mut out, MSG_NEWTABLE, CREATE, table());
        push(
            &mut out,
            MSG_DELTABLE,
            0,
            Attrs::new().put_str(TABLE_NAME, TABLE),
        );
    }
    push(&mut out, MSG_NEWTABLE, CREATE | EXCL, table());
    push(
        &mut out,
        MSG_NEWCHAIN,
        CREATE,
        Attrs::new()
            .put_str(CHAIN_TABLE, TABLE)
            .put_str(CHAIN_NAME, CHAIN)
            .nest(
                CHAIN_HOOK,
                Attrs::new()
                    .put_be32(HOOK_HOOKNUM, HOOK_OUTPUT)
                    .put_be32(HOOK_PRIORITY, PRIORITY as u32),
            )
            .put_be32(CHAIN_POLICY, DROP as u32)
            .put_str(CHAIN_TYPE, "filter"),
    );
    for r in rules {
        let mut list = Attrs::new();
        for e in r {
            list = list.nest(LIST_ELEM, e.encode());
        }
        push(
            &mut out,
            MSG_NEWRULE,
            CREATE | APPEND,
            Attrs::new()
                .put_str(RULE_TABLE, TABLE)
                .put_str(RULE_CHAIN, CHAIN)
                .nest(RULE_EXPRESSIONS, list),
        );
    }
    seq += 1;
    out.extend(netlink::message(
        NFNL_MSG_BATCH_END,
        REQ,
        seq,
        &nfgen(libc::AF_UNSPEC as u8, NFNL_SUBSYS_NFTABLES),
    ));
    (out, seq - 1, chain_seq)
}

/// Installs `rules` as rloxsc's table in the current network namespace (see [`batch`]).
pub fn install(rules: &[Vec<Expr>], mode: Mode) -> Result<()> {
    let sock = Socket::open(NETLINK_NETFILTER).context("nf_tables")?;
    let (bytes, acks, chain_seq) = batch(rules, mode);
    sock.send(&bytes).context("nf_tables")?;
    let mut seen = 0u32;
    let mut failure = None;
    sock.receive(|r| {
        if let Reply::Ack { errno, seq } = r {
            seen += 1;
            if errno != 0 && failure.is_none() {
                failure = Some((seq, errno));
            }
            // an error of the batch itself (no nf_tables) comes alone
            if seen >= acks || (errno != 0 && seq == 0) {
                return Ok(Flow::Stop);
            }
        }
        Ok(Flow::More)
    })
    .context("nf_tables")?;
    if let Some((seq, errno)) = failure {
        let what = match seq {
            0 => "the batch",
            s if s < chain_seq => "the table",
            s if s == chain_seq => "the chain",
            _ => "a rule",
        };
        bail!(
            "nf_tables refused {what}: {}",
            std::io::Error::from_raw_os_error(errno)
        );
    }
    Ok(())
}

/// Reads rloxsc's table in the current network namespace back: `None` when there is none.
pub fn read() -> Result<Option<Installed>> {
    let sock = Socket::open(NETLINK_NETFILTER).context("nf_tables")?;
    let Some(table_flags) = read_table_flags(&sock)? else {
        return Ok(None);
    };
    let chain = read_chain(&sock)?;
    let rules = read_rules(&sock)?;
    Ok(Some(Installed {
        table_flags,
        chain,
        rules,
    }))
}

/// The flags of rloxsc's table, `None` when there is no such table.
fn read_table_flags(sock: &Socket) -> Result<Option<u32>> {
    let mut flags = None;
    let get = netlink::message(
        nft_type(MSG_GETTABLE),
        REQ | ACK,
        1,
        &body(Attrs::new().put_str(TABLE_NAME, TABLE)),
    );
    match netlink::request(sock, &get, 1, |typ, b| {
        if typ == nft_type(MSG_NEWTABLE) {
            flags = Some(be32(attr(&b[4..], TABLE_FLAGS)));
        }
    }) {
        Ok(()) => {}
        Err(e) if is_enoent(&e) => return Ok(None),
        Err(e) => return Err(e.context("nf_tables: reading the table")),
    }
    Ok(flags)
}

/// The hook, priority, policy and type of rloxsc's chain, `None` when there is no such chain.
fn read_chain(sock: &Socket) -> Result<Option<(u32, i32, i32, String)>> {
    let mut chain = None;
    let get = netlink::message(
        nft_type(MSG_GETCHAIN),
        REQ | ACK,
        2,
        &body(
            Attrs::new()
                .put_str(CHAIN_TABLE, TABLE)
                .put_str(CHAIN_NAME, CHAIN),
        ),
    );
    match netlink::request(sock, &get, 2, |typ, b| {
        if typ == nft_type(MSG_NEWCHAIN) {
            let a = &b[4..];
            let hook = attr(a, CHAIN_HOOK).unwrap_or(&[]);
            chain = Some((
                be32(attr(hook, HOOK_HOOKNUM)),
                be32(attr(hook, HOOK_PRIORITY)) as i32,
                be32(attr(a, CHAIN_POLICY)) as i32,
                attr(a, CHAIN_TYPE).map(nul_trimmed).unwrap_or_default(),
            ));
        }
    }) {
        Ok(()) => {}
        Err(e) if is_enoent(&e) => {}
        Err(e) => return Err(e.context("nf_tables: reading the chain")),
    }
    Ok(chain)
}

/// The rules of rloxsc's chain, in order, each as its expressions.
fn read_rules(sock: &Socket) -> Result<Vec<Vec<ReadExpr>>> {
    let mut rules = Vec::new();
    let dump = netlink::message(
        nft_type(MSG_GETRULE),
        REQ | libc::NLM_F_DUMP as u16,
        3,
        &body(
            Attrs::new()
                .put_str(RULE_TABLE, TABLE)
                .put_str(RULE_CHAIN, CHAIN),
        ),
    );
    netlink::request(sock, &dump, 3, |typ, b| {
        if typ != nft_type(MSG_NEWRULE) || b.len() < 4 {
            return;
        }
        let a = &b[4..];
        let named = |t: u16, want: &str| {
            attr(a, t).map(|v| v.strip_suffix(b"\0").unwrap_or(v)) == Some(want.as_bytes())
        };
        if !named(RULE_TABLE, TABLE) || !named(RULE_CHAIN, CHAIN) {
            return;
        }
        rules.push(rule_expressions(attr(a, RULE_EXPRESSIONS).unwrap_or(&[])));
    })
    .context("nf_tables: reading the rules")?;
    Ok(rules)
}

/// The expressions of one rule read back (its `RULE_EXPRESSIONS` attribute), each with its name and
/// raw data attributes.
fn rule_expressions(exprs: &[u8]) -> Vec<ReadExpr> {
    parse_attrs(exprs)
        .into_iter()
        .map(|(_, e)| ReadExpr {
            name: attr(e, EXPR_NAME).map(nul_trimmed).unwrap_or_default(),
            attrs: parse_attrs(attr(e, EXPR_DATA).unwrap_or(&[]))
                .into_iter()
                .map(|(t, d)| (t, d.to_vec()))
                .collect(),
        })
        .collect()
}

/// A netlink string attribute as a `String`, without its trailing NULs.
fn nul_trimmed(t: &[u8]) -> String {
    String::from_utf8_lossy(t)
        .trim_end_matches('\0')
        .to_string()
}

fn be32(a: Option<&[u8]>) -> u32 {
    a.and_then(|d| d.get(..4))
        .and_then(|d| d.try_into().ok())
        .map(u32::from_be_bytes)
        .unwrap_or(u32::MAX)
}

fn is_enoent(e: &anyhow::Error) -> bool {
    e.downcast_ref::<std::io::Error>()
        .and_then(std::io::Error::raw_os_error)
        == Some(libc::ENOENT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_is_framed_by_begin_and_end_with_one_ack_per_command() {
        let rules = vec![vec![Expr::Verdict(ACCEPT)], vec![Expr::Verdict(DROP)]];
        let (b, acks, chain) = batch(&rules, Mode::Replace);
        assert_eq!(acks, 6); // table, delete, table, chain, two rules
        assert_eq!(chain, 4);
        assert_eq!(batch(&rules, Mode::Create).1, 4); // table, chain, two rules
        assert_eq!(u16::from_ne_bytes([b[4], b[5]]), NFNL_MSG_BATCH_BEGIN);
        let mut off = 0;
        let mut types = vec![];
        while off < b.len() {
            let len = u32::from_ne_bytes(b[off..off + 4].try_into().unwrap()) as usize;
            types.push(u16::from_ne_bytes([b[off + 4], b[off + 5]]));
            off += netlink::align(len);
        }
        assert_eq!(types.first(), Some(&NFNL_MSG_BATCH_BEGIN));
        assert_eq!(types.last(), Some(&NFNL_MSG_BATCH_END));
        assert_eq!(types.len(), 8);
    }

    #[test]
    fn a_dumped_expression_may_carry_more_attributes_but_not_other_values() {
        let want = Expr::Mask(vec![6, 0, 0, 0]).as_read();
        let mut dumped = want.clone();
        dumped.attrs.push((6, vec![0, 0, 0, 0])); // NFTA_BITWISE_OP
        assert!(dumped.is(&want));
        let mut other = want.clone();
        other.attrs[3].1[4] = 7;
        assert!(!other.is(&want));
    }
}
