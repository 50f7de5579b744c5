//! The judge limits (`limits.cpu_time`, `limits.file_size`): provoked for real, judged from outside
//! (the cgroup's CPU counter, /proc/<pid>/limits, file sizes) and by the run record.

mod common;

use std::time::Duration;

use common::*;
use serde_json::Value;

/// Eight workers that spin forever (the shell waits for them).
const EIGHT_BUSY: &[&str] = &[
    "sh",
    "-c",
    "for i in 1 2 3 4 5 6 7 8; do (while :; do :; done) & done; wait",
];

fn run_recorded(env: &TestEnv, spec: &Value, extra: &[&str]) -> (Outcome, Value) {
    let bundle = env.bundle(spec);
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
    assert!(
        watchdogs(&id).is_empty(),
        "a CPU-time watchdog outlived its container: {:?}",
        watchdogs(&id)
    );
    (out, v)
}

/// Live CPU-time watchdogs of container `id` (argv[0] rloxsc-cpu-watch, the id last).
fn watchdogs(id: &str) -> Vec<i32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let last = cmd.split(|b| *b == 0).rfind(|a| !a.is_empty());
        if cmd.starts_with(b"rloxsc-cpu-watch\0") && last == Some(id.as_bytes()) {
            out.push(pid);
        }
    }
    out
}

/// The CPU time of the whole container, from the cgroup's precise counter (the record's `cpu_s`).
fn cpu_used(v: &Value) -> f64 {
    v["cpu_s"].as_f64().unwrap()
}

#[test]
fn eight_busy_workers_end_cpu_time_exceeded_within_the_limit() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("lim-cpu");
    let (out, v) = run_recorded(
        &env,
        &base_spec(EIGHT_BUSY),
        &["--cpu-time", "1s", "--timeout", "60s"],
    );
    assert_eq!(out.code, 137, "{out}");
    assert_eq!(v["status"], "cpu_time_exceeded", "{v}");
    assert_eq!(v["limits"]["cpu_time_s"], 1.0, "{v}");
    let used = cpu_used(&v);
    assert!(
        (0.9..=1.05).contains(&used),
        "CPU time used in all: {used} s: {v}"
    );
    assert!(v["wall_time_s"].as_f64().unwrap() < 30.0, "{v}");
}

#[test]
fn the_cpu_time_annotation_alone_limits_a_created_container() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("lim-cpu-ann");
    // through `run`
    let mut spec = base_spec(EIGHT_BUSY);
    spec["annotations"] = serde_json::json!({"run.rloxsc.cpu_time": "1s"});
    let (out, v) = run_recorded(&env, &spec, &["--timeout", "60s"]);
    assert_eq!(out.code, 137, "{out}");
    assert_eq!(v["status"], "cpu_time_exceeded", "{v}");
    assert!(cpu_used(&v) <= 1.05, "{v}");
    // through create and start, as a client drives it: the container ends by itself, its cgroup's
    // counter says how much CPU it had
    let r = env.start_container(&spec);
    assert!(
        env.wait_for_status(&r.id, "stopped", Duration::from_secs(30)),
        "the container still runs after its CPU time: {:?}",
        env.state(&r.id)
    );
    let usage: u64 = cgroup_dirs_of(&r.id)
        .iter()
        .find(|d| d.join("cpuacct.usage").exists() || d.join("cpu.stat").exists())
        .map(|d| {
            let v1 = d.join("cpuacct.usage");
            if v1.exists() {
                read_trimmed(v1).parse().unwrap()
            } else {
                let s = read_trimmed(d.join("cpu.stat"));
                let us: u64 = s
                    .lines()
                    .find_map(|l| l.strip_prefix("usage_usec "))
                    .unwrap()
                    .parse()
                    .unwrap();
                us * 1000
            }
        })
        .expect("the container's cgroup");
    assert!(
        (900_000_000..=1_050_000_000).contains(&usage),
        "CPU time of the container: {usage} ns"
    );
    let verdict = read_trimmed(env.root.join("containers").join(&r.id).join("cpu-time"));
    assert!(verdict.starts_with("exceeded"), "{verdict}");
    assert!(watchdogs(&r.id).is_empty(), "{:?}", watchdogs(&r.id));
    env.rloxsc(&["delete", &r.id]).expect_ok();
}

