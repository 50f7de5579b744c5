//! `exec`: an exec'd process gets exactly the init's containment, checked from inside and outside.

mod common;

use common::*;

/// Masks of capabilities rloxsc may grant (see policy.rs): CHOWN, DAC_OVERRIDE, FOWNER, FSETID, KILL,
/// SETGID, SETUID, SETPCAP, NET_BIND_SERVICE, AUDIT_WRITE, SETFCAP.
const ALLOWED_MASK: u64 = (1 << 0)
    | (1 << 1)
    | (1 << 3)
    | (1 << 4)
    | (1 << 5)
    | (1 << 6)
    | (1 << 7)
    | (1 << 8)
    | (1 << 10)
    | (1 << 29)
    | (1 << 31);

fn careless_running(env: &TestEnv) -> Running {
    env.start_container(&careless_spec(Some(LONG_LIVED)))
}

#[test]
fn exec_runs_with_seccomp_no_new_privs_and_clamped_caps() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("exec-inside");
    let c = careless_running(&env);
    let out = env.rloxsc(&[
        "exec",
        &c.id,
        "sh",
        "-c",
        "cat /proc/self/status; if unshare -U true 2>/dev/null; then echo userns=allowed; else echo userns=denied; fi; \
         if touch /probe 2>/dev/null; then echo root=writable; else echo root=readonly; fi; exit 3",
    ]);
    assert_eq!(out.code, 3, "exit status of the exec'd process: {out}");
    assert_eq!(
        status_field(&out.stdout, "Seccomp").as_deref(),
        Some("2"),
        "{out}"
    );
    assert_eq!(
        status_field(&out.stdout, "NoNewPrivs").as_deref(),
        Some("1"),
        "{out}"
    );
    for set in ["CapEff", "CapPrm", "CapBnd", "CapInh", "CapAmb"] {
        let v = status_field(&out.stdout, set).unwrap_or_else(|| panic!("{set}: {out}"));
        assert_eq!(
            u64::from_str_radix(&v, 16).unwrap() & !ALLOWED_MASK,
            0,
            "{set} {v}"
        );
    }
    assert!(out.stdout.contains("userns=denied"), "{out}");
    assert!(out.stdout.contains("root=readonly"), "{out}");
}

#[test]
fn exec_keeps_the_callers_seccomp_profile_too() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("exec-stacked");
    let mut spec = careless_spec(Some(LONG_LIVED));
    spec["linux"]["seccomp"] = serde_json::json!({
        "defaultAction": "SCMP_ACT_ALLOW",
        "architectures": ["SCMP_ARCH_X86_64"],
        "syscalls": [{"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO", "errnoRet": 13}]
    });
    let c = env.start_container(&spec);
    let out = env.rloxsc(&[
        "exec",
        &c.id,
        "sh",
        "-c",
        "grep Seccomp_filters /proc/self/status; if mkdir /tmp/d 2>/dev/null; then echo mkdir=allowed; else echo mkdir=denied; fi",
    ]);
    out.expect_ok();
    assert_eq!(
        // the caller's profile, then rloxsc's two programs (the allowlist and the ioctl guard)
        status_field(&out.stdout, "Seccomp_filters").as_deref(),
        Some("3"),
        "{out}"
    );
    assert!(out.stdout.contains("mkdir=denied"), "{out}");
}

/// `exec --detach --pid-file` of `sleep 30` into `c`: the exec'd process's pid.
fn exec_detached_sleep(env: &TestEnv, c: &Running) -> i32 {
    let pid_file = c.bundle.join("exec.pid");
    env.rloxsc(&[
        "exec",
        "--detach",
        "--pid-file",
        pid_file.to_str().unwrap(),
        &c.id,
        "sleep",
        "30",
    ])
    .expect_ok();
    read_trimmed(&pid_file).parse().expect("pid in pid file")
}

#[test]
fn exec_detached_is_contained_from_outside() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("exec-detach");
    let c = careless_running(&env);
    let pid = exec_detached_sleep(&env, &c);
    let status =
        std::fs::read_to_string(format!("/proc/{pid}/status")).expect("exec'd process alive");
    assert_eq!(status_field(&status, "Seccomp").as_deref(), Some("2"));
    assert_eq!(status_field(&status, "NoNewPrivs").as_deref(), Some("1"));
    for ns in ["pid", "mnt", "net", "ipc", "uts", "cgroup"] {
        assert_eq!(
            ns_id(format!("/proc/{pid}/ns/{ns}")),
            ns_id(format!("/proc/{}/ns/{ns}", c.pid)),
            "{ns} namespace of the exec'd process"
        );
    }
    let cg = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap();
    assert!(
        cg.lines()
            .any(|l| l.contains(":pids:") && l.ends_with(&c.id)),
        "not in the container's cgroup: {cg}"
    );
}

#[test]
fn exec_cap_beyond_the_policy_is_refused() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("exec-cap");
    let c = careless_running(&env);
    for cap in ["CAP_SYS_ADMIN", "SYS_PTRACE", "CAP_NET_RAW"] {
        let out = env.rloxsc(&["exec", "--cap", cap, &c.id, "true"]);
        assert_ne!(out.code, 0, "{out}");
        assert!(out.stderr.contains("capabilities.allowed"), "{out}");
    }
    // an allowed one is accepted
    env.rloxsc(&["exec", "--cap", "CAP_KILL", &c.id, "true"])
        .expect_ok();
}

