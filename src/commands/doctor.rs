//! `doctor`: checks the host for what rloxsc needs and prints what holds and what to fix.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::Result;

/// One check's outcome.
struct Check {
    ok: bool,
    what: String,
    fix: Option<String>,
    /// A warning or a note: printed, never counted as something to fix.
    advice: Option<Advice>,
}

/// How a line that is not a failure is marked, and what it suggests.
struct Advice {
    mark: &'static str,
    hint: Option<String>,
}

fn check(ok: bool, what: impl Into<String>, fix: impl Into<String>) -> Check {
    Check {
        ok,
        what: what.into(),
        fix: (!ok).then(|| fix.into()),
        advice: None,
    }
}

/// Something worth knowing that does not stop rloxsc: `[warn]` with a hint, never a failure.
fn warn(what: impl Into<String>, hint: impl Into<String>) -> Check {
    Check {
        ok: true,
        what: what.into(),
        fix: None,
        advice: Some(Advice {
            mark: "warn",
            hint: Some(hint.into()),
        }),
    }
}

/// A fact about the host, for information: `[info]`.
fn info(what: impl Into<String>) -> Check {
    Check {
        ok: true,
        what: what.into(),
        fix: None,
        advice: Some(Advice {
            mark: "info",
            hint: None,
        }),
    }
}

/// The cgroup v1 controllers libcgroups looks for on every create; it warns about each one the host
/// has not mounted (rloxsc drops those warnings from its log and reports them here, once).
const LIBCGROUPS_V1: &[(libcgroups::v1::ControllerType, &str)] = {
    use libcgroups::v1::ControllerType as C;
    &[
        (C::Cpu, "cpu"),
        (C::CpuAcct, "cpuacct"),
        (C::CpuSet, "cpuset"),
        (C::Devices, "devices"),
        (C::HugeTlb, "hugetlb"),
        (C::Memory, "memory"),
        (C::Pids, "pids"),
        (C::PerfEvent, "perf_event"),
        (C::Blkio, "blkio"),
        (C::NetworkPriority, "net_prio"),
        (C::NetworkClassifier, "net_cls"),
        (C::Freezer, "freezer"),
    ]
};

/// The cgroup v2 controllers libcgroups implements; it warns about any other the host offers.
const LIBCGROUPS_V2: &[&str] = &["cpu", "cpuset", "hugetlb", "io", "memory", "pids"];

/// The line about controllers the host lacks (v1) or libcgroups ignores (v2), if any.
fn unused_controllers(v2: bool) -> Option<Check> {
    let names: Vec<String> = if v2 {
        std::fs::read_to_string("/sys/fs/cgroup/cgroup.controllers")
            .unwrap_or_default()
            .split_whitespace()
            .filter(|c| !LIBCGROUPS_V2.contains(c))
            .map(str::to_string)
            .collect()
    } else {
        LIBCGROUPS_V1
            .iter()
            .filter(|(c, _)| libcgroups::v1::util::get_subsystem_mount_point(c).is_err())
            .map(|(_, n)| n.to_string())
            .collect()
    };
    (!names.is_empty()).then(|| {
        info(if v2 {
            format!(
                "v2 controllers libcgroups does not implement (not used; rloxsc does not need them): {}",
                names.join(", ")
            )
        } else {
            format!(
                "v1 controllers not mounted (not used; rloxsc does not need them): {}",
                names.join(", ")
            )
        })
    })
}

/// Where Podman reads containers.conf, lowest precedence first (containers.conf(5)); with
/// `CONTAINERS_CONF` set, only that file.
fn podman_conf_files() -> Vec<PathBuf> {
    if let Some(p) = std::env::var_os("CONTAINERS_CONF") {
        return vec![PathBuf::from(p)];
    }
    let mut files = vec![
        PathBuf::from("/usr/share/containers/containers.conf"),
        PathBuf::from("/etc/containers/containers.conf"),
    ];
    if let Ok(rd) = std::fs::read_dir("/etc/containers/containers.conf.d") {
        let mut drop_ins: Vec<PathBuf> = rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "conf"))
            .collect();
        drop_ins.sort();
        files.extend(drop_ins);
    }
    files
}

