//! The policy file (`/etc/rloxsc/policy.toml`, or `--policy PATH`, or `RLOXSC_POLICY`): every default
//! and ceiling of the hardened default, adjustable only within hard bounds compiled into the binary.
//! Nothing in it can give host namespaces, drop seccomp, make the root writable, or lift the pids or
//! memory limits: such a file is invalid, and an invalid or unreadable file makes rloxsc refuse to run
//! anything, naming the file and line.
//!
//! ```toml
//! [limits]
//! pids = { default = 512, ceiling = 4096 }
//! memory = { default = "512M", ceiling = "16G" }
//! nofile = { default = 1024, ceiling = 65536 }
//! tmpfs = { default = "64M", ceiling = "1G" }
//! store = { default = "256M", ceiling = "4G" }   # what a container writes outside its tmpfs and binds
//! cpu_time = { default = "10s", ceiling = "60s" } # CPU time of the whole container (off unless set)
//! file_size = { ceiling = "1G" }                  # RLIMIT_FSIZE of every process (off unless set)
//! disk = { default = "10G", ceiling = "100G", required = false } # the client's layer (project quota)
//! [capabilities]
//! allowed = ["CAP_CHOWN", "CAP_KILL"]
//! [network]
//! mode = "loopback-only"          # or "namespace": interfaces added by the caller's hooks (CNI)
//! [mounts]
//! writable_binds = true
//! [filesystem]
//! writable = ["$WORKDIR", "$HOME", "/tmp", "/var/tmp"]  # never a system path; they share the store
//! [seccomp]
//! extra_syscalls = ["get_mempolicy"] # on top of rloxsc's allowlist for create, run and exec; logged
//! [records]
//! dir = "/var/lib/rloxsc/records"
//! [cgroups]
//! parent = "/rloxsc"
//! ```

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Result};
use oci_spec::runtime::Capability;
use serde::Deserialize;

use crate::policy::{Limit, NetworkMode, Policy, FORBIDDEN_CAPABILITIES};

/// The default policy file location.
pub const DEFAULT_PATH: &str = "/etc/rloxsc/policy.toml";