#[test]
fn exec_process_file_is_hardened() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("exec-process");
    let c = careless_running(&env);
    let all = [
        "CAP_SYS_ADMIN",
        "CAP_SYS_PTRACE",
        "CAP_NET_ADMIN",
        "CAP_CHOWN",
    ];
    let process = serde_json::json!({
        "args": ["sh", "-c", "cat /proc/self/status"],
        "cwd": "/",
        "env": ["PATH=/bin"],
        "user": {"uid": 0, "gid": 0},
        "noNewPrivileges": false,
        "capabilities": {"bounding": all, "effective": all, "permitted": all, "inheritable": all, "ambient": all}
    });
    let file = c.bundle.join("process.json");
    std::fs::write(&file, process.to_string()).unwrap();
    let out = env.rloxsc(&["exec", "--process", file.to_str().unwrap(), &c.id]);
    out.expect_ok();
    assert_eq!(
        status_field(&out.stdout, "NoNewPrivs").as_deref(),
        Some("1"),
        "{out}"
    );
    for set in ["CapEff", "CapPrm", "CapBnd", "CapInh", "CapAmb"] {
        let v = status_field(&out.stdout, set).unwrap();
        assert_eq!(
            u64::from_str_radix(&v, 16).unwrap() & !ALLOWED_MASK,
            0,
            "{set} {v}"
        );
    }
}

#[test]
fn exec_of_a_missing_binary_says_so_and_env_cwd_user_apply() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("exec-misc");
    let c = careless_running(&env);
    let out = env.rloxsc(&["exec", &c.id, "no-such-program"]);
    assert_ne!(out.code, 0);
    assert!(out.stderr.contains("executable file not found"), "{out}");
    let out = env.rloxsc(&[
        "exec",
        "--env",
        "FOO=bar",
        "--cwd",
        "/tmp",
        "--user",
        "65534:65534",
        &c.id,
        "sh",
        "-c",
        "echo $FOO; pwd; id -u; id -g",
    ]);
    out.expect_ok();
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines, ["bar", "/tmp", "65534", "65534"], "{out}");
}

/// Exec into a container that is dying (its init killed a moment before) or stopped fails with
/// runc's words, "cannot exec in a stopped container" (issue #32, 6: a dying one answered "Internal
/// error ... please report this procfs bug", a stopped one "it is stopped").
#[test]
fn exec_into_a_stopped_or_unknown_container_fails() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("exec-stopped");
    let out = env.rloxsc(&["exec", "no-such-container", "true"]);
    assert!(out.stderr.contains("does not exist"), "{out}");
    let c = careless_running(&env);
    env.rloxsc(&["kill", &c.id, "KILL"]).expect_ok();
    // dying: no wait between the kill and the exec
    let out = env.rloxsc(&["exec", &c.id, "true"]);
    assert_ne!(out.code, 0, "{out}");
    assert!(
        out.stderr.contains("cannot exec in a stopped container"),
        "{out}"
    );
    assert!(env.wait_for_status(&c.id, "stopped", std::time::Duration::from_secs(5)));
    let out = env.rloxsc(&["exec", &c.id, "true"]);
    assert_ne!(out.code, 0, "{out}");
    assert!(
        out.stderr.contains("cannot exec in a stopped container"),
        "{out}"
    );
}

// Issue #32 (4): `exec --cgroup` of a sub-cgroup that does not exist made it (runc refuses: the
// sub-cgroup is joined, never created), and `delete -f` then waited 10 s and left the container's
// cgroup directories behind. Now refused with runc's words; nothing is made; delete leaves nothing.
#[test]
fn exec_into_a_missing_sub_cgroup_is_refused_and_nothing_is_made() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("exec-subcg");
    let c = careless_running(&env);
    for arg in ["nonexistent", "pids:nonexistent"] {
        let out = env.rloxsc(&["exec", "--cgroup", arg, &c.id, "true"]);
        assert!(!out.ok(), "{arg}: {out}");
        assert_error(
            &out,
            &["adding pid", "nonexistent/cgroup.procs: no such file"],
        );
    }
    for d in cgroup_dirs_of(&c.id) {
        assert!(!d.join("nonexistent").exists(), "made {}", d.display());
    }
    let id = c.id.clone();
    drop(c);
    env.assert_nothing_left(&id, "after delete");
}

// Issue #32 (5): on a hybrid host the init and exec'd processes stayed in their creator's cgroups of
// the `name=systemd` and cgroup2 hierarchies (systemd counted them to the caller's unit, and stopping
// that unit killed them); runc places them in the container's cgroup there too. Every line of the
// host's /proc/<pid>/cgroup, on any host (v1, hybrid, v2), names the container's cgroup.
#[test]
fn init_and_exec_are_in_the_containers_cgroup_in_every_hierarchy() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("exec-hier");
    let c = careless_running(&env);
    let exec_pid = exec_detached_sleep(&env, &c);
    let hybrid = ["systemd", "unified"]
        .iter()
        .all(|h| std::path::Path::new("/sys/fs/cgroup").join(h).is_dir());
    for (what, pid) in [("init", c.pid), ("exec'd", exec_pid)] {
        let cg = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap();
        for line in cg.lines() {
            assert!(
                line.ends_with(&format!("/{}", c.id)),
                "the {what} process is outside the container's cgroup in {line:?} (hybrid host: {hybrid}):\n{cg}"
            );
        }
        if hybrid {
            assert!(cg.lines().any(|l| l.starts_with("0::")), "{cg}");
            assert!(cg.contains(":name=systemd:"), "{cg}");
        }
    }
    let id = c.id.clone();
    drop(c);
    env.assert_nothing_left(&id, "after delete");
}