/// The `runtime = "..."` of the `[engine]` table of a containers.conf text, if set (a simple parse:
/// a table header line, then `key = "value"` lines; comments and other tables ignored).
fn engine_runtime(text: &str) -> Option<String> {
    let mut in_engine = false;
    let mut found = None;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_engine = line.trim_end_matches(|c: char| c != ']') == "[engine]";
            continue;
        }
        if !in_engine || line.starts_with('#') {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        if key.trim() != "runtime" {
            continue;
        }
        let value = value.trim();
        let quoted = value
            .strip_prefix('"')
            .and_then(|v| v.split_once('"'))
            .or_else(|| value.strip_prefix('\'').and_then(|v| v.split_once('\'')));
        if let Some((v, _)) = quoted {
            found = Some(v.to_string());
        }
    }
    found
}

/// Whether `name` is an executable file in a directory of `PATH`.
fn on_path(name: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|d| {
            std::fs::metadata(d.join(name))
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
    })
}

/// Podman's default runtime, which its REST API uses whatever runtime a client asks for.
fn podman_check() -> Option<Check> {
    if !on_path("podman") {
        return None;
    }
    let mut runtime = None;
    for f in podman_conf_files() {
        // only the files themselves are read: no includes, no paths they name
        if let Ok(text) = std::fs::read_to_string(&f) {
            if let Some(r) = engine_runtime(&text) {
                runtime = Some((r, f));
            }
        }
    }
    const HOW: &str = "Podman's REST API (docker-py, llm-sandbox on the podman socket) ignores a \
        per-container runtime and uses this default (podman issue 28429); set [engine] runtime = \
        \"rloxsc\" in containers.conf (contrib/podman/containers.conf) to send those containers to \
        rloxsc. Check a container: `podman inspect --format '{{.OCIRuntime}}' <ctr>` says rloxsc, \
        `rloxsc list` lists it, and its init has `Seccomp: 2` in /proc/<pid>/status";
    Some(match runtime {
        Some((r, f)) if r == "rloxsc" || r.ends_with("/rloxsc") => check(
            true,
            format!("Podman's default runtime is rloxsc ({})", f.display()),
            "",
        ),
        Some((r, f)) => warn(
            format!("Podman's default runtime is {r:?} ({}), not rloxsc", f.display()),
            HOW,
        ),
        None => warn(
            "Podman's default runtime is its built-in one (no [engine] runtime in containers.conf), not rloxsc",
            HOW,
        ),
    })
}

/// The oldest kernel the matrix runs (tests/matrix: Debian 11's 5.10).
const OLDEST_TESTED: (u32, u32) = (5, 10);

/// The doctor's line for a kernel feature: available, or what will not work and which kernel has it.
fn feature_check(p: &crate::kernel_features::Probe) -> Check {
    let how = match p.method {
        crate::kernel_features::Method::Tried => "tried",
        crate::kernel_features::Method::ByVersion => "by kernel version",
    };
    match &p.available {
        Ok(()) => check(
            true,
            format!("{} ({}+): available ({how})", p.feature.name, p.since()),
            "",
        ),
        Err(e) => {
            let what = format!(
                "{} ({}+): not available ({how}: {e})",
                p.feature.name,
                p.since()
            );
            let fix = format!(
                "will not work: {} (policy key {}); {} or newer has it",
                p.feature.used_for,
                p.feature.key,
                p.since()
            );
            if p.feature.required {
                check(false, what, fix)
            } else {
                warn(what, fix)
            }
        }
    }
}

