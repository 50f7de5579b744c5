//! `run --record` and `--timeout`: every status is provoked for real and read from the kernel.

mod common;

use common::*;
use serde_json::Value;

fn run_recorded(
    env: &TestEnv,
    args: &[&str],
    resources: Option<Value>,
    extra: &[&str],
) -> (Outcome, Value) {
    let mut spec = base_spec(args);
    if let Some(r) = resources {
        spec["linux"]["resources"] = r;
    }
    let bundle = env.bundle(&spec);
    let id = env.id();
    let _g = env.guard(&id);
    let rec = bundle.join("record.json");
    let mut argv = vec!["run", "--record", rec.to_str().unwrap()];
    argv.extend_from_slice(extra);
    argv.extend_from_slice(&["--bundle", bundle.to_str().unwrap(), &id]);
    let out = env.rloxsc(&argv);
    let data = std::fs::read_to_string(&rec).unwrap_or_else(|e| panic!("no record ({e}): {out}"));
    let v: Value =
        serde_json::from_str(&data).unwrap_or_else(|e| panic!("record is not JSON ({e}): {data}"));
    env.assert_nothing_left(&id, "recorded run");
    (out, v)
}

#[test]
fn clean_exit_is_ok() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("rec-ok");
    let (out, v) = run_recorded(&env, &["true"], None, &[]);
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(v["status"], "ok", "{v}");
    assert_eq!(v["exit_code"], 0);
    assert!(v["signal"].is_null());
    assert_eq!(v["limits"]["pids"], 512);
    assert_eq!(v["limits"]["memory_bytes"], 512i64 << 20);
    assert!(v["wall_time_s"].as_f64().unwrap() > 0.0);
    assert!(
        v["tightenings"].as_array().is_some_and(|t| !t.is_empty()),
        "{v}"
    );
    assert!(v["cgroup"] == "v1" || v["cgroup"] == "v2");
}

#[test]
fn nonzero_exit_is_nonzero() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("rec-nonzero");
    let (out, v) = run_recorded(&env, &["sh", "-c", "exit 3"], None, &[]);
    assert_eq!(out.code, 3);
    assert_eq!(v["status"], "nonzero", "{v}");
    assert_eq!(v["exit_code"], 3);
}

#[test]
fn memory_hog_is_oom_killed() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("rec-oom");
    let (out, v) = run_recorded(
        &env,
        &["sh", "-c", "x=a; while true; do x=$x$x; done"],
        Some(serde_json::json!({"memory": {"limit": 33554432}})),
        &[],
    );
    assert_eq!(out.code, 137, "{out}");
    assert_eq!(v["status"], "oom_killed", "{v}");
    assert_eq!(v["oom_killed"], true);
    assert_eq!(v["signal"], 9);
    assert!(v["peak_memory_bytes"].as_u64().unwrap() >= 16 << 20, "{v}");
}

#[test]
fn fork_bomb_shows_the_pids_limit_hit() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("rec-pids");
    let (_out, v) = run_recorded(
        &env,
        &["sh", "-c", "for i in $(seq 100); do sleep 5 & done; wait"],
        Some(serde_json::json!({"pids": {"limit": 20}})),
        &[],
    );
    assert_eq!(v["status"], "pids_limit_hit", "{v}");
    assert_eq!(v["pids_limit_hit"], true);
    assert_eq!(v["limits"]["pids"], 20);
}

#[test]
fn sleep_past_the_timeout_is_timed_out_and_keeps_its_output() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("rec-timeout");
    let (out, v) = run_recorded(
        &env,
        &["sh", "-c", "echo before-timeout; sleep 60 & sleep 60"],
        None,
        &["--timeout", "1s"],
    );
    assert_eq!(out.code, 124, "{out}");
    assert!(out.stdout.contains("before-timeout"), "output lost: {out}");
    assert_eq!(v["status"], "timed_out", "{v}");
    assert_eq!(v["timed_out"], true);
    let wall = v["wall_time_s"].as_f64().unwrap();
    assert!((1.0..10.0).contains(&wall), "{v}");
}

#[test]
fn record_and_timeout_refuse_detach() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("rec-detach");
    let bundle = env.bundle(&base_spec(&["true"]));
    let id = env.id();
    let out = env.rloxsc(&[
        "run",
        "--detach",
        "--timeout",
        "1s",
        "--bundle",
        bundle.to_str().unwrap(),
        &id,
    ]);
    assert_error(&out, &["foreground"]);
    env.assert_nothing_left(&id, "refused detached timeout");
}
