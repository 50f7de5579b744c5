//! The policy file, `policy show|check`, annotations and `doctor`, through the binary.

mod common;

use common::*;

fn write(env: &TestEnv, name: &str, text: &str) -> std::path::PathBuf {
    let p = env.bundle(&base_spec(&["true"])).join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn policy_show_round_trips() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("pol-show");
    let f = write(&env, "p.toml", "[limits]\npids = { default = 100, ceiling = 200 }\nmemory = { default = \"64M\", ceiling = \"1G\" }\n[network]\nmode = \"namespace\"\n");
    let shown = env.rloxsc(&["--policy", f.to_str().unwrap(), "policy", "show"]);
    shown.expect_ok();
    let f2 = write(&env, "p2.toml", &shown.stdout);
    let again = env.rloxsc(&["--policy", f2.to_str().unwrap(), "policy", "show"]);
    again.expect_ok();
    let body = |s: &str| {
        s.lines()
            .filter(|l| !l.starts_with('#'))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(body(&shown.stdout), body(&again.stdout));
    assert!(
        shown
            .stdout
            .contains("pids = { default = 100, ceiling = 200 }"),
        "{shown}"
    );
}

#[test]
fn invalid_policy_refuses_to_run_anything_naming_file_and_line() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("pol-bad");
    let bundle = env.bundle(&base_spec(&["true"]));
    for (text, phrase) in [
        ("[limits]\n\npids = { default = }\n", "line 3"),
        (
            "[limits]\npids = { ceiling = 0 }\n",
            "unlimited is never allowed",
        ),
        (
            "[capabilities]\nallowed = [\"CAP_SYS_ADMIN\"]\n",
            "can never be granted",
        ),
        ("[network]\nmode = \"host\"\n", "own network namespace"),
        (
            "[seccomp]\nextra_syscalls = [\"mount\"]\n",
            "can never be allowed",
        ),
    ] {
        let f = bundle.join("policy.toml");
        std::fs::write(&f, text).unwrap();
        let id = env.id();
        let out = env.rloxsc(&[
            "--policy",
            f.to_str().unwrap(),
            "run",
            "--bundle",
            bundle.to_str().unwrap(),
            &id,
        ]);
        assert_error(&out, &[phrase, f.to_str().unwrap()]);
        env.assert_nothing_left(&id, "run under an invalid policy");
    }
    let out = env.rloxsc(&[
        "--policy",
        "/nonexistent/policy.toml",
        "run",
        "--bundle",
        bundle.to_str().unwrap(),
        "x",
    ]);
    assert_error(&out, &["cannot read policy file"]);
}

#[test]
fn policy_limits_and_annotations_apply() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("pol-limits");
    let f = write(
        &env,
        "p.toml",
        "[limits]\npids = { default = 64, ceiling = 128 }\n",
    );
    let read_pids = "cat /sys/fs/cgroup/pids/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids.max";
    let bundle = env.bundle(&base_spec(&["sh", "-c", read_pids]));
    let id = env.id();
    let _g = env.guard(&id);
    let out = env.rloxsc(&[
        "--policy",
        f.to_str().unwrap(),
        "run",
        "--bundle",
        bundle.to_str().unwrap(),
        &id,
    ]);
    out.expect_ok();
    assert_eq!(out.stdout.trim(), "64", "{out}");

    let mut spec = base_spec(&["sh", "-c", read_pids]);
    spec["annotations"] =
        serde_json::json!({"run.rloxsc.pids": "32", "run.rloxsc.network": "host"});
    let bundle = env.bundle(&spec);
    let id = env.id();
    let _g2 = env.guard(&id);
    let out = env.rloxsc(&["run", "--bundle", bundle.to_str().unwrap(), &id]);
    out.expect_ok();
    assert_eq!(out.stdout.trim(), "32", "annotation tightening: {out}");
}

#[test]
fn policy_check_reports_changes_and_refusals_without_creating_anything() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("pol-check");
    let out = env.rloxsc(&["policy", "check", careless_config_path().to_str().unwrap()]);
    assert_eq!(out.code, 0, "{out}");
    assert!(
        out.stdout.contains("change: ") && out.stdout.contains("capabilities.allowed"),
        "{out}"
    );
    let mut spec = base_spec(&["true"]);
    spec["mounts"] = serde_json::json!([{"destination": "/host", "type": "bind", "source": "/", "options": ["rbind"]}]);
    let bundle = env.bundle(&spec);
    let out = env.rloxsc(&["policy", "check", bundle.to_str().unwrap()]);
    assert_eq!(out.code, 1, "{out}");
    assert!(
        out.stdout.contains("refuse: ") && out.stdout.contains("mounts.sensitive_sources"),
        "{out}"
    );
}

#[test]
fn doctor_finds_this_host_fit() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("doctor");
    let out = env.rloxsc(&["doctor"]);
    assert_eq!(out.code, 0, "{out}");
    assert!(
        out.stdout.contains("seccomp compiled into this binary"),
        "{out}"
    );
    assert!(out.stdout.contains("cgroups: cgroup v"), "{out}");
}