/// `limits.disk` on this host: for every client's storage directory present, whether a project quota
/// can bound what a container writes into a client's layer there (a warning where not; a failure
/// where the policy requires the bound).
fn disk_bounds() -> Vec<Check> {
    let required = crate::policy_file::load(None).is_ok_and(|(p, _)| p.disk_required);
    let fix = "ext4: tune2fs -O quota,project and mount with prjquota; XFS: mount with pquota; a caller may also send root.readonly: true (the writes are then the container's bounded scratch)";
    crate::limits::disk::clients_storage()
        .into_iter()
        .map(|(dir, why)| match why {
            None => info(format!(
                "limits.disk: {} enforces project quotas: containers' writes into a client's layer there are bounded",
                dir.display()
            )),
            Some(cause) => {
                let what = format!(
                    "limits.disk: {}: {cause}: a client's layer there is as large as its filesystem, as under runc",
                    dir.display()
                );
                if required {
                    check(false, what, format!("the policy requires the bound (required = true): {fix}"))
                } else {
                    warn(what, fix)
                }
            }
        })
        .collect()
}

/// The cgroup layout and the controllers rloxsc needs in it.
fn cgroup_checks() -> Vec<Check> {
    let mut out = Vec::new();
    let setup = libcgroups::common::get_cgroup_setup();
    let cg = match &setup {
        Ok(libcgroups::common::CgroupSetup::Unified) => "cgroup v2 (unified)",
        Ok(libcgroups::common::CgroupSetup::Hybrid) => "cgroup v1 (hybrid)",
        Ok(libcgroups::common::CgroupSetup::Legacy) => "cgroup v1 (legacy)",
        Err(_) => "unknown",
    };
    out.push(check(
        setup.is_ok(),
        format!("cgroups: {cg}"),
        "mount cgroupfs under /sys/fs/cgroup",
    ));
    let needed = ["memory", "pids", "cpu", "devices", "freezer"];
    match setup {
        Ok(libcgroups::common::CgroupSetup::Unified) => {
            let have =
                std::fs::read_to_string("/sys/fs/cgroup/cgroup.controllers").unwrap_or_default();
            for c in ["memory", "pids", "cpu"] {
                out.push(check(
                    have.split_whitespace().any(|x| x == c),
                    format!("v2 controller {c}"),
                    format!("enable {c} in /sys/fs/cgroup/cgroup.subtree_control"),
                ));
            }
            out.push(check(
                true,
                "v2 devices: enforced with an eBPF program (built in)",
                "",
            ));
            out.extend(unused_controllers(true));
        }
        Ok(_) => {
            for c in needed {
                out.push(check(
                    Path::new("/sys/fs/cgroup").join(c).is_dir(),
                    format!("v1 controller {c}"),
                    format!("mount the {c} controller at /sys/fs/cgroup/{c}"),
                ));
            }
            out.push(check(Path::new("/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes").exists(), "v1 swap accounting (memory.memsw)", "boot with swapaccount=1: rloxsc limits memory+swap and refuses to create containers without it"));
            out.extend(unused_controllers(false));
        }
        Err(_) => {}
    }
    out
}

/// Runs every check; returns 0 when all hold, 1 otherwise.
pub fn doctor(fix: bool) -> Result<i32> {
    if fix {
        apply_subid_fixes()?;
    }
    let mut checks = Vec::new();
    checks.extend(rootless_check());
    checks.push(kernel_version_check());
    checks.extend(cgroup_checks());
    checks.push(systemd_driver_check());
    checks.extend(disk_bounds());
    checks.extend(seccomp_checks());
    checks.extend(namespace_checks());
    checks.extend(
        crate::kernel_features::probe_all()
            .iter()
            .map(feature_check),
    );
    checks.push(egress_filter_check());
    checks.push(root_check());
    checks.extend(containerd_checks());
    checks.extend(podman_check());
    checks.extend(subids_check());
    Ok(print_report(&checks))
}

/// `--fix`: adds Podman's `containers` ranges to /etc/subuid and /etc/subgid, and says so.
fn apply_subid_fixes() -> Result<()> {
    for f in crate::subids::fix()? {
        println!(
            "[fixed] {f}: containers:{}:{} added (Podman's userns = \"auto\")",
            crate::subids::START,
            crate::subids::COUNT
        );
    }
    Ok(())
}

