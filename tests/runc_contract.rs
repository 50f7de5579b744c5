//! runc's command-line contract, one behaviour per test, each found by runc's own integration suite
//! (`make bats`) and checked here on the built binary: exec's exit status and exec into a created
//! container, `kill ID 0`, `ps` rows and `ps` of a stopped container, the events envelope's key
//! order, `run --keep`, a failing startContainer hook named, a read-only `/dev`, and a frozen cgroup
//! refused at once.

mod common;

use std::time::{Duration, Instant};

use common::*;
use serde_json::json;

fn sleeper() -> serde_json::Value {
    base_spec(&["sleep", "300"])
}

#[test]
fn exec_fails_with_255_and_runs_in_a_created_container_and_without_a_user() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("contract-exec");
    let c = env.start_container(&sleeper());
    // the process's own status passes through; exec's own failures are 255
    assert_eq!(env.rloxsc(&["exec", &c.id, "false"]).code, 1);
    let out = env.rloxsc(&["exec", &c.id, "no-such-binary"]);
    assert_eq!(out.code, 255, "{out}");
    let out = env.rloxsc(&["exec", "no-such-container", "true"]);
    assert_eq!(out.code, 255, "{out}");
    // a process.json without `user` runs as uid and gid 0, as under runc
    let p = env.dir.join("process.json");
    std::fs::write(
        &p,
        r#"{"args":["sh","-c","id -u; id -g"],"cwd":"/","env":["PATH=/bin:/usr/bin"]}"#,
    )
    .unwrap();
    let out = env.rloxsc(&["exec", "--process", p.to_str().unwrap(), &c.id]);
    out.expect_ok();
    assert_eq!(out.stdout.lines().collect::<Vec<_>>(), ["0", "0"], "{out}");

    // exec into a created container; it stays created, and starts afterwards
    let id = env.id();
    let _g = env.guard(&id);
    let b = env.bundle(&sleeper());
    env.create(&b, &id).expect_ok();
    env.rloxsc(&["exec", &id, "true"]).expect_ok();
    assert_eq!(env.status(&id).as_deref(), Some("created"));
    env.rloxsc(&["start", &id]).expect_ok();
    assert_eq!(env.status(&id).as_deref(), Some("running"));
}

#[test]
fn kill_0_ps_and_events_speak_runcs_contract() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("contract-verbs");
    let c = env.start_container(&sleeper());
    // kill 0 is a liveness probe
    env.rloxsc(&["kill", &c.id, "0"]).expect_ok();
    // ps with BSD-style options still lists the container's processes (they run as its own host
    // ids, which procps' `x` would otherwise leave out)
    let out = env.rloxsc(&["ps", &c.id, "-e", "-x"]);
    out.expect_ok();
    let mut lines = out.stdout.lines();
    assert!(lines.next().unwrap_or("").contains("PID"), "{out}");
    assert!(
        lines.any(|l| l.split_whitespace().next() == Some(&c.pid.to_string())),
        "no row for the init {}: {out}",
        c.pid
    );
    // events: runc's envelope, keys in runc's order
    let out = env.rloxsc(&["events", "--stats", &c.id]);
    out.expect_ok();
    let want = format!(r#"{{"type":"stats","id":"{}","data":"#, c.id);
    assert!(out.stdout.starts_with(&want), "{out}");

    // a stopped container: ps prints the header and succeeds, kill --all 0 succeeds
    env.rloxsc(&["kill", &c.id, "KILL"]).expect_ok();
    assert!(env.wait_for_status(&c.id, "stopped", Duration::from_secs(10)));
    let out = env.rloxsc(&["ps", &c.id]);
    out.expect_ok();
    assert_eq!(out.stdout.lines().count(), 1, "{out}");
    assert!(out.stdout.contains("PID"), "{out}");
    let out = env.rloxsc(&["ps", "--format", "json", &c.id]);
    out.expect_ok();
    assert_eq!(out.stdout.trim(), "[]", "{out}");
    env.rloxsc(&["kill", "--all", &c.id, "0"]).expect_ok();
}

#[test]
fn run_keep_leaves_the_stopped_container_until_delete() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("contract-keep");
    let id = env.id();
    let _g = env.guard(&id);
    let b = env.bundle(&base_spec(&["true"]));
    env.rloxsc(&["run", "--keep", "--bundle", b.to_str().unwrap(), &id])
        .expect_ok();
    assert_eq!(env.status(&id).as_deref(), Some("stopped"));
    env.rloxsc(&["delete", &id]).expect_ok();
    assert!(env.state(&id).is_none());
    env.assert_nothing_left(&id, "run --keep, then delete");
}

#[test]
fn a_failing_start_container_hook_is_named() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("contract-hook");
    let mut spec = base_spec(&["true"]);
    spec["hooks"] = json!({"startContainer": [
        {"path": "/bin/true"},
        {"path": "/bin/sh", "args": ["sh", "-c", "exit 3"]}
    ]});
    let out = env.run_spec(&spec);
    assert_ne!(out.code, 0, "{out}");
    assert!(
        out.stderr
            .contains("error running hook #1: hook command exited with non-zero exit code: 3"),
        "{out}"
    );
}

#[test]
fn a_read_only_dev_is_read_only() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("contract-ro-dev");
    let mut spec = base_spec(&[
        "sh",
        "-c",
        "grep '^tmpfs /dev ' /proc/mounts; touch /dev/x && echo WRITABLE",
    ]);
    let mounts = spec["mounts"].as_array_mut().unwrap();
    for m in mounts.iter_mut() {
        if m["destination"] == "/dev" {
            m["options"].as_array_mut().unwrap().push(json!("ro"));
        }
    }
    let out = env.run_spec(&spec);
    assert!(!out.stdout.contains("WRITABLE"), "/dev is writable: {out}");
    assert!(out.stdout.starts_with("tmpfs /dev tmpfs ro,"), "{out}");
}

#[test]
fn create_in_a_frozen_cgroup_is_refused_at_once_and_leaves_nothing() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let freezer = std::path::Path::new("/sys/fs/cgroup/freezer");
    if !freezer.join("cgroup.procs").exists() {
        // pure cgroup v2: the same check reads cgroup.freeze (src/cgroups.rs unit test)
        eprintln!("SKIPPED (no v1 freezer hierarchy here)");
        return;
    }
    let env = TestEnv::new("contract-frozen");
    let parent = format!("rloxsc-it-frozen-{}", std::process::id());
    let dir = freezer.join(&parent).join("ct");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("freezer.state"), "FROZEN").unwrap();
    let mut spec = sleeper();
    spec["linux"]["cgroupsPath"] = json!(format!("/{parent}/ct"));
    let id = env.id();
    let b = env.bundle(&spec);
    let t0 = Instant::now();
    let out = env.rloxsc(&["run", "-d", "--bundle", b.to_str().unwrap(), &id]);
    let took = t0.elapsed();
    let _ = std::fs::write(dir.join("freezer.state"), "THAWED");
    env.rloxsc(&["delete", "--force", &id]);
    let _ = std::fs::remove_dir(&dir);
    let _ = std::fs::remove_dir(freezer.join(&parent));
    assert_error(&out, &["container's cgroup unexpectedly frozen"]);
    assert!(took < Duration::from_secs(10), "took {took:?}");
    assert!(env.state(&id).is_none(), "the refused container exists");
    env.assert_nothing_left(&id, "create into a frozen cgroup");
}
