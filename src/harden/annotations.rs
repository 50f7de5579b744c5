//! Step 0: per-container annotations (`run.rloxsc.*`) may tighten the policy for that container, never
//! loosen it: `run.rloxsc.pids`, `run.rloxsc.memory` (bytes or with K/M/G), `run.rloxsc.nofile` lower
//! the default and the ceiling; `run.rloxsc.network` may name a stricter mode (`loopback-only`, or
//! `inbound-only` under a `namespace` policy); `run.rloxsc.egress_allow` a narrower allowlist (each
//! entry within one of the policy's); `run.rloxsc.writable_binds=false` switches the relaxation
//! off; `run.rloxsc.cpu_time` and `run.rloxsc.file_size` lower the judge limits
//! ([`crate::limits`]). Anything else is ignored, with a logged change.

use oci_spec::runtime::Spec;

use super::Changes;
use crate::egress_rule::{within, EgressRule};
use crate::policy::{keys, Limit, NetworkMode, Policy};

/// The annotation prefix.
pub const PREFIX: &str = "run.rloxsc.";

fn size(v: &str) -> Option<u64> {
    let t = v.trim();
    let (d, m) = match t.chars().last()?.to_ascii_uppercase() {
        'K' => (&t[..t.len() - 1], 1u64 << 10),
        'M' => (&t[..t.len() - 1], 1 << 20),
        'G' => (&t[..t.len() - 1], 1 << 30),
        _ => (t, 1),
    };
    d.parse::<u64>().ok()?.checked_mul(m)
}

fn lower(l: Limit, v: u64) -> Limit {
    Limit {
        default: l.default.min(v),
        ceiling: l.ceiling.min(v),
    }
}

/// The policy for this container: `policy` tightened by the spec's `run.rloxsc.*` annotations.
pub fn tighten(policy: &Policy, spec: &Spec, changes: &mut Changes) -> Policy {
    let mut p = policy.clone();
    let Some(ann) = spec.annotations() else {
        return p;
    };
    let mut keys_sorted: Vec<&String> = ann.keys().filter(|k| k.starts_with(PREFIX)).collect();
    keys_sorted.sort();
    for k in keys_sorted {
        let v = &ann[k];
        let name = &k[PREFIX.len()..];
        let applied = match name {
            "pids" => v.trim().parse::<u64>().ok().filter(|&n| n > 0).map(|n| {
                p.pids = lower(p.pids, n);
                keys::PIDS
            }),
            "memory" => size(v).filter(|&n| n > 0).map(|n| {
                p.memory_bytes = lower(p.memory_bytes, n);
                keys::MEMORY
            }),
            "nofile" => v.trim().parse::<u64>().ok().filter(|&n| n > 0).map(|n| {
                p.nofile = lower(p.nofile, n);
                keys::NOFILE
            }),
            "network" => NetworkMode::parse(v.trim())
                .filter(|m| *m <= p.network)
                .map(|m| {
                    p.network = m;
                    keys::NETWORK_MODE
                }),
            "egress_allow" => EgressRule::parse_list(v)
                .ok()
                .filter(|l| within(l, &p.egress_allow))
                .map(|l| {
                    p.egress_allow = l;
                    keys::EGRESS_ALLOW
                }),
            "writable_binds" if v == "false" => {
                p.writable_binds = false;
                Some(keys::WRITABLE_BINDS)
            }
            other => crate::limits::rules::annotation(other, v, &mut p).flatten(),
        };
        match applied {
            Some(key) => changes.push(
                key,
                format!("annotation {k}={v} tightens the policy for this container"),
            ),
            None => changes.push(
                keys::CLI,
                format!("annotation {k}={v} ignored: annotations can only tighten known limits"),
            ),
        }
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harden::testutil::careless_spec;

    fn with(ann: &[(&str, &str)]) -> Spec {
        let mut s = careless_spec();
        s.set_annotations(Some(
            ann.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        ));
        s
    }

    #[test]
    fn annotations_tighten() {
        let mut c = Changes::default();
        let p = tighten(
            &Policy::default(),
            &with(&[("run.rloxsc.pids", "64"), ("run.rloxsc.memory", "128M")]),
            &mut c,
        );
        assert_eq!(
            p.pids,
            Limit {
                default: 64,
                ceiling: 64
            }
        );
        assert_eq!(p.memory_bytes.ceiling, 128 << 20);
        assert_eq!(c.0.len(), 2);
    }

    #[test]
    fn annotations_never_loosen() {
        let mut c = Changes::default();
        let p = tighten(
            &Policy::default(),
            &with(&[
                ("run.rloxsc.pids", "100000"),
                ("run.rloxsc.network", "host"),
                ("run.rloxsc.seccomp", "off"),
            ]),
            &mut c,
        );
        assert_eq!(p.pids, Policy::default().pids);
        assert_eq!(p.network, NetworkMode::InboundOnly);
        assert!(
            c.0.iter().filter(|c| c.what.contains("ignored")).count() == 2,
            "{:?}",
            c.0
        );
    }

    #[test]
    fn the_network_annotations_only_narrow() {
        let wide = Policy {
            network: NetworkMode::Namespace,
            egress_allow: EgressRule::parse_list("10.0.0.0/8,fd00::/64").unwrap(),
            ..Policy::default()
        };
        let mut c = Changes::default();
        let p = tighten(
            &wide,
            &with(&[
                ("run.rloxsc.network", "inbound-only"),
                ("run.rloxsc.egress_allow", "10.1.2.3:3128"),
            ]),
            &mut c,
        );
        assert_eq!(p.network, NetworkMode::InboundOnly);
        assert_eq!(
            p.egress_allow,
            EgressRule::parse_list("10.1.2.3:3128").unwrap()
        );
        // wider than the policy, or a looser mode: ignored
        let mut c = Changes::default();
        let p = tighten(
            &Policy::default(),
            &with(&[
                ("run.rloxsc.network", "namespace"),
                ("run.rloxsc.egress_allow", "10.1.2.3:3128"),
            ]),
            &mut c,
        );
        assert_eq!(p.network, NetworkMode::InboundOnly);
        assert!(p.egress_allow.is_empty());
        assert_eq!(c.0.iter().filter(|c| c.what.contains("ignored")).count(), 2);
    }
}