/// A failure when rloxsc runs rootless, with the reason it would refuse.
fn rootless_check() -> Option<Check> {
    // run as an ordinary user (or in rootless Podman's user namespace): what rloxsc would refuse
    crate::rootless::reason().map(|why| {
        check(
            false,
            format!("rootless: {why}"),
            crate::rootless::refusal(&why),
        )
    })
}

/// Whether the running kernel is at least the oldest one rloxsc is tested on.
fn kernel_version_check() -> Check {
    let kernel = crate::kernel_features::running_release();
    let major_minor = crate::kernel_features::running_version();
    check(
        major_minor >= OLDEST_TESTED,
        format!("kernel {kernel}"),
        format!(
            "rloxsc is tested on Linux {}.{} and newer (tests/matrix); older kernels lack features it uses (below)",
            OLDEST_TESTED.0, OLDEST_TESTED.1
        ),
    )
}

/// Whether the systemd cgroup driver is usable here (information, or a warning when it is not).
fn systemd_driver_check() -> Check {
    // the systemd cgroup driver (--systemd-cgroup): Docker's default on systemd hosts with cgroup v2
    match crate::cgroups::placement::systemd_driver_unavailable() {
        None => info("systemd cgroup driver (--systemd-cgroup): available"),
        Some(why) => warn(
            format!("systemd cgroup driver (--systemd-cgroup): not available: {why}"),
            "clients must use the cgroupfs driver here (Docker: \"exec-opts\": [\"native.cgroupdriver=cgroupfs\"]); rloxsc refuses --systemd-cgroup",
        ),
    }
}

/// The kernel's seccomp filter actions, and the filter compiled into this binary.
fn seccomp_checks() -> Vec<Check> {
    let actions =
        std::fs::read_to_string("/proc/sys/kernel/seccomp/actions_avail").unwrap_or_default();
    let mut checks = vec![check(
        actions.contains("errno") && actions.contains("kill_process"),
        "seccomp filters (errno, kill_process)",
        "a kernel with CONFIG_SECCOMP_FILTER",
    )];
    let filter = crate::seccomp::precompiled();
    checks.push(check(
        !filter.bpf.is_empty(),
        format!(
            "seccomp compiled into this binary ({} BPF instructions)",
            filter.instructions()
        ),
        "rebuild rloxsc; a binary without seccomp cannot be built",
    ));
    checks
}

/// The namespace types rloxsc unshares, and user namespaces being allowed.
fn namespace_checks() -> Vec<Check> {
    let mut checks = Vec::new();
    for ns in ["pid", "mnt", "net", "ipc", "uts", "cgroup"] {
        checks.push(check(
            Path::new("/proc/self/ns").join(ns).exists(),
            format!("{ns} namespaces"),
            format!("a kernel with {ns} namespaces"),
        ));
    }
    let max_userns = std::fs::read_to_string("/proc/sys/user/max_user_namespaces")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .unwrap_or(0);
    checks.push(check(
        max_userns > 0,
        format!("user namespaces (user.max_user_namespaces = {max_userns})"),
        "set user.max_user_namespaces above 0: every rloxsc container's root is a host uid of its own (policy key userns.mode)",
    ));
    checks
}

/// Whether the egress filter installs and reads back in a scratch network namespace.
fn egress_filter_check() -> Check {
    let egress = crate::network::probe_filter();
    check(
        egress.is_ok(),
        match &egress {
            Ok(()) => "the egress filter (nf_tables inet, conntrack, reject) installs and reads back in a network namespace".to_string(),
            Err(e) => format!("the egress filter cannot be installed: {e}"),
        },
        "a kernel with nf_tables (CONFIG_NF_TABLES, NF_TABLES_INET, NFT_CT, NFT_REJECT_INET) or their modules: network.mode = \"inbound-only\", the default, refuses every create without it",
    )
}

/// Whether doctor runs as root, as creating containers needs.
fn root_check() -> Check {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    check(root, "running as root", "rloxsc creates containers as root")
}

