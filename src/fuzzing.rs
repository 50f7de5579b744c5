//! The bodies of the fuzz targets (`fuzz/`, cargo-fuzz), as plain functions in the crate so that the
//! fuzz crate keeps no copy of rloxsc's data and `cargo test` replays the committed corpus
//! (`fuzz/corpus/*`) through exactly the same checks without libFuzzer.
//!
//! `harden()` returns the spec libcontainer will run; whatever the caller's config.json says, that spec
//! must hold rloxsc's hardened default ([`crate::harden::invariants`]).

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use oci_spec::runtime::Spec;

use crate::harden::{harden, HostFacts};
use crate::policy::Policy;

/// The namespaces of the pretend host: device 4, inodes from 4026531830.
const HOST_DEV: u64 = 4;

fn hash<T: Hash + ?Sized>(t: &T) -> u64 {
    let mut h = DefaultHasher::new();
    t.hash(&mut h);
    h.finish()
}

/// Host facts as `facts::gather` would find them for `spec` on a cgroup v1 host with the bundle at
/// `/bundle` and no symlinks: namespace paths mentioning "host" resolve to the host's namespaces, those
/// mentioning "missing" do not resolve, others resolve to a namespace of their own; bind sources
/// resolve lexically (relative ones inside the bundle) unless they mention "missing", and a source
/// mentioning "link-to-root" is a symlink to `/`. A hostname mentioning "symlink" gives an image
/// whose `/proc` is a symlink.
pub fn facts_for(spec: &Spec) -> HostFacts {
    let mut host_namespaces = HashMap::new();
    for (i, t) in crate::facts::ALL_NAMESPACES.iter().enumerate() {
        host_namespaces.insert(*t, (HOST_DEV, 4026531830 + i as u64));
    }
    let mut namespace_paths = HashMap::new();
    if let Some(nss) = spec.linux().as_ref().and_then(|l| l.namespaces().as_ref()) {
        for ns in nss {
            if let Some(p) = ns.path() {
                let s = p.to_string_lossy();
                if s.contains("missing") {
                    continue;
                }
                let id = if s.contains("host") {
                    host_namespaces
                        .get(&ns.typ())
                        .copied()
                        .unwrap_or((HOST_DEV, 1))
                } else {
                    (HOST_DEV + 1, hash(p.as_os_str()))
                };
                namespace_paths.insert(p.clone(), id);
            }
        }
    }
    let mut canonical_sources = HashMap::new();
    for m in spec.mounts().iter().flatten() {
        if let Some(src) = m.source() {
            let s = src.to_string_lossy();
            if s.contains("missing") {
                continue;
            }
            let c = if s.contains("link-to-root") {
                PathBuf::from("/")
            } else if src.is_absolute() {
                crate::paths::normal_abs(src)
            } else {
                crate::paths::normal_abs(&Path::new("/bundle").join(src))
            };
            canonical_sources.insert(src.clone(), c);
        }
    }
    let symlinked_destinations = if spec
        .hostname()
        .as_deref()
        .is_some_and(|h| h.contains("symlink"))
    {
        vec![PathBuf::from("/proc")]
    } else {
        vec![]
    };
    HostFacts {
        image_dirs: vec![PathBuf::from("/run")],
        symlinked_writable: vec![],
        host_namespaces,
        namespace_paths,
        namespace_owners: HashMap::new(),
        namespace_types: HashMap::new(),
        canonical_sources,
        symlinked_destinations,
        rootfs: PathBuf::from("/bundle/rootfs"),
        image_home: Some(crate::harden::HomeLookup::Found("/root".into())),
        runtime_binaries: vec![PathBuf::from("/usr/local/sbin/rloxsc")],
        userns_base: Some(1 << 30),
        userns_taken: vec![],
        has_cgroup_namespace: true,
        cgroup_v1_hierarchies: vec![
            "cpu,cpuacct".into(),
            "memory".into(),
            "pids".into(),
            "devices".into(),
            "systemd".into(),
        ],
        // a spec that names a systemd unit is hardened as under --systemd-cgroup
        cgroup_driver: if spec
            .linux()
            .as_ref()
            .and_then(|l| l.cgroups_path().as_ref())
            .is_some_and(|p| p.to_string_lossy().contains(':'))
        {
            crate::cgroups::Driver::Systemd
        } else {
            crate::cgroups::Driver::Cgroupfs
        },
        runtime_root: PathBuf::from("/run/rloxsc"),
    }
}

