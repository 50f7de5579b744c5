//! What the fuzz targets check, as plain functions (also replayed over the corpus by `cargo test` in
//! this directory, without libFuzzer).
//!
//! `harden()` returns the spec libcontainer will run; whatever the caller's config.json says, that spec
//! must hold rloxsc's hardened default. seccomp is not part of it: rloxsc's own filter is installed by
//! the executor in every container process (and verified), whatever the spec says.

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::path::{Component, Path, PathBuf};

use oci_spec::runtime::{Capability, LinuxNamespaceType, Mount, PosixRlimitType, Spec};
use rloxsc::harden::{harden, HostFacts};
use rloxsc::policy::{self, NetworkMode, Policy};

/// The namespaces of the pretend host: device 4, inodes from 4026531830.
const HOST_DEV: u64 = 4;

const NS_TYPES: [LinuxNamespaceType; 8] = [
    LinuxNamespaceType::Pid,
    LinuxNamespaceType::Mount,
    LinuxNamespaceType::Network,
    LinuxNamespaceType::Ipc,
    LinuxNamespaceType::Uts,
    LinuxNamespaceType::Cgroup,
    LinuxNamespaceType::User,
    LinuxNamespaceType::Time,
];

const ALLOWED_MOUNT_TYPES: &[&str] = &[
    "proc", "sysfs", "tmpfs", "devpts", "mqueue", "cgroup", "cgroup2",
];

fn hash<T: Hash + ?Sized>(t: &T) -> u64 {
    let mut h = DefaultHasher::new();
    t.hash(&mut h);
    h.finish()
}

/// Lexical normalisation of `p` (`.` and `..` resolved, as canonicalize would without symlinks).
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for c in p.components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::ParentDir => {
                out.pop();
            }
            _ => {}
        }
    }
    out
}

/// Host facts as `facts::gather` would find them for `spec` on a cgroup v1 host with the bundle at
/// `/bundle` and no symlinks: namespace paths mentioning "host" resolve to the host's namespaces, those
/// mentioning "missing" do not resolve, others resolve to a namespace of their own; bind sources
/// resolve lexically (relative ones inside the bundle) unless they mention "missing", and a source
/// mentioning "link-to-root" is a symlink to `/`. A hostname mentioning "symlink" gives an image
/// whose `/proc` is a symlink.
pub fn facts_for(spec: &Spec) -> HostFacts {
    let mut host_namespaces = HashMap::new();
    for (i, t) in NS_TYPES.iter().enumerate() {
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
                normalize(src)
            } else {
                normalize(&Path::new("/bundle").join(src))
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
        host_namespaces,
        namespace_paths,
        canonical_sources,
        symlinked_destinations,
        rootfs: PathBuf::from("/bundle/rootfs"),
        has_cgroup_namespace: true,
        cgroup_v1_hierarchies: vec![
            "cpu,cpuacct".into(),
            "memory".into(),
            "pids".into(),
            "devices".into(),
            "systemd".into(),
        ],
        runtime_root: PathBuf::from("/run/rloxsc"),
    }
}

/// The policies a spec is hardened under: the default, and two that an admin could write.
pub fn policies() -> Vec<Policy> {
    let strict = rloxsc::policy_file::parse(
        "[limits]\npids = { default = 64, ceiling = 128 }\nmemory = { default = \"64M\", ceiling = \"256M\" }\nnofile = { default = 256, ceiling = 512 }\ntmpfs = { default = \"1M\", ceiling = \"8M\" }\n[capabilities]\nallowed = [\"CAP_KILL\"]\n[mounts]\nwritable_binds = false\n",
    )
    .expect("the strict policy parses");
    let cni = rloxsc::policy_file::parse(
        "[network]\nmode = \"namespace\"\n[cgroups]\nparent = \"/kubepods/rloxsc\"\n",
    )
    .expect("the cni policy parses");
    vec![Policy::default(), strict, cni]
}

