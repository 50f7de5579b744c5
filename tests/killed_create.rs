//! rloxsc SIGKILLed at points all along `create`, then `delete --force`: nothing may be left (state,
//! private bundle, cgroups, processes), whatever point the kill hit.

mod common;

use std::time::Duration;

use common::*;

#[test]
fn sigkill_during_create_then_delete_force_leaves_nothing() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("killed-create");
    let bundle = env.bundle(&base_spec(LONG_LIVED));
    for i in 0..24u64 {
        let id = env.id();
        let mut child = env
            .command(
                &rloxsc_bin(),
                &["create", "--bundle", bundle.to_str().unwrap(), &id],
            )
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn create");
        // from before the re-exec to after libcontainer's children exist
        std::thread::sleep(Duration::from_micros(500 + i * 1500));
        let _ = child.kill();
        let _ = child.wait();
        let out = env.rloxsc(&["delete", "--force", &id]);
        assert_eq!(
            out.code,
            0,
            "delete --force after a kill at {} us: {out}",
            500 + i * 1500
        );
        env.assert_nothing_left(&id, "SIGKILL during create, then delete --force");
    }
}

/// The phases of `create` (src/launch/create.rs), in order: the fault build's `kill-at-PHASE`
/// SIGKILLs the runtime at the end of each.
const PHASES: &[&str] = &[
    "footprint",
    "identity",
    "policy",
    "filesystem",
    "libcontainer",
    "verified",
];

/// Processes other than this test that still run an rloxsc binary for container `id` (a killed
/// create's orphaned intermediate or init, a custodian that never ended).
fn rloxsc_processes_of(id: &str) -> Vec<String> {
    let me = std::process::id() as i32;
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        if pid == me || !runs_rloxsc(pid) {
            continue;
        }
        let argv = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        if argv.split(|b| *b == 0).any(|a| a == id.as_bytes()) {
            out.push(format!(
                "pid {pid}: {}",
                String::from_utf8_lossy(&argv).replace('\0', " ")
            ));
        }
    }
    out
}

// rloxsc SIGKILLed at the end of each phase of create (the fault build's kill-at-PHASE, so every
// phase is hit, not only the points a timer happens to land on): one `delete --force` gives back
// everything the create held at that point (state, private bundle, view directory and its mounts,
// the block of host ids, cgroups, processes).
#[test]
fn sigkill_at_each_phase_of_create_then_one_delete_force_leaves_nothing() {
    if !require_prereqs(Need::FaultRuntime) {
        return;
    }
    let env = TestEnv::new("killed-phase");
    let bundle = env.bundle(&base_spec(LONG_LIVED));
    for phase in PHASES {
        let id = env.id();
        let _g = env.guard(&id);
        let mut cmd = env.command(
            &fault_bin(),
            &["create", "--bundle", bundle.to_str().unwrap(), &id],
        );
        cmd.env("RLOXSC_FAULT", format!("kill-at-{phase}"));
        let out = env.exec(cmd);
        assert_eq!(
            out.code,
            128 + 9,
            "{phase}: the create was not killed there: {out}"
        );
        // what a killed create holds, by phase (so the kill hit the phase it names)
        let held = env.leftovers(&id);
        assert!(
            !held.is_empty(),
            "{phase}: the killed create held nothing to give back"
        );
        let out = env.rloxsc(&["delete", "--force", &id]);
        assert_eq!(out.code, 0, "{phase}: delete --force: {out}");
        env.assert_nothing_left(&id, &format!("SIGKILL at the end of phase {phase}"));
        let procs = rloxsc_processes_of(&id);
        assert!(
            procs.is_empty(),
            "{phase}: rloxsc processes of {id} left: {procs:?}"
        );
    }
}

// The same for a foreground `run --timeout`: nobody calls delete after a killed run, so its
// custodian must give everything back by itself, within the run's --timeout, from every phase.
#[test]
fn a_foreground_run_killed_at_each_phase_is_given_back_by_its_custodian_within_its_timeout() {
    if !require_prereqs(Need::FaultRuntime) {
        return;
    }
    let env = TestEnv::new("killed-phase-run");
    let bundle = env.bundle(&base_spec(LONG_LIVED));
    let timeout = Duration::from_secs(20);
    for phase in PHASES {
        let id = env.id();
        let _g = env.guard(&id);
        let mut cmd = env.command(
            &fault_bin(),
            &[
                "run",
                "--timeout",
                "20s",
                "--bundle",
                bundle.to_str().unwrap(),
                &id,
            ],
        );
        cmd.env("RLOXSC_FAULT", format!("kill-at-{phase}"));
        let t0 = std::time::Instant::now();
        let out = env.exec(cmd);
        assert_eq!(
            out.code,
            128 + 9,
            "{phase}: the run was not killed there: {out}"
        );
        let mut left = vec![];
        let gone = poll_until(timeout.saturating_sub(t0.elapsed()), || {
            left = env.leftovers(&id);
            left.extend(rloxsc_processes_of(&id));
            left.is_empty()
        });
        assert!(
            gone,
            "{phase}: the custodian did not give everything back within --timeout: {left:?}"
        );
    }
}