/// The policies a spec is hardened under: the default, and two that an admin could write.
pub fn policies() -> Vec<Policy> {
    let strict = crate::policy_file::parse(
        "[limits]\npids = { default = 64, ceiling = 128 }\nmemory = { default = \"64M\", ceiling = \"256M\" }\nnofile = { default = 256, ceiling = 512 }\ntmpfs = { default = \"1M\", ceiling = \"8M\" }\n[capabilities]\nallowed = [\"CAP_KILL\"]\n[mounts]\nwritable_binds = false\n",
    )
    .expect("the strict policy parses");
    let cni = crate::policy_file::parse(
        "[network]\nmode = \"namespace\"\n[cgroups]\nparent = \"/kubepods/rloxsc\"\n",
    )
    .expect("the cni policy parses");
    vec![Policy::default(), strict, cni]
}

/// The target `harden_spec`: bytes as config.json, parsed as `create` does, hardened under a policy
/// picked by the input's hash, checked.
pub fn harden_spec_bytes(data: &[u8]) {
    let Ok(spec) = crate::bundle::parse_caller_spec(data, Path::new("config.json")) else {
        return;
    };
    let policies = policies();
    let policy = &policies[(hash(data) % policies.len() as u64) as usize];
    harden_and_check(&spec, policy);
}

/// Hardens `spec` under `policy` and checks the result (a refusal must name a key and a reason).
pub fn harden_and_check(spec: &Spec, policy: &Policy) {
    let facts = facts_for(spec);
    match harden(spec, "fuzz-c1", policy, &facts) {
        Ok(h) => {
            let effective = effective_policy(policy, spec);
            if let Err(e) = crate::harden::invariants::check(&h.spec, &effective, &facts) {
                panic!(
                    "hardening invariant broken: {e}\ncaller spec: {}\nhardened: {}",
                    serde_json::to_string(spec).unwrap_or_default(),
                    serde_json::to_string(&h.spec).unwrap_or_default()
                );
            }
            for c in &h.changes {
                assert!(!c.key.is_empty(), "a change without a policy key: {c:?}");
            }
            // what create writes is what libcontainer reads back
            let bytes = serde_json::to_vec(&h.spec).expect("the hardened spec serializes");
            let back = crate::bundle::parse_caller_spec(&bytes, Path::new("config.json"))
                .unwrap_or_else(|e| panic!("the hardened spec does not parse back: {e:#}"));
            assert!(
                back == h.spec,
                "the hardened spec changes through JSON: {}",
                String::from_utf8_lossy(&bytes)
            );
            // hardening a hardened spec changes nothing (it already holds every rule); the cgroup
            // driver is the invocation's, not guessed again from the hardened path (a cgroupfs
            // parent may hold a `:`: found by fuzz/policy_toml)
            let again_facts = HostFacts {
                cgroup_driver: facts.cgroup_driver,
                ..facts_for(&h.spec)
            };
            let again = harden(&h.spec, "fuzz-c1", policy, &again_facts).unwrap_or_else(|r| {
                panic!(
                    "the hardened spec is refused when hardened again: {r}\nhardened: {}",
                    String::from_utf8_lossy(&bytes)
                )
            });
            assert!(
                again.spec == h.spec,
                "hardening is not idempotent\nonce: {}\ntwice: {}",
                String::from_utf8_lossy(&bytes),
                serde_json::to_string(&again.spec).unwrap_or_default()
            );
        }
        Err(r) => {
            assert!(
                !r.key.is_empty() && !r.reason.is_empty(),
                "empty refusal {r:?}"
            );
        }
    }
}

/// The policy after the spec's `run.rloxsc.*` annotations (which can only tighten it).
fn effective_policy(policy: &Policy, spec: &Spec) -> Policy {
    let mut ch = crate::harden::Changes::default();
    let p = crate::harden::annotations::tighten(policy, spec, &mut ch);
    // tightening only: never above the base policy
    assert!(p.pids.ceiling <= policy.pids.ceiling && p.pids.default <= p.pids.ceiling);
    assert!(p.memory_bytes.ceiling <= policy.memory_bytes.ceiling);
    assert!(p.nofile.ceiling <= policy.nofile.ceiling);
    assert!(p.writable_binds <= policy.writable_binds);
    assert!(
        p.network <= policy.network,
        "an annotation widened network.mode"
    );
    assert!(
        crate::egress_rule::within(&p.egress_allow, &policy.egress_allow),
        "an annotation widened network.egress_allow"
    );
    p
}

