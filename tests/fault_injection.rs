//! Fault injection: the test-only build (`--features fault-injection`) can skip one hardening step at a
//! time (`RLOXSC_FAULT=<name>`). Each skipped step must be caught by the outside verification (or fail
//! closed), the create must fail naming the policy key that governs the step, and nothing may be left:
//! no state directories, no cgroups, no process in the container's cgroup.

mod common;

use std::time::Duration;

use common::*;

/// Creates a long-lived container with the fault binary and `RLOXSC_FAULT=fault` (unset when `None`).
fn faulty_create(env: &TestEnv, id: &str, fault: Option<&str>) -> Outcome {
    let bundle = env.bundle(&careless_spec(Some(LONG_LIVED)));
    let mut cmd = env.command(
        &fault_bin(),
        &["create", "--bundle", bundle.to_str().unwrap(), id],
    );
    if let Some(f) = fault {
        cmd.env("RLOXSC_FAULT", f);
    }
    env.exec(cmd)
}

/// The create with `fault` must fail naming one of `keys` and leave nothing behind.
fn assert_fault_caught(fault: &str, keys: &[&str]) {
    if !require_prereqs(Need::FaultRuntime) {
        return;
    }
    let env = TestEnv::new(fault);
    let id = env.id();
    let _g = env.guard(&id);
    let out = faulty_create(&env, &id, Some(fault));
    let still_there = env.state(&id);
    assert_error_names_one_of(&out, keys);
    assert!(
        still_there.is_none(),
        "RLOXSC_FAULT={fault}: the container survived: {still_there:?}"
    );
    env.assert_nothing_left(&id, &format!("RLOXSC_FAULT={fault}"));
}

#[test]
fn skip_seccomp_is_caught() {
    assert_fault_caught("skip-seccomp", &["seccomp.profile"]);
}

#[test]
fn skip_nnp_is_caught() {
    assert_fault_caught("skip-nnp", &["process.no_new_privileges"]);
}

#[test]
fn skip_netns_is_caught() {
    assert_fault_caught("skip-netns", &["namespaces.required", "network.mode"]);
}

#[test]
fn skip_readonly_root_is_caught() {
    assert_fault_caught("skip-readonly-root", &["filesystem.readonly_root"]);
}

#[test]
fn skip_pids_is_caught() {
    assert_fault_caught("skip-pids", &["limits.pids"]);
}

#[test]
fn skip_memory_is_caught() {
    assert_fault_caught("skip-memory", &["limits.memory"]);
}

#[test]
fn skip_caps_is_caught() {
    assert_fault_caught("skip-caps", &["capabilities.allowed"]);
}

#[test]
fn skip_masked_is_caught() {
    assert_fault_caught(
        "skip-masked",
        &["filesystem.masked_paths", "filesystem.readonly_paths"],
    );
}

#[test]
fn skip_cgroupfs_ro_is_caught() {
    assert_fault_caught("skip-cgroupfs-ro", &["filesystem.readonly_paths"]);
}

// Regression: the rlimit check used to compare against the (sabotaged) spec, so a spec without
// rlimits passed; it now compares against the policy.
#[test]
fn skip_rlimits_is_caught() {
    assert_fault_caught("skip-rlimits", &["limits.nofile"]);
}

#[test]
fn fail_seccomp_is_caught() {
    assert_fault_caught("fail-seccomp", &["seccomp.profile"]);
}

#[test]
fn fault_binary_without_faults_creates_and_runs() {
    if !require_prereqs(Need::FaultRuntime) {
        return;
    }
    let env = TestEnv::new("no-fault");
    let id = env.id();
    let _g = env.guard(&id);
    faulty_create(&env, &id, None).expect_ok();
    assert_eq!(env.status(&id).as_deref(), Some("created"));
    env.exec(env.command(&fault_bin(), &["start", &id]))
        .expect_ok();
    assert_eq!(env.status(&id).as_deref(), Some("running"));
    env.rloxsc(&["kill", &id]).expect_ok();
    assert!(env.wait_for_status(&id, "stopped", Duration::from_secs(5)));
    env.rloxsc(&["delete", &id]).expect_ok();
    env.assert_nothing_left(&id, "after delete");

    // and a foreground run of the same build works end to end
    let id = env.id();
    let _g = env.guard(&id);
    let bundle = env.bundle(&base_spec(&["echo", "fault-build-ok"]));
    let out = env.exec(env.command(
        &fault_bin(),
        &["run", "--bundle", bundle.to_str().unwrap(), &id],
    ));
    out.expect_ok();
    assert_eq!(out.stdout, "fault-build-ok\n", "{out}");
    env.assert_nothing_left(&id, "after run");
}

#[test]
fn an_unknown_fault_name_changes_nothing() {
    if !require_prereqs(Need::FaultRuntime) {
        return;
    }
    let env = TestEnv::new("unknown-fault");
    let id = env.id();
    let _g = env.guard(&id);
    faulty_create(&env, &id, Some("no-such-fault")).expect_ok();
    env.rloxsc(&["delete", "--force", &id]).expect_ok();
    env.assert_nothing_left(&id, "after delete --force");
}