pub use crate::policy::bounds;

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum Num {
    Int(u64),
    Text(String),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LimitFile {
    default: Option<Num>,
    ceiling: Option<Num>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct LimitsSection {
    pids: Option<LimitFile>,
    memory: Option<LimitFile>,
    nofile: Option<LimitFile>,
    tmpfs: Option<LimitFile>,
    store: Option<LimitFile>,
    ptys: Option<LimitFile>,
    create_timeout: Option<Num>,
    cpu_time: Option<LimitFile>,
    file_size: Option<LimitFile>,
    disk: Option<DiskFile>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DiskFile {
    default: Option<Num>,
    ceiling: Option<Num>,
    #[serde(default)]
    required: bool,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct CapsSection {
    allowed: Option<Vec<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct NetworkSection {
    mode: Option<String>,
    egress_allow: Option<Vec<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct MountsSection {
    writable_binds: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FilesystemSection {
    writable: Option<Vec<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct SeccompSection {
    extra_syscalls: Option<Vec<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RecordsSection {
    dir: Option<PathBuf>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct CgroupsSection {
    parent: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct PoolFile {
    start: u64,
    blocks: u64,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct UsernsSection {
    mode: Option<String>,
    pool: Option<PoolFile>,
    /// No longer used (every bind is idmapped onto its directory's owner): a clear error.
    idmapped_volumes: Option<Vec<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyFile {
    userns: Option<UsernsSection>,
    limits: Option<LimitsSection>,
    capabilities: Option<CapsSection>,
    network: Option<NetworkSection>,
    mounts: Option<MountsSection>,
    filesystem: Option<FilesystemSection>,
    seccomp: Option<SeccompSection>,
    records: Option<RecordsSection>,
    cgroups: Option<CgroupsSection>,
}

/// Parses `512`, `"512M"`, `"16G"`, `"64k"` into a number (bytes for sizes: `crate::size`'s grammar).
fn num(n: &Num) -> Result<u64> {
    match n {
        Num::Int(v) => Ok(*v),
        Num::Text(s) => {
            crate::size::parse(s).ok_or_else(|| anyhow!("{s:?} is not a number or size"))
        }
    }
}

fn limit(name: &str, f: &Option<LimitFile>, base: Limit, min: u64, max: u64) -> Result<Limit> {
    let Some(f) = f else { return Ok(base) };
    let ceiling = f
        .ceiling
        .as_ref()
        .map(num)
        .transpose()?
        .unwrap_or(base.ceiling);
    let default = f
        .default
        .as_ref()
        .map(num)
        .transpose()?
        .unwrap_or(base.default.min(ceiling));
    if ceiling == 0 || ceiling > max {
        bail!("limits.{name}.ceiling {ceiling} is outside the hard bounds 1..={max} (unlimited is never allowed)");
    }
    if default < min || default > ceiling {
        bail!("limits.{name}.default {default} must be between {min} and the ceiling {ceiling}");
    }
    Ok(Limit { default, ceiling })
}

/// `limits.cpu_time` or `limits.file_size`: off unless given; a ceiling alone is also the default,
/// a default never above the ceiling, neither 0.
fn optional_limit(
    name: &str,
    f: &Option<LimitFile>,
    value: impl Fn(&Num) -> Result<u64>,
) -> Result<crate::policy::OptionalLimit> {
    let Some(f) = f else {
        return Ok(Default::default());
    };
    let default = f.default.as_ref().map(&value).transpose()?;
    let ceiling = f.ceiling.as_ref().map(&value).transpose()?;
    if default == Some(0) || ceiling == Some(0) {
        bail!("limits.{name}: 0 is not a limit (leave it out for none)");
    }
    if let (Some(d), Some(c)) = (default, ceiling) {
        if d > c {
            bail!("limits.{name}.default {d} is above the ceiling {c}");
        }
    }
    Ok(crate::policy::OptionalLimit { default, ceiling })
}

/// Parses one `filesystem.writable` entry: a path absolute and normalized, `$WORKDIR` or `$HOME`,
/// never a system path (nor a directory holding one). Sizes (`PATH=SIZE`) are gone: every writable
/// path shares the container's store (`limits.store`).
fn writable_entry(entry: &str) -> Result<crate::policy::WritablePath> {
    if let Some((path, _)) = entry.split_once('=') {
        bail!("filesystem.writable: {path}: a writable path has no size of its own any more: they all share the container's store, sized by limits.store");
    }
    let path = entry.trim();
    if path != crate::policy::WORKDIR && path != crate::policy::HOME {
        let pb = Path::new(path);
        let normal = pb.is_absolute()
            && pb
                .components()
                .skip(1)
                .all(|c| matches!(c, std::path::Component::Normal(_)))
            && !path.ends_with('/')
            && !path.contains("//")
            && !path.contains('\n');
        if !normal {
            bail!("filesystem.writable: {path:?} is not an absolute, normalized path, $WORKDIR or $HOME");
        }
        if crate::policy::is_system_path(pb) {
            bail!("filesystem.writable: {path} is a system path (or holds one), which can never be writable");
        }
    }
    Ok(crate::policy::WritablePath {
        path: path.to_string(),
    })
}

/// Reads the line and column of a byte offset in `text`.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rfind('\n').map(|i| offset - i).unwrap_or(offset + 1);
    (line, col)
}

/// The `[limits]` section into `p`: each limit within its hard bounds.
fn parse_limits(l: &LimitsSection, p: &mut Policy) -> Result<()> {
    let base = Policy::default();
    p.pids = limit("pids", &l.pids, base.pids, 1, bounds::PIDS_MAX)?;
    p.memory_bytes = limit(
        "memory",
        &l.memory,
        base.memory_bytes,
        bounds::MEMORY_MIN,
        bounds::MEMORY_MAX,
    )?;
    p.nofile = limit("nofile", &l.nofile, base.nofile, 16, bounds::NOFILE_MAX)?;
    p.tmpfs_bytes = limit(
        "tmpfs",
        &l.tmpfs,
        base.tmpfs_bytes,
        1 << 20,
        bounds::TMPFS_MAX,
    )?;
    p.store_bytes = limit(
        "store",
        &l.store,
        base.store_bytes,
        4 << 20,
        bounds::TMPFS_MAX,
    )?;
    p.ptys = limit("ptys", &l.ptys, base.ptys, 1, bounds::PTYS_MAX)?;
    if let Some(t) = &l.create_timeout {
        let secs = match t {
            Num::Int(v) => *v,
            Num::Text(s) => crate::duration::parse_duration(s)
                .map_err(|_| {
                    anyhow!("limits.create_timeout {s:?} is not a duration (e.g. \"60s\")")
                })?
                .as_secs(),
        };
        if secs == 0 || secs > bounds::CREATE_TIMEOUT_MAX {
            bail!(
                "limits.create_timeout {secs}s is outside the hard bounds 1..={}s",
                bounds::CREATE_TIMEOUT_MAX
            );
        }
        p.create_timeout_s = secs;
    }
    p.cpu_time_ms = optional_limit("cpu_time", &l.cpu_time, |n| match n {
        Num::Int(secs) => Ok(secs.saturating_mul(1000)),
        Num::Text(t) => crate::duration::parse_duration(t)
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
            .map_err(|_| anyhow!("limits.cpu_time {t:?} is not a duration (e.g. \"10s\")")),
    })?;
    p.file_size_bytes = optional_limit("file_size", &l.file_size, num)?;
    if let Some(d) = &l.disk {
        let f = Some(LimitFile {
            default: d.default.clone(),
            ceiling: d.ceiling.clone(),
        });
        p.disk_bytes = limit("disk", &f, base.disk_bytes, 1 << 20, bounds::DISK_MAX)?;
        p.disk_required = d.required;
    }
    Ok(())
}

/// Parses policy file text into a [`Policy`] (pure; errors name the line where the parser can).
pub fn parse(text: &str) -> Result<Policy> {
    let file: PolicyFile = toml::from_str(text).map_err(|e| {
        let at = e.span().map(|s| line_col(text, s.start));
        match at {
            Some((l, c)) => anyhow!("line {l}, column {c}: {}", e.message()),
            None => anyhow!("{}", e.message()),
        }
    })?;
    let mut p = Policy::default();
    if let Some(l) = &file.limits {
        parse_limits(l, &mut p)?;
    }
    if let Some(c) = file.capabilities.as_ref().and_then(|c| c.allowed.as_ref()) {
        p.capabilities = parse_capabilities(c)?;
    }
    if let Some(u) = &file.userns {
        parse_userns(u, &mut p)?;
    }
    if let Some(n) = &file.network {
        parse_network(n, &mut p)?;
    }
    if let Some(w) = file.mounts.as_ref().and_then(|m| m.writable_binds) {
        p.writable_binds = w;
    }
    if let Some(list) = file.filesystem.as_ref().and_then(|f| f.writable.as_ref()) {
        p.writable = list
            .iter()
            .map(|e| writable_entry(e))
            .collect::<Result<_>>()?;
    }
    if let Some(extra) = file
        .seccomp
        .as_ref()
        .and_then(|s| s.extra_syscalls.as_ref())
    {
        check_extra_syscalls(extra)?;
        p.extra_syscalls = extra.clone();
    }
    if let Some(d) = file.records.as_ref().and_then(|r| r.dir.clone()) {
        if !d.is_absolute() {
            bail!("records.dir must be an absolute path");
        }
        p.records_dir = Some(d);
    }
    if let Some(parent) = file.cgroups.as_ref().and_then(|c| c.parent.clone()) {
        p.cgroup_parent = cgroup_parent(&parent)?;
    }
    Ok(p)
}

/// `capabilities.allowed`: known capabilities (with or without `CAP_`), none of the forbidden
/// ones, without duplicates.
fn parse_capabilities(allowed: &[String]) -> Result<Vec<Capability>> {
    let mut caps = Vec::new();
    for name in allowed {
        let up = name.trim().to_ascii_uppercase();
        let cap: Capability = up
            .strip_prefix("CAP_")
            .unwrap_or(&up)
            .parse()
            .map_err(|_| anyhow!("capabilities.allowed: unknown capability {name:?}"))?;
        if FORBIDDEN_CAPABILITIES.contains(&cap) {
            bail!("capabilities.allowed: {name} can never be granted by rloxsc");
        }
        if !caps.contains(&cap) {
            caps.push(cap);
        }
    }
    Ok(caps)
}

/// The `[userns]` section into `p`: only the `auto` mode, and a pool of whole blocks within
/// 32-bit host ids.
fn parse_userns(u: &UsernsSection, p: &mut Policy) -> Result<()> {
    match u.mode.as_deref() {
        None | Some("auto") => {}
        Some("host") | Some("off") | Some("none") => bail!(
            "userns.mode {:?} is not possible: every container's root is an unprivileged host uid of its own",
            u.mode.as_deref().unwrap_or_default()
        ),
        Some(other) => bail!("userns.mode {other:?}: expected \"auto\""),
    }
    if let Some(pool) = &u.pool {
        let end = pool.start + pool.blocks * crate::policy::BLOCK as u64;
        if pool.start < crate::policy::BLOCK as u64 || pool.blocks == 0 || end > u32::MAX as u64 {
            bail!("userns.pool must lie within host ids 65536..2^32 and hold at least one block of 65536 ids");
        }
        if pool.start % crate::policy::BLOCK as u64 != 0 {
            bail!("userns.pool.start must be a multiple of 65536");
        }
        p.userns_pool = crate::policy::Pool {
            start: pool.start as u32,
            blocks: pool.blocks as u32,
        };
    }
    if u.idmapped_volumes.is_some() {
        bail!("userns.idmapped_volumes is no longer used: every bind is idmapped onto the owner of its directory (remove the setting)");
    }
    Ok(())
}

/// The `[network]` section into `p`: a mode other than `host`, and the egress allow list.
fn parse_network(n: &NetworkSection, p: &mut Policy) -> Result<()> {
    if let Some(m) = n.mode.as_deref() {
        p.network = match (m, NetworkMode::parse(m)) {
            (_, Some(mode)) => mode,
            ("host", None) => bail!("network.mode \"host\" is not possible: every container gets its own network namespace"),
            (other, None) => bail!("network.mode {other:?}: expected \"inbound-only\", \"loopback-only\" or \"namespace\""),
        };
    }
    if let Some(list) = n.egress_allow.as_ref() {
        p.egress_allow = list
            .iter()
            .map(|e| {
                crate::egress_rule::EgressRule::parse(e)
                    .map_err(|why| anyhow::anyhow!("{}: {why}", crate::policy::keys::EGRESS_ALLOW))
            })
            .collect::<Result<_>>()?;
    }
    Ok(())
}

/// `seccomp.extra_syscalls`: each a syscall libseccomp knows, none of those never allowed.
fn check_extra_syscalls(extra: &[String]) -> Result<()> {
    for name in extra {
        if crate::seccomp::allowlist::NEVER_ALLOWED.contains(&name.as_str()) {
            bail!("seccomp.extra_syscalls: {name} can never be allowed by rloxsc");
        }
        if libseccomp::ScmpSyscall::from_name(name).is_err() {
            bail!("seccomp.extra_syscalls: unknown syscall {name:?}");
        }
    }
    Ok(())
}

/// `cgroups.parent`, checked and without trailing slashes.
fn cgroup_parent(parent: &str) -> Result<String> {
    // no `.`/`..` (found by fuzz/: `/a/./b` was accepted, and its containers' cgroup paths were
    // then flattened by the next hardening) and not the root (`//` trimmed to nothing)
    let trimmed = parent.trim_end_matches('/');
    if !parent.starts_with('/')
        || parent.split('/').any(|c| c == ".." || c == ".")
        || trimmed.is_empty()
    {
        bail!("cgroups.parent must be an absolute cgroup path below the root, like /rloxsc");
    }
    Ok(trimmed.to_string())
}

/// Where the policy comes from: `--policy`, then `RLOXSC_POLICY`, then the default path.
pub fn locate(flag: Option<&Path>) -> (PathBuf, bool) {
    if let Some(p) = flag {
        return (p.to_path_buf(), true);
    }
    if let Some(p) = std::env::var_os("RLOXSC_POLICY").filter(|v| !v.is_empty()) {
        return (PathBuf::from(p), true);
    }
    (PathBuf::from(DEFAULT_PATH), false)
}

/// Loads the policy: the built-in defaults when no file is named and the default file is absent; an
/// error (naming the file and line) when the file cannot be read or is invalid.
pub fn load(flag: Option<&Path>) -> Result<(Policy, Option<PathBuf>)> {
    let (path, explicit) = locate(flag);
    // no file named and none at the default path: the built-in defaults (one lookup)
    if !explicit && !path.exists() {
        return Ok((Policy::default(), None));
    }
    // root's rloxsc reads a policy only a root could have written (a non-root rloxsc cannot widen
    // anything: it cannot create containers)
    // SAFETY: geteuid has no preconditions
    if unsafe { libc::geteuid() } == 0 {
        crate::trust::require_root_only(&path, "policy file")?;
    }
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            let p = parse(&text)
                .map_err(|e| anyhow!("invalid policy file {}: {e:#}", path.display()))?;
            Ok((p, Some(path)))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !explicit => {
            Ok((Policy::default(), None))
        }
        Err(e) => Err(anyhow!("cannot read policy file {}: {e}", path.display())),
    }
}

/// `s` as a TOML basic string: `"`, `\\` and every control character escaped (found by
/// fuzz/policy_toml: a `"` or `\\` in cgroups.parent broke the output, and could make it show settings
/// the policy does not have; toml's own writer panicked, with overflow checks, on 256 `'` in a row).
fn toml_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The policy as a policy file (for `rloxsc policy show`).
pub fn render(p: &Policy, source: Option<&Path>) -> String {
    let caps: Vec<String> = p
        .capabilities
        .iter()
        .map(|c| format!("\"CAP_{c}\""))
        .collect();
    let extra: Vec<String> = p.extra_syscalls.iter().map(|s| toml_string(s)).collect();
    let mut s = format!(
        "# effective rloxsc policy ({})\n[limits]\npids = {{ default = {}, ceiling = {} }}\nmemory = {{ default = {}, ceiling = {} }}\nnofile = {{ default = {}, ceiling = {} }}\ntmpfs = {{ default = {}, ceiling = {} }}\nstore = {{ default = {}, ceiling = {} }}\nptys = {{ default = {}, ceiling = {} }}\ncreate_timeout = {}\n\n[capabilities]\nallowed = [{}]\n\n[network]\nmode = \"{}\"\negress_allow = [{}]\n\n[mounts]\nwritable_binds = {}\n\n[filesystem]\nwritable = [{}]\n\n[seccomp]\nextra_syscalls = [{}]\n\n[cgroups]\nparent = {}\n\n[userns]\nmode = \"auto\"\npool = {{ start = {}, blocks = {} }}\n",
        source.map(|p| p.display().to_string().replace(['\n', '\r'], " ")).unwrap_or_else(|| "built-in defaults".into()),
        p.pids.default, p.pids.ceiling, p.memory_bytes.default, p.memory_bytes.ceiling, p.nofile.default, p.nofile.ceiling,
        p.tmpfs_bytes.default, p.tmpfs_bytes.ceiling, p.store_bytes.default, p.store_bytes.ceiling, p.ptys.default, p.ptys.ceiling, p.create_timeout_s, caps.join(", "), p.network.as_str(), p.egress_allow.iter().map(|e| toml_string(&e.to_string())).collect::<Vec<_>>().join(", "), p.writable_binds, p.writable.iter().map(|w| toml_string(&w.path)).collect::<Vec<_>>().join(", "), extra.join(", "), toml_string(&p.cgroup_parent), p.userns_pool.start, p.userns_pool.blocks,
    );
    let judge = |name: &str, l: &crate::policy::OptionalLimit, show: &dyn Fn(u64) -> String| {
        let parts: Vec<String> = [("default", l.default), ("ceiling", l.ceiling)]
            .iter()
            .filter_map(|(k, v)| v.map(|v| format!("{k} = {}", show(v))))
            .collect();
        (!parts.is_empty()).then(|| format!("{name} = {{ {} }}\n", parts.join(", ")))
    };
    let disk = format!(
        "disk = {{ default = {}, ceiling = {}, required = {} }}\n",
        p.disk_bytes.default, p.disk_bytes.ceiling, p.disk_required
    );
    let extra_limits: String = [
        judge("cpu_time", &p.cpu_time_ms, &|ms| format!("\"{ms}ms\"")),
        judge("file_size", &p.file_size_bytes, &|b| b.to_string()),
        Some(disk),
    ]
    .into_iter()
    .flatten()
    .collect();
    {
        // (still in [limits]: inserted after create_timeout)
        let at = s.find("\n\n[capabilities]").unwrap_or(s.len());
        s.insert_str(at + 1, &extra_limits);
    }
    if let Some(d) = &p.records_dir {
        s.push_str(&format!(
            "\n[records]\ndir = {}\n",
            toml_string(&d.display().to_string())
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_rendered_as_toml_reads_them_back() {
        for s in [
            "/rloxsc",
            "a\"b\\c",
            "line\nbreak\ttab\r\u{7f}\u{1}\u{85}é",
            &"'".repeat(300),
            &"\"".repeat(300),
        ] {
            let doc = format!("v = {}", toml_string(s));
            let back: toml::Table = toml::from_str(&doc).unwrap_or_else(|e| panic!("{doc:?}: {e}"));
            assert_eq!(back["v"].as_str(), Some(s), "{doc:?}");
        }
    }

    #[test]
    fn empty_file_is_the_default() {
        assert_eq!(parse("").unwrap(), Policy::default());
    }

    #[test]
    fn round_trip_of_the_rendered_policy() {
        let p = parse("[limits]\npids = { default = 100, ceiling = 200 }\nmemory = { default = \"64M\", ceiling = \"1G\" }\ncpu_time = { default = \"1.5s\", ceiling = 60 }\nfile_size = { ceiling = \"2M\" }\n[network]\nmode = \"namespace\"\negress_allow = [\"10.1.2.3:3128\", \"fd00::/64\"]\n[records]\ndir = \"/var/lib/rloxsc/records\"\n").unwrap();
        assert_eq!(
            p.pids,
            Limit {
                default: 100,
                ceiling: 200
            }
        );
        assert_eq!(p.memory_bytes.default, 64 << 20);
        assert_eq!(p.cpu_time_ms.value(), Some(1500));
        assert_eq!(p.cpu_time_ms.ceiling, Some(60_000));
        assert_eq!(p.file_size_bytes.value(), Some(2 << 20));
        assert!(parse("[limits]\nfile_size = { default = 0 }").is_err());
        assert!(parse("[limits]\ncpu_time = { default = \"2s\", ceiling = \"1s\" }").is_err());
        assert_eq!(p.network, NetworkMode::Namespace);
        assert_eq!(
            crate::egress_rule::format_list(&p.egress_allow),
            "10.1.2.3:3128,fd00::/64"
        );
        let again = parse(
            render(&p, None)
                .lines()
                .filter(|l| !l.starts_with('#'))
                .collect::<Vec<_>>()
                .join("\n")
                .as_str(),
        )
        .unwrap();
        assert_eq!(again, p);
    }

    // Regression (found by fuzz/policy_toml): strings were rendered without TOML escaping.
    #[test]
    fn round_trip_with_quotes_and_backslashes() {
        let p = parse(
            r#"[cgroups]
parent = "/a\\b\"\n[network]\nmode = \"namespace\""
[records]
dir = "/r\"\\"
"#,
        )
        .unwrap();
        assert_eq!(p.network, NetworkMode::InboundOnly);
        let shown = render(&p, Some(Path::new("/etc/x\n[network]")));
        assert_eq!(parse(&shown).unwrap(), p, "{shown}");
    }

    #[test]
    fn out_of_bounds_and_forbidden_values_are_refused() {
        for bad in [
            "[limits]\npids = { ceiling = 0 }",
            "[limits]\npids = { ceiling = 1000000 }",
            "[limits]\nmemory = { ceiling = \"1T\" }",
            "[limits]\npids = { default = 5000, ceiling = 4096 }",
            "[capabilities]\nallowed = [\"CAP_SYS_ADMIN\"]",
            "[network]\nmode = \"host\"",
            "[seccomp]\nextra_syscalls = [\"mount\"]",
            "[seccomp]\nextra_syscalls = [\"no_such_call\"]",
            "[cgroups]\nparent = \"relative\"",
            "[cgroups]\nparent = \"/a/./b\"",
            "[cgroups]\nparent = \"/a/../b\"",
            "[cgroups]\nparent = \"//\"",
            "[records]\ndir = \"relative\"",
        ] {
            assert!(parse(bad).is_err(), "{bad} should be refused");
        }
    }

    #[test]
    fn syntax_errors_and_unknown_keys_name_the_line() {
        let e = parse("[limits]\n\npids = { default = }\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 3"), "{e}");
        let e = parse("[limits]\nprocs = 5\n").unwrap_err().to_string();
        assert!(e.contains("line 2") && e.contains("procs"), "{e}");
        let e = parse("[root]\nwritable = true\n").unwrap_err().to_string();
        assert!(e.contains("line 1"), "{e}");
    }

    #[test]
    fn explicit_missing_file_is_an_error_default_missing_is_not() {
        assert!(load(Some(Path::new("/nonexistent/policy.toml"))).is_err());
    }

    #[test]
    fn writable_paths_share_the_store_and_are_never_system_paths() {
        let p = parse("[filesystem]\nwritable = [\"$WORKDIR\", \"$HOME\", \"/data\"]\n[limits]\nstore = { default = \"32M\" }\n").unwrap();
        assert_eq!(p.writable.len(), 3);
        assert_eq!(p.store_bytes.default, 32 << 20);
        let e = parse("[filesystem]\nwritable = [\"/tmp=64M\"]\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("limits.store"), "{e}");
        assert!(
            parse("[limits]\nstore = { default = \"1M\" }\n").is_err(),
            "a store under 4 MiB"
        );
        for bad in [
            "/var",
            "/var/lib",
            "/usr/local",
            "/etc",
            "/",
            "relative",
            "/a/../etc",
            "/tmp=2G",
            "/tmp=10k",
            "/lib64/x",
        ] {
            let text = format!("[filesystem]\nwritable = [{:?}]\n", bad);
            assert!(parse(&text).is_err(), "{bad} accepted");
        }
    }
}