/// Whether containerd's configuration names rloxsc (printing a note on its bypasses when it does).
fn containerd_checks() -> Vec<Check> {
    let mut checks = Vec::new();
    // containerd: BinaryName is bypassed for features and with user namespaces
    for cfg in ["/etc/containerd/config.toml"] {
        if let Ok(text) = std::fs::read_to_string(cfg) {
            let uses = text.contains("rloxsc");
            checks.push(check(
                true,
                format!(
                    "{cfg} {} rloxsc",
                    if uses { "names" } else { "does not name" }
                ),
                "",
            ));
            if uses {
                println!("note: containerd runs plain runc instead of BinaryName for `features` and when a pod uses user namespaces (containerd issues 10249, 11169, 11480); check a pod's init: rloxsc always gives it Seccomp: 2 and lists it in `rloxsc --root /run/containerd/runc/k8s.io list`");
            }
        }
    }
    checks
}

/// Prints each check with its fix or hint, then the totals; returns 0 when nothing is to fix, 1
/// otherwise.
fn print_report(checks: &[Check]) -> i32 {
    let mut failed = 0;
    for c in checks {
        let mark = match &c.advice {
            Some(a) => a.mark,
            None if c.ok => " ok ",
            None => "FAIL",
        };
        println!("[{mark}] {}", c.what);
        if let Some(f) = &c.fix {
            println!("       fix: {f}");
            failed += 1;
        }
        if let Some(h) = c.advice.as_ref().and_then(|a| a.hint.as_ref()) {
            println!("       hint: {h}");
        }
    }
    let warnings = checks
        .iter()
        .filter(|c| c.advice.as_ref().is_some_and(|a| a.mark == "warn"))
        .count();
    if warnings == 0 {
        println!("{} checks, {} to fix", checks.len(), failed);
    } else {
        println!(
            "{} checks, {} to fix, {} warning(s)",
            checks.len(),
            failed,
            warnings
        );
    }
    if failed == 0 {
        0
    } else {
        1
    }
}

/// Podman's `userns = "auto"` (contrib/podman/containers.conf) takes container mappings from the
/// `containers` ranges of /etc/subuid and /etc/subgid; rloxsc's own pool must lie outside them.
fn subids_check() -> Vec<Check> {
    let pool = crate::userns::Pool::default();
    crate::subids::FILES
        .iter()
        .map(|f| match crate::subids::read(Path::new(f)) {
            Ok(Some(r)) if crate::subids::overlaps_pool(r, &pool) => check(
                false,
                format!("{f}: containers:{}:{} overlaps rloxsc's user-namespace pool", r.0, r.1),
                format!("give the user containers a range below {} (rloxsc doctor --fix adds containers:{}:{} when there is none)", pool.start, crate::subids::START, crate::subids::COUNT),
            ),
            Ok(Some(r)) => check(true, format!("{f}: containers:{}:{} (Podman's userns = \"auto\")", r.0, r.1), ""),
            Ok(None) => check(
                true,
                format!("{f}: no range for the user containers (needed only for Podman's userns = \"auto\", which rloxsc refuses under Podman 4.3; rloxsc doctor --fix adds one)"),
                "",
            ),
            Err(e) => check(false, format!("{f}: {e:#}"), "make it readable by root"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_runtime_is_read_from_the_engine_table_only() {
        let conf = r#"
[containers]
runtime = "not-this"
[engine]
cgroup_manager = "cgroupfs"
# runtime = "commented"
runtime = "rloxsc"   # the default
[engine.runtimes]
runtime = "not-this-either"
rloxsc = ["/usr/local/bin/rloxsc"]
"#;
        assert_eq!(engine_runtime(conf).as_deref(), Some("rloxsc"));
        assert_eq!(
            engine_runtime("[engine]\nruntime='runc'\n").as_deref(),
            Some("runc")
        );
        assert_eq!(
            engine_runtime("[engine] # x\n  runtime = \"crun\"").as_deref(),
            Some("crun")
        );
        assert_eq!(engine_runtime("[engine]\n#runtime = \"crun\"\n"), None);
        assert_eq!(engine_runtime("runtime = \"runc\"\n[engine]\n"), None);
    }
}
