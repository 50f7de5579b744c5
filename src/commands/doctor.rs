//! `doctor`: checks the host for what rloxsc needs and prints what holds and what to fix.

use std::path::Path;

use anyhow::Result;

/// One check's outcome.
struct Check {
    ok: bool,
    what: String,
    fix: Option<String>,
}

fn check(ok: bool, what: impl Into<String>, fix: impl Into<String>) -> Check {
    Check {
        ok,
        what: what.into(),
        fix: (!ok).then(|| fix.into()),
    }
}

/// Runs every check; returns 0 when all hold, 1 otherwise.
pub fn doctor() -> Result<i32> {
    let mut checks = Vec::new();
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let kernel = kernel.trim();
    let major_minor: (u32, u32) = {
        let mut it = kernel
            .split(|c: char| !c.is_ascii_digit())
            .filter_map(|s| s.parse().ok());
        (it.next().unwrap_or(0), it.next().unwrap_or(0))
    };
    checks.push(check(
        major_minor >= (5, 8),
        format!("kernel {kernel}"),
        "rloxsc needs Linux 5.8 or newer (fsopen, pidfd, SECCOMP_RET_KILL_PROCESS)",
    ));

    let setup = libcgroups::common::get_cgroup_setup();
    let cg = match &setup {
        Ok(libcgroups::common::CgroupSetup::Unified) => "cgroup v2 (unified)",
        Ok(libcgroups::common::CgroupSetup::Hybrid) => "cgroup v1 (hybrid)",
        Ok(libcgroups::common::CgroupSetup::Legacy) => "cgroup v1 (legacy)",
        Err(_) => "unknown",
    };
    checks.push(check(
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
                checks.push(check(
                    have.split_whitespace().any(|x| x == c),
                    format!("v2 controller {c}"),
                    format!("enable {c} in /sys/fs/cgroup/cgroup.subtree_control"),
                ));
            }
            checks.push(check(
                true,
                "v2 devices: enforced with an eBPF program (built in)",
                "",
            ));
        }
        Ok(_) => {
            for c in needed {
                checks.push(check(
                    Path::new("/sys/fs/cgroup").join(c).is_dir(),
                    format!("v1 controller {c}"),
                    format!("mount the {c} controller at /sys/fs/cgroup/{c}"),
                ));
            }
            checks.push(check(Path::new("/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes").exists(), "v1 swap accounting (memory.memsw)", "boot with swapaccount=1: rloxsc limits memory+swap and refuses to create containers without it"));
        }
        Err(_) => {}
    }

    let actions =
        std::fs::read_to_string("/proc/sys/kernel/seccomp/actions_avail").unwrap_or_default();
    checks.push(check(
        actions.contains("errno") && actions.contains("kill_process"),
        "seccomp filters (errno, kill_process)",
        "a kernel with CONFIG_SECCOMP_FILTER",
    ));
    let filter = crate::seccomp::precompiled();
    checks.push(check(
        !filter.bpf.is_empty(),
        format!(
            "seccomp compiled into this binary ({} BPF instructions)",
            filter.instructions()
        ),
        "rebuild rloxsc; a binary without seccomp cannot be built",
    ));
    for ns in ["pid", "mnt", "net", "ipc", "uts", "cgroup"] {
        checks.push(check(
            Path::new("/proc/self/ns").join(ns).exists(),
            format!("{ns} namespaces"),
            format!("a kernel with {ns} namespaces"),
        ));
    }
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    checks.push(check(
        root,
        "running as root",
        "rloxsc creates containers as root",
    ));

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

    let mut failed = 0;
    for c in &checks {
        println!("[{}] {}", if c.ok { " ok " } else { "FAIL" }, c.what);
        if let Some(f) = &c.fix {
            println!("       fix: {f}");
            failed += 1;
        }
    }
    println!("{} checks, {} to fix", checks.len(), failed);
    Ok(if failed == 0 { 0 } else { 1 })
}