#[test]
fn a_run_within_its_cpu_time_is_ok_and_leaves_no_watchdog() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("lim-cpu-ok");
    let (out, v) = run_recorded(
        &env,
        &base_spec(&["sh", "-c", "echo fine"]),
        &["--cpu-time", "5s"],
    );
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(v["status"], "ok", "{v}");
    assert_eq!(v["limits"]["cpu_time_s"], 5.0, "{v}");
    // an annotation asking for more than the flag gave does not loosen it
    let mut spec = base_spec(&["true"]);
    spec["annotations"] = serde_json::json!({"run.rloxsc.cpu_time": "1h"});
    let (_, v) = run_recorded(&env, &spec, &["--cpu-time", "2s"]);
    assert_eq!(v["limits"]["cpu_time_s"], 2.0, "{v}");
}

#[test]
fn a_write_past_the_file_size_limit_leaves_no_bigger_file() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("lim-fsize");
    let spec = base_spec(&[
        "sh",
        "-c",
        "dd if=/dev/zero of=/tmp/big bs=1M count=5 2>/dev/null; echo size=$(wc -c </tmp/big)",
    ]);
    let (out, v) = run_recorded(&env, &spec, &["--file-size", "2M"]);
    assert!(out.stdout.contains("size=2097152"), "{out}");
    assert_eq!(v["limits"]["file_size_bytes"], 2u64 << 20, "{v}");
    // without the limit the same write is whole (the test can fail)
    let (out, v) = run_recorded(&env, &spec, &[]);
    assert!(out.stdout.contains("size=5242880"), "{out}");
    assert!(v["limits"]["file_size_bytes"].is_null(), "{v}");
}

#[test]
fn exec_gets_the_file_size_limit_and_the_init_has_it_from_outside() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("lim-fsize-exec");
    let mut spec = base_spec(&["sleep", "60"]);
    spec["annotations"] = serde_json::json!({"run.rloxsc.file_size": "1M"});
    let r = env.start_container(&spec);
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", r.pid)).unwrap();
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max file size"))
        .unwrap();
    assert!(
        line.split_whitespace().filter(|w| *w == "1048576").count() == 2,
        "{line}"
    );
    let out = env.rloxsc(&[
        "exec",
        &r.id,
        "sh",
        "-c",
        "dd if=/dev/zero of=/tmp/e bs=1M count=3 2>/dev/null; wc -c </tmp/e",
    ]);
    assert_eq!(out.stdout.trim(), "1048576", "{out}");
    // an exec'd process asking for more gets the container's limit
    let proc_file = env.dir.join("process.json");
    std::fs::write(
        &proc_file,
        serde_json::to_vec(&serde_json::json!({
            "args": ["sh", "-c", "grep 'Max file size' /proc/self/limits"],
            "cwd": "/",
            "env": ["PATH=/bin:/usr/bin"],
            "rlimits": [{"type": "RLIMIT_FSIZE", "soft": 1u64 << 40, "hard": 1u64 << 40}]
        }))
        .unwrap(),
    )
    .unwrap();
    let out = env.rloxsc(&["exec", "--process", proc_file.to_str().unwrap(), &r.id]);
    assert!(
        out.stdout
            .split_whitespace()
            .filter(|w| *w == "1048576")
            .count()
            == 2,
        "{out}"
    );
}