#[test]
fn records_dir_gets_a_record_at_delete_for_client_driven_containers() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("pol-records");
    let mut spec = base_spec(&["sh", "-c", "x=a; while true; do x=$x$x; done"]);
    spec["linux"]["resources"] = serde_json::json!({"memory": {"limit": 33554432}});
    let bundle = env.bundle(&spec);
    let records = bundle.join("records");
    let pol = bundle.join("p.toml");
    std::fs::write(
        &pol,
        format!("[records]\ndir = \"{}\"\n", records.display()),
    )
    .unwrap();
    let p = pol.to_str().unwrap();
    let id = env.id();
    let _g = env.guard(&id);
    // as a client does: create, start, wait for the end, delete
    env.rloxsc(&[
        "--policy",
        p,
        "create",
        "--bundle",
        bundle.to_str().unwrap(),
        &id,
    ])
    .expect_ok();
    env.rloxsc(&["--policy", p, "start", &id]).expect_ok();
    assert!(env.wait_for_status(&id, "stopped", std::time::Duration::from_secs(10)));
    env.rloxsc(&["--policy", p, "delete", &id]).expect_ok();
    let rec: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(records.join(format!("{id}.json"))).expect("record written"),
    )
    .unwrap();
    assert_eq!(rec["status"], "oom_killed", "{rec}");
    assert!(rec["exit_code"].is_null());
    assert_eq!(rec["limits"]["memory_bytes"], 33554432);
}

// Regression (found by the conformance run): the plain nosuid/nodev/ro that rloxsc adds to a bind
// reached its top mount only; an rbind's submounts, or `rsuid,rdev,rrw`, stayed suid, dev and writable.
#[test]
fn rbind_submounts_get_the_bind_hardening() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("rbind-sub");
    let src = env.dir.join("vol");
    std::fs::create_dir_all(src.join("sub")).unwrap();
    let tmpfs_ok = std::process::Command::new("mount")
        .args([
            "-t",
            "tmpfs",
            "-o",
            "size=1m",
            "rloxsc-test",
            src.join("sub").to_str().unwrap(),
        ])
        .status()
        .unwrap()
        .success();
    assert!(tmpfs_ok, "cannot mount the test's tmpfs");
    struct Unmount(std::path::PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg(&self.0).status();
        }
    }
    let _u = Unmount(src.join("sub"));
    let mut spec = base_spec(&[
        "sh",
        "-c",
        "grep ' /data' /proc/self/mountinfo; touch /data/sub/x && echo WROTE-SUB; touch /data/x && echo WROTE-TOP; true",
    ]);
    spec["mounts"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({
            "destination": "/data", "type": "bind", "source": src.to_str().unwrap(),
            "options": ["rbind", "rw", "rsuid", "rdev", "rrw"]
        }));
    let f = write(&env, "p.toml", "[mounts]\nwritable_binds = false\n");
    let bundle = env.bundle(&spec);
    let id = env.id();
    let _g = env.guard(&id);
    let out = env.rloxsc(&[
        "--policy",
        f.to_str().unwrap(),
        "run",
        "--bundle",
        bundle.to_str().unwrap(),
        &id,
    ]);
    out.expect_ok();
    let lines: Vec<&str> = out
        .stdout
        .lines()
        .filter(|l| l.contains(" /data"))
        .collect();
    assert!(
        lines.iter().any(|l| l.contains(" /data/sub ")),
        "submount not visible: {out}"
    );
    for l in &lines {
        let opts = l.split_whitespace().nth(5).unwrap_or("");
        for want in ["ro", "nosuid", "nodev"] {
            assert!(opts.split(',').any(|o| o == want), "{want} missing: {l}");
        }
    }
    assert!(
        !out.stdout.contains("WROTE"),
        "a read-only bind was writable: {out}"
    );
    assert!(!src.join("sub/x").exists() && !src.join("x").exists());
}

/// Unmounts a mount the test made on the host, even when the test fails.
struct HostMount(std::path::PathBuf);

impl Drop for HostMount {
    fn drop(&mut self) {
        let _ = nix::mount::umount2(&self.0, nix::mount::MntFlags::MNT_DETACH);
    }
}

// Issue #32 (2): a read-only bind (`rbind,ro`) of a host directory with a mount below it could not
// start: the plain `ro` reaches the bind's top only, the submount stayed writable, and rloxsc's own
// verification removed the container ("lacks ro inside the container"; runc's mounts_recursive.bats,
// critest's non-recursive read-only mount). It starts now, read-only down to the submount (`rro`
// added: runc would leave the submount writable), under the default policy and under
// `writable_binds = false` alike.
#[test]
fn a_read_only_bind_with_a_submount_starts_read_only_to_the_bottom() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("pol-rbind-ro");
    let src = env.dir.join("rbind-src");
    let sub = src.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    nix::mount::mount(
        Some("tmpfs"),
        &sub,
        Some("tmpfs"),
        nix::mount::MsFlags::MS_NOSUID | nix::mount::MsFlags::MS_NODEV,
        Some("size=1m"),
    )
    .expect("a tmpfs below the bind's source");
    let _unmount = HostMount(sub.clone());
    let mut spec = base_spec(&[
        "sh",
        "-c",
        "touch /data/top 2>/dev/null && echo top-rw || echo top-ro; \
         touch /data/sub/x 2>/dev/null && echo sub-rw || echo sub-ro",
    ]);
    spec["mounts"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({
            "destination": "/data", "type": "bind", "source": src.to_str().unwrap(),
            "options": ["rbind", "ro"]
        }));
    let out = env.run_spec(&spec);
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(out.stdout, "top-ro\nsub-ro\n", "{out}");

    let f = write(&env, "p.toml", "[mounts]\nwritable_binds = false\n");
    let out = env.run_spec_with_policy(&spec, &f);
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(out.stdout, "top-ro\nsub-ro\n", "{out}");
}