/// The target `harden_spec`: bytes as config.json, parsed as `create` does, hardened under a policy
/// picked by the input's hash, checked.
pub fn harden_spec_bytes(data: &[u8]) {
    let Ok(spec) = rloxsc::commands::create::parse_caller_spec(data, Path::new("config.json"))
    else {
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
            if let Err(e) = check_hardened(&h.spec, &effective, &facts) {
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
            let back =
                rloxsc::commands::create::parse_caller_spec(&bytes, Path::new("config.json"))
                    .unwrap_or_else(|e| panic!("the hardened spec does not parse back: {e:#}"));
            assert!(
                back == h.spec,
                "the hardened spec changes through JSON: {}",
                String::from_utf8_lossy(&bytes)
            );
            // hardening a hardened spec changes nothing (it already holds every rule)
            let again =
                harden(&h.spec, "fuzz-c1", policy, &facts_for(&h.spec)).unwrap_or_else(|r| {
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
    let mut ch = rloxsc::harden::Changes::default();
    let p = rloxsc::harden::annotations::tighten(policy, spec, &mut ch);
    // tightening only: never above the base policy
    assert!(p.pids.ceiling <= policy.pids.ceiling && p.pids.default <= p.pids.ceiling);
    assert!(p.memory_bytes.ceiling <= policy.memory_bytes.ceiling);
    assert!(p.nofile.ceiling <= policy.nofile.ceiling);
    assert!(p.writable_binds <= policy.writable_binds);
    assert!(
        policy.network == NetworkMode::Namespace || p.network == NetworkMode::LoopbackOnly,
        "an annotation widened network.mode"
    );
    p
}

fn opts(m: &Mount) -> Vec<String> {
    m.options().clone().unwrap_or_default()
}

fn is_bind(m: &Mount) -> bool {
    m.typ().as_deref() == Some("bind") || opts(m).iter().any(|o| o == "bind" || o == "rbind")
}

fn has(o: &[String], f: &str) -> bool {
    o.iter().any(|x| x == f)
}

fn size_of(o: &[String]) -> Option<u64> {
    let s = o.iter().find_map(|x| x.strip_prefix("size="))?;
    let (n, m) = match s.chars().last()? {
        'k' | 'K' => (&s[..s.len() - 1], 1024u64),
        'm' | 'M' => (&s[..s.len() - 1], 1 << 20),
        'g' | 'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    n.parse::<u64>().ok()?.checked_mul(m)
}

fn sensitive(src: &Path, facts: &HostFacts) -> bool {
    let name = src.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if policy::SENSITIVE_SOCKET_NAMES.contains(&name) {
        return true;
    }
    let mut paths: Vec<PathBuf> = policy::SENSITIVE_HOST_PATHS
        .iter()
        .map(PathBuf::from)
        .collect();
    paths.push(facts.runtime_root.clone());
    paths.iter().any(|s| s.starts_with(src))
        || policy::SENSITIVE_HOST_TREES
            .iter()
            .any(|t| src.starts_with(t))
        || src.starts_with(&facts.runtime_root)
}

/// Every property of rloxsc's hardened default that the spec itself carries.
pub fn check_hardened(spec: &Spec, policy: &Policy, facts: &HostFacts) -> Result<(), String> {
    let linux = spec.linux().as_ref().ok_or("no linux section")?;

    // namespaces: each required one exactly once, none of the host's, every path resolvable
    let nss = linux.namespaces().clone().unwrap_or_default();
    for t in rloxsc::harden::namespaces::required_namespaces(facts) {
        let n = nss.iter().filter(|n| n.typ() == t).count();
        if n != 1 {
            return Err(format!("{t} namespace listed {n} times"));
        }
    }
    for ns in &nss {
        if let Some(p) = ns.path() {
            match facts.namespace_paths.get(p) {
                None => return Err(format!("unresolvable {} namespace path {p:?}", ns.typ())),
                Some(id) if facts.host_namespaces.get(&ns.typ()) == Some(id) => {
                    return Err(format!("joins the host's {} namespace", ns.typ()))
                }
                _ => {}
            }
        }
    }
    if linux.net_devices().as_ref().is_some_and(|d| !d.is_empty()) {
        return Err("host network devices moved in".into());
    }

    // root
    let root = spec.root().as_ref().ok_or("no root")?;
    if root.readonly() != Some(true) {
        return Err("root not read-only".into());
    }
    if root.path() != &facts.rootfs {
        return Err(format!(
            "root path {:?} is not the checked rootfs",
            root.path()
        ));
    }

    // process: no_new_privs, capabilities, oom_score_adj, rlimits
    let p = spec.process().as_ref().ok_or("no process")?;
    if p.no_new_privileges() != Some(true) {
        return Err("no_new_privileges not set".into());
    }
    let allowed: HashSet<Capability> = policy.allowed_capabilities().into_iter().collect();
    let caps = p.capabilities().as_ref().ok_or("no capabilities")?;
    let sets = [
        ("bounding", caps.bounding()),
        ("effective", caps.effective()),
        ("permitted", caps.permitted()),
        ("inheritable", caps.inheritable()),
        ("ambient", caps.ambient()),
    ];
    for (name, set) in &sets {
        let set = set.as_ref().ok_or(format!("{name} set absent"))?;
        if let Some(c) = set.iter().find(|c| !allowed.contains(c)) {
            return Err(format!("{name} set holds {c}, outside the policy"));
        }
        if let Some(c) = set
            .iter()
            .find(|c| policy::FORBIDDEN_CAPABILITIES.contains(c))
        {
            return Err(format!("{name} set holds forbidden {c}"));
        }
    }
    if p.oom_score_adj().is_some_and(|v| v < 0) {
        return Err("negative oom_score_adj".into());
    }
    let rl = p.rlimits().clone().unwrap_or_default();
    let nofile: Vec<_> = rl
        .iter()
        .filter(|r| r.typ() == PosixRlimitType::RlimitNofile)
        .collect();
    if nofile.len() != 1 {
        return Err(format!(
            "{} RLIMIT_NOFILE entries (the last one wins)",
            nofile.len()
        ));
    }
    if nofile[0].hard() > policy.nofile.ceiling || nofile[0].soft() > nofile[0].hard() {
        return Err(format!(
            "RLIMIT_NOFILE {}/{} above the ceiling {}",
            nofile[0].soft(),
            nofile[0].hard(),
            policy.nofile.ceiling
        ));
    }
    let core: Vec<_> = rl
        .iter()
        .filter(|r| r.typ() == PosixRlimitType::RlimitCore)
        .collect();
    if core.len() != 1 || core[0].soft() != 0 || core[0].hard() != 0 {
        return Err("RLIMIT_CORE is not exactly one 0/0 entry".into());
    }

    // cgroup limits
    let res = linux.resources().as_ref().ok_or("no resources")?;
    let pids = res
        .pids()
        .as_ref()
        .map(|p| p.limit())
        .ok_or("no pids limit")?;
    if pids < 1 || pids as u64 > policy.pids.ceiling {
        return Err(format!(
            "pids limit {pids} outside 1..={}",
            policy.pids.ceiling
        ));
    }
    let mem = res.memory().as_ref().ok_or("no memory limit")?;
    let limit = mem.limit().ok_or("no memory limit")?;
    if limit < 1 || limit as u64 > policy.memory_bytes.ceiling {
        return Err(format!("memory limit {limit} outside the ceiling"));
    }
    if mem.swap() != Some(limit) {
        return Err(format!(
            "memory+swap {:?} is not the memory limit {limit}",
            mem.swap()
        ));
    }
    if mem.reservation().is_some_and(|r| r > limit) || mem.disable_oom_killer() == Some(true) {
        return Err("memory reservation above the limit or OOM killer disabled".into());
    }
    if let Some(u) = res.unified() {
        if let Some(k) = u
            .keys()
            .find(|k| !(k.starts_with("cpu.") || k.starts_with("io.") || k.starts_with("hugetlb.")))
        {
            return Err(format!("raw cgroup v2 key {k} kept"));
        }
    }
    if res.devices().as_ref() != Some(&rloxsc::harden::devices::device_rules()) {
        return Err("device cgroup rules are not deny-all plus the allowed set".into());
    }
    for d in linux.devices().iter().flatten() {
        if d.typ() != oci_spec::runtime::LinuxDeviceType::C
            || !rloxsc::harden::devices::is_allowed_char_device(d.major(), d.minor())
        {
            return Err(format!("device node {:?} kept", d.path()));
        }
    }
    let cg = linux.cgroups_path().as_ref().ok_or("no cgroupsPath")?;
    if !cg.is_absolute()
        || !cg.components().any(|c| matches!(c, Component::Normal(_)))
        || cg
            .components()
            .any(|c| matches!(c, Component::ParentDir | Component::CurDir))
    {
        return Err(format!("cgroupsPath {cg:?} is not a cgroup below the root"));
    }
    for k in linux.sysctl().iter().flat_map(|s| s.keys()) {
        let ns = k.starts_with("net.")
            || k.starts_with("fs.mqueue.")
            || matches!(
                k.as_str(),
                "kernel.shmmax"
                    | "kernel.shmall"
                    | "kernel.shmmni"
                    | "kernel.shm_rmid_forced"
                    | "kernel.msgmax"
                    | "kernel.msgmnb"
                    | "kernel.msgmni"
                    | "kernel.sem"
            );
        if !ns {
            return Err(format!("host-wide sysctl {k} kept"));
        }
    }

    // masked and read-only paths
    let masked = linux.masked_paths().clone().unwrap_or_default();
    let ro = linux.readonly_paths().clone().unwrap_or_default();
    for m in policy::MASKED_PATHS {
        if !masked.iter().any(|x| x == m) {
            return Err(format!("{m} not masked"));
        }
    }
    for r in policy::READONLY_PATHS {
        if !ro.iter().any(|x| x == r) {
            return Err(format!("{r} not read-only"));
        }
    }

    // mounts
    let mounts = spec.mounts().clone().unwrap_or_default();
    for need in ["/proc", "/sys", "/dev"] {
        if !mounts.iter().any(|m| m.destination() == Path::new(need)) {
            return Err(format!("no mount at {need}"));
        }
    }
    for m in &mounts {
        let o = opts(m);
        let dest = m.destination().display().to_string();
        if is_bind(m) {
            let src = m.source().clone().unwrap_or_default();
            if !src.is_absolute() {
                return Err(format!("bind onto {dest} from relative source {src:?}"));
            }
            let canonical = facts
                .canonical_sources
                .get(&src)
                .cloned()
                .unwrap_or(src.clone());
            if sensitive(&canonical, facts) {
                return Err(format!("bind of sensitive {canonical:?} onto {dest}"));
            }
            if !has(&o, "nosuid") || !has(&o, "nodev") || has(&o, "suid") || has(&o, "dev") {
                return Err(format!("bind onto {dest} without nosuid,nodev: {o:?}"));
            }
            // the plain flags reach the top mount only; an rbind's submounts need the recursive ones
            if !has(&o, "rnosuid") || !has(&o, "rnodev") || has(&o, "rsuid") || has(&o, "rdev") {
                return Err(format!("bind onto {dest} without rnosuid,rnodev: {o:?}"));
            }
            if !policy.writable_binds
                && (!has(&o, "ro") || has(&o, "rw") || !has(&o, "rro") || has(&o, "rrw"))
            {
                return Err(format!(
                    "writable bind onto {dest} under writable_binds = false"
                ));
            }
            if has(&o, "shared") || has(&o, "rshared") {
                return Err(format!("shared bind onto {dest}"));
            }
            continue;
        }
        let typ = m.typ().clone().unwrap_or_default();
        if let Some(x) = ["rrw", "rsuid", "rdev", "rexec"]
            .iter()
            .find(|x| has(&o, x))
        {
            return Err(format!("{typ} at {dest} keeps the recursive {x}"));
        }
        if !ALLOWED_MOUNT_TYPES.contains(&typ.as_str()) {
            return Err(format!("mount of type {typ:?} onto {dest}"));
        }
        match typ.as_str() {
            "proc" if dest != "/proc" => return Err(format!("extra proc mount at {dest}")),
            "sysfs" | "cgroup" | "cgroup2" => {
                if !has(&o, "ro") || has(&o, "rw") {
                    return Err(format!("{typ} at {dest} not read-only"));
                }
                if typ != "sysfs" && !ro.iter().any(|x| *x == dest) {
                    return Err(format!("cgroupfs at {dest} not in readonlyPaths"));
                }
            }
            "tmpfs" => {
                if !has(&o, "nosuid") || has(&o, "suid") {
                    return Err(format!("tmpfs at {dest} without nosuid"));
                }
                if dest != "/dev" && (!has(&o, "nodev") || has(&o, "dev")) {
                    return Err(format!("tmpfs at {dest} without nodev"));
                }
                match size_of(&o) {
                    Some(s) if s > 0 && s <= policy.tmpfs_bytes.ceiling => {}
                    s => return Err(format!("tmpfs at {dest} of size {s:?}")),
                }
            }
            "devpts" | "mqueue" => {
                if !has(&o, "nosuid") || !has(&o, "noexec") || has(&o, "exec") {
                    return Err(format!("{typ} at {dest} without nosuid,noexec"));
                }
            }
            _ => {}
        }
    }
    if root.readonly() == Some(true)
        && linux
            .rootfs_propagation()
            .as_deref()
            .is_some_and(|p| p == "shared" || p == "rshared")
    {
        return Err("shared rootfs propagation".into());
    }
    Ok(())
}

/// The target `policy_toml`: bytes as a policy file.
pub fn policy_toml_bytes(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(p) = rloxsc::policy_file::parse(text) else {
        return;
    };
    if let Err(e) = check_policy(&p) {
        panic!("policy invariant broken: {e}\npolicy file: {text:?}\nparsed: {p:?}");
    }
    let shown = rloxsc::policy_file::render(&p, None);
    match rloxsc::policy_file::parse(&shown) {
        Ok(back) => assert!(
            back == p,
            "`policy show` output parses to another policy\nfile: {text:?}\nshown: {shown}\nback: {back:?}"
        ),
        Err(e) => panic!("`policy show` output does not parse: {e:#}\nfile: {text:?}\nshown: {shown}"),
    }
    harden_and_check(&careless_spec(), &p);
}

/// The hard bounds of `policy_file`, which no accepted file may cross.
pub fn check_policy(p: &Policy) -> Result<(), String> {
    use rloxsc::policy_file::bounds;
    let lim = |name: &str, l: policy::Limit, min: u64, max: u64| {
        if l.default < min || l.default > l.ceiling || l.ceiling == 0 || l.ceiling > max {
            Err(format!("limits.{name} {l:?} outside {min}..={max}"))
        } else {
            Ok(())
        }
    };
    lim("pids", p.pids, 1, bounds::PIDS_MAX)?;
    lim(
        "memory",
        p.memory_bytes,
        bounds::MEMORY_MIN,
        bounds::MEMORY_MAX,
    )?;
    lim("nofile", p.nofile, 16, bounds::NOFILE_MAX)?;
    lim("tmpfs", p.tmpfs_bytes, 1 << 20, bounds::TMPFS_MAX)?;
    if let Some(c) = p
        .capabilities
        .iter()
        .find(|c| policy::FORBIDDEN_CAPABILITIES.contains(c))
    {
        return Err(format!("forbidden capability {c} accepted"));
    }
    if let Some(s) = p
        .extra_syscalls
        .iter()
        .find(|s| rloxsc::seccomp::allowlist::NEVER_ALLOWED.contains(&s.as_str()))
    {
        return Err(format!("never-allowed syscall {s} accepted"));
    }
    let parent = Path::new(&p.cgroup_parent);
    if !parent.is_absolute()
        || !parent
            .components()
            .any(|c| matches!(c, Component::Normal(_)))
        || parent
            .components()
            .any(|c| matches!(c, Component::ParentDir))
        || p.cgroup_parent.split('/').any(|c| c == ".")
    {
        return Err(format!(
            "cgroups.parent {:?} is not below the root",
            p.cgroup_parent
        ));
    }
    if p.records_dir.as_ref().is_some_and(|d| !d.is_absolute()) {
        return Err("relative records.dir accepted".into());
    }
    Ok(())
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