#[test]
fn an_output_flood_ends_output_limit_exceeded_and_the_caller_gets_at_most_the_limit() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("lim-output");
    let (out, v) = run_recorded(
        &env,
        &base_spec(&["yes"]),
        &["--output", "1M", "--timeout", "60s"],
    );
    assert_eq!(out.code, 137, "{}", out.stderr);
    assert_eq!(v["status"], "output_limit_exceeded", "{v}");
    assert_eq!(v["limits"]["output_bytes"], 1u64 << 20, "{v}");
    assert_eq!(out.stdout.len(), 1 << 20, "bytes the caller received");
    // stderr counts too, and what stays under the limit arrives whole, each stream on its own
    let (out, v) = run_recorded(
        &env,
        &base_spec(&["sh", "-c", "echo to-out; echo to-err >&2; exit 3"]),
        &["--output", "1M"],
    );
    assert_eq!(out.code, 3, "{out}");
    assert_eq!(out.stdout, "to-out\n");
    assert!(out.stderr.contains("to-err"), "{out}");
    assert_eq!(v["status"], "nonzero", "{v}");
    let (out, v) = run_recorded(
        &env,
        &base_spec(&["sh", "-c", "yes e >&2"]),
        &["--output", "4K"],
    );
    assert_eq!(v["status"], "output_limit_exceeded", "{v}");
    assert!(
        out.stderr.matches("e\n").count() <= 2048,
        "{}",
        out.stderr.len()
    );
}

/// `limits.disk` (issue #28): what bounds the bytes a container writes is said by the run record,
/// and where no project quota can bound the client's layer, a policy that requires the bound is a
/// refusal naming the key. On a filesystem that enforces project quotas (the matrix's scratch disk:
/// tests/matrix `contained-disk-quota`, where the write past the limit fails) the same run is
/// bounded, and this test checks that instead. Failed against 5ff6370 (no `disk` in the record;
/// the required annotation ignored).
#[test]
fn the_record_says_what_bounds_the_disk_and_a_required_bound_is_refused_where_none_can_be() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("disk-bound");
    let root = OverlayRoot::new(&env);
    let mut spec = base_spec(&[
        "sh",
        "-c",
        "dd if=/dev/zero of=/tmp/big bs=1M count=3 2>/dev/null; echo rc=$?",
    ]);
    spec["root"]["path"] = serde_json::json!(root.merged);
    spec["root"]["readonly"] = serde_json::json!(false);
    spec["annotations"] = serde_json::json!({"run.rloxsc.disk": "2M"});
    let (out, rec) = run_recorded(&env, &spec, &[]);
    let said = rec["limits"]["disk"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let big = std::fs::metadata(root.upper.join("tmp/big")).map_or(0, |m| m.len());
    if said.starts_with("a project quota of 2 MiB") {
        assert_eq!(rec["limits"]["disk_bytes"], 2 << 20, "{rec}");
        assert!(big <= 2 << 20, "{big} bytes written past the quota: {out}");
        return;
    }
    assert!(
        said.starts_with("unbounded: ") && said.contains("quota"),
        "the record does not say what bounds the disk: {rec}"
    );
    assert_eq!(rec["limits"]["disk_bytes"], Value::Null, "{rec}");
    assert_eq!(big, 3 << 20, "unbounded, as under runc: {out}");
    // the same container where the policy requires the bound: refused, nothing run or left
    std::fs::remove_file(root.upper.join("tmp/big")).unwrap();
    spec["annotations"] =
        serde_json::json!({"run.rloxsc.disk": "2M", "run.rloxsc.disk_required": "true"});
    let id = env.id();
    let bundle = env.bundle(&spec);
    let _g = env.guard(&id);
    let out = env.rloxsc(&["run", "--bundle", bundle.to_str().unwrap(), &id]);
    assert_error_names_one_of(&out, &["limits.disk"]);
    assert!(out.stderr.contains("project quota"), "{out}");
    assert!(!root.upper.join("tmp/big").exists(), "it ran: {out}");
    env.assert_nothing_left(&id, "refused create");
    // scratch (root.readonly): the store bounds it, and the record says so
    spec["root"]["readonly"] = serde_json::json!(true);
    spec["annotations"] = serde_json::json!({});
    let (_, rec) = run_recorded(&env, &spec, &[]);
    assert!(
        rec["limits"]["disk"]
            .as_str()
            .is_some_and(|s| s.starts_with("the container's store")),
        "{rec}"
    );
    assert!(
        rec["limits"]["disk_bytes"].as_u64().is_some_and(|b| b > 0),
        "{rec}"
    );
}