/// The target `policy_toml`: bytes as a policy file.
pub fn policy_toml_bytes(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(p) = crate::policy_file::parse(text) else {
        return;
    };
    if let Err(e) = crate::harden::invariants::check_policy(&p) {
        panic!("policy invariant broken: {e}\npolicy file: {text:?}\nparsed: {p:?}");
    }
    let shown = crate::policy_file::render(&p, None);
    match crate::policy_file::parse(&shown) {
        Ok(back) => assert!(
            back == p,
            "`policy show` output parses to another policy\nfile: {text:?}\nshown: {shown}\nback: {back:?}"
        ),
        Err(e) => panic!("`policy show` output does not parse: {e:#}\nfile: {text:?}\nshown: {shown}"),
    }
    harden_and_check(&careless_spec(), &p);
}

/// A careless caller's spec: every capability asked for, host namespaces, a writable root, no limits,
/// binds, devices and sysctls that must all be tightened.
pub fn careless_spec() -> Spec {
    let json = r#"{
      "ociVersion": "1.0.2",
      "process": {"terminal": false, "user": {"uid": 0, "gid": 0}, "args": ["sh"], "cwd": "/",
                  "env": ["PATH=/bin"], "noNewPrivileges": false, "oomScoreAdj": -1000,
                  "rlimits": [{"type": "RLIMIT_NOFILE", "hard": 1048576, "soft": 1048576}],
                  "capabilities": {"bounding": ["CAP_SYS_ADMIN","CAP_CHOWN","CAP_NET_RAW","CAP_KILL"],
                                   "effective": ["CAP_SYS_ADMIN","CAP_CHOWN","CAP_KILL"],
                                   "permitted": ["CAP_SYS_ADMIN","CAP_CHOWN","CAP_KILL"],
                                   "ambient": ["CAP_SYS_ADMIN","CAP_KILL"]}},
      "root": {"path": "rootfs", "readonly": false},
      "mounts": [
        {"destination": "/proc", "type": "proc", "source": "proc"},
        {"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid","strictatime","mode=755","size=65536k"]},
        {"destination": "/sys", "type": "sysfs", "source": "sysfs", "options": ["nosuid","noexec","nodev","rw"]},
        {"destination": "/sys/fs/cgroup", "type": "cgroup", "source": "cgroup", "options": ["rw"]},
        {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": ["size=0"]},
        {"destination": "/data", "type": "bind", "source": "/srv/data", "options": ["rbind","rw","suid","rshared"]}
      ],
      "linux": {"namespaces": [{"type": "pid"}, {"type": "mount"}],
                "resources": {"pids": {"limit": -1}, "memory": {"limit": -1, "swap": -1},
                              "devices": [{"allow": true, "access": "rwm"}]},
                "devices": [{"path": "/dev/sda", "type": "b", "major": 8, "minor": 0}],
                "sysctl": {"kernel.core_pattern": "|/tmp/x", "net.ipv4.ip_forward": "1"},
                "rootfsPropagation": "rshared"}
    }"#;
    serde_json::from_str(json).expect("the careless spec parses")
}

/// Every committed corpus file of `target` (`fuzz/corpus/<target>/*`).
pub fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let mut out: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(&dir)
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| std::fs::read(e.path()).ok().map(|d| (e.path(), d)))
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    // The committed corpus through the fuzz targets' own checks (a panic names the invariant).
    #[test]
    fn corpus_replays_through_the_fuzz_checks() {
        let specs = corpus("harden_spec");
        let policies = corpus("policy_toml");
        assert!(
            specs.len() >= 10 && !policies.is_empty(),
            "corpus missing: {} / {}",
            specs.len(),
            policies.len()
        );
        for (_, data) in &specs {
            harden_spec_bytes(data);
        }
        for (_, data) in &policies {
            policy_toml_bytes(data);
        }
    }

    // The careless spec is hardened under every policy the fuzzers use.
    #[test]
    fn careless_spec_holds_every_invariant() {
        for p in policies() {
            harden_and_check(&careless_spec(), &p);
        }
    }
}
