//! Issue #11: each container's *effective* policy (the policy file tightened by the spec's
//! annotations) is what create, run, exec, start, update and delete apply, through the one launch
//! path; and hooks see the caller's bundle. Each test here failed against the code before the launch
//! path carried the effective policy (bdaba62): extra syscalls reached exec only, update lifted the
//! annotation-tightened limits, the network annotation was logged and not enforced, and hooks saw
//! rloxsc's private bundle.

mod common;

use common::*;
use serde_json::json;

fn policy_file(env: &TestEnv, text: &str) -> String {
    let p = env.dir.join(format!("policy-{}.toml", env.id()));
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

/// `get_mempolicy` (x86_64 syscall 239) with null arguments succeeds when the filter allows it.
const GET_MEMPOLICY: &[&str] = &["/bin/seccomp-probe", "call", "239"];

#[test]
fn extra_syscalls_reach_run_create_and_exec() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("eff-syscalls");
    // control: the default allowlist denies it
    let out = env.run_spec(&base_spec(GET_MEMPOLICY));
    out.expect_ok();
    assert_eq!(
        out.stdout.trim(),
        "errno 1 Operation not permitted",
        "{out}"
    );

    let policy = policy_file(&env, "[seccomp]\nextra_syscalls = [\"get_mempolicy\"]\n");
    // run: the init itself
    let id = env.id();
    let _g = env.guard(&id);
    let b = env.bundle(&base_spec(GET_MEMPOLICY));
    let out = env.rloxsc(&[
        "--policy",
        &policy,
        "run",
        "--bundle",
        b.to_str().unwrap(),
        &id,
    ]);
    out.expect_ok();
    assert_eq!(out.stdout.trim(), "ok 0", "run under the policy: {out}");

    // create + start: the init records its answer, exec asks again
    let id = env.id();
    let _g = env.guard(&id);
    let b = env.bundle(&base_spec(&[
        "sh",
        "-c",
        "/bin/seccomp-probe call 239 > /tmp/init-answer; trap 'exit 0' TERM; while true; do sleep 1; done",
    ]));
    env.rloxsc(&[
        "--policy",
        &policy,
        "create",
        "--bundle",
        b.to_str().unwrap(),
        &id,
    ])
    .expect_ok();
    env.rloxsc(&["--policy", &policy, "start", &id]).expect_ok();
    assert!(
        poll_until(std::time::Duration::from_secs(10), || {
            env.rloxsc(&["exec", &id, "cat", "/tmp/init-answer"])
                .stdout
                .contains("ok")
        }),
        "the init never wrote its answer"
    );
    let out = env.rloxsc(&["exec", &id, "cat", "/tmp/init-answer"]);
    assert_eq!(
        out.stdout.trim(),
        "ok 0",
        "create+start under the policy: {out}"
    );
    // exec reads the container's own policy, not the one on its command line (none here)
    let out = env.rloxsc(&["exec", &id, "/bin/seccomp-probe", "call", "239"]);
    assert_eq!(
        out.stdout.trim(),
        "ok 0",
        "exec into a container created under the policy: {out}"
    );
    env.rloxsc(&["delete", "--force", &id]).expect_ok();
}

#[test]
fn update_cannot_lift_annotation_tightened_limits() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("eff-update");
    let mut spec = base_spec(LONG_LIVED);
    spec["annotations"] = json!({"run.rloxsc.pids": "32", "run.rloxsc.memory": "64M"});
    let c = env.start_container(&spec);
    let pids_max = || {
        cgroup_dirs_of(&c.id)
            .into_iter()
            .map(|d| d.join("pids.max"))
            .find(|f| f.exists())
            .map(read_trimmed)
            .expect("pids.max")
    };
    let mem_max = || {
        cgroup_dirs_of(&c.id)
            .into_iter()
            .flat_map(|d| [d.join("memory.limit_in_bytes"), d.join("memory.max")])
            .find(|f| f.exists())
            .map(read_trimmed)
            .expect("memory limit")
    };
    assert_eq!(pids_max(), "32");
    assert_eq!(mem_max(), (64u64 << 20).to_string());
    let out = env.rloxsc(&[
        "update",
        "--pids-limit",
        "4000",
        "--memory",
        "8G",
        "--memory-swap",
        "8G",
        &c.id,
    ]);
    out.expect_ok();
    assert_eq!(
        pids_max(),
        "32",
        "update lifted the annotation's pids limit: {out}"
    );
    assert_eq!(
        mem_max(),
        (64u64 << 20).to_string(),
        "update lifted the annotation's memory limit: {out}"
    );
    // lowering stays possible
    env.rloxsc(&["update", "--pids-limit", "16", &c.id])
        .expect_ok();
    assert_eq!(pids_max(), "16");
}

#[test]
fn network_annotation_is_enforced_under_a_namespace_policy() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("eff-net");
    let policy = policy_file(&env, "[network]\nmode = \"namespace\"\n");
    let hook = up_interface_hook(&env);
    let with_hook = |annotation: bool| {
        let mut spec = base_spec(&["ip", "-o", "link", "show", "dummy0"]);
        spec["hooks"] = json!({"createRuntime": [{"path": hook.to_str().unwrap()}]});
        if annotation {
            spec["annotations"] = json!({"run.rloxsc.network": "loopback-only"});
        }
        env.bundle(&spec)
    };
    // control: the policy accepts the interface the hook adds
    let id = env.id();
    let _g = env.guard(&id);
    let out = env.rloxsc(&[
        "--policy",
        &policy,
        "run",
        "--bundle",
        with_hook(false).to_str().unwrap(),
        &id,
    ]);
    out.expect_ok();
    assert!(
        out.stdout.contains("dummy0") && out.stdout.contains("UP"),
        "the hook's interface is not up, so the test below proves nothing: {out}"
    );
    // the annotation tightens it back to loopback-only: the interface is set down (contained)
    let id = env.id();
    let _g = env.guard(&id);
    let out = env.rloxsc(&[
        "--policy",
        &policy,
        "run",
        "--bundle",
        with_hook(true).to_str().unwrap(),
        &id,
    ]);
    out.expect_ok();
    assert!(
        out.stdout.contains("dummy0") && !out.stdout.contains(",UP") && !out.stdout.contains("<UP"),
        "the annotation's loopback-only left the hook's interface up: {out}"
    );
    env.assert_nothing_left(&id, "after the run");
}

#[test]
fn hooks_see_the_callers_bundle() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("eff-hooks");
    let log = env.dir.join("hook-states");
    let hook = env.dir.join("record-state.sh");
    std::fs::write(
        &hook,
        format!("#!/bin/sh\n{{ cat; echo; }} >> {}\n", log.display()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    let h = json!([{"path": hook.to_str().unwrap()}]);
    let mut spec = base_spec(&["true"]);
    spec["hooks"] = json!({"prestart": h, "createRuntime": h, "poststart": h, "poststop": h});
    let id = env.id();
    let _g = env.guard(&id);
    let bundle = env.bundle(&spec);
    env.run(&bundle, &id).expect_ok();
    let states: Vec<serde_json::Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("hook state is JSON"))
        .collect();
    assert_eq!(states.len(), 4, "{states:?}");
    let want = std::fs::canonicalize(&bundle).unwrap();
    for st in &states {
        assert_eq!(st["id"], id.as_str());
        assert_eq!(
            std::path::Path::new(st["bundle"].as_str().unwrap()),
            want,
            "a hook saw another bundle than the caller's: {st}"
        );
    }
}
