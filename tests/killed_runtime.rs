//! rloxsc SIGKILLed at a random point (0-30 ms) of `create`, `start`, `exec`, `delete` and `run`, many
//! times over, each followed by `delete --force`: afterwards nothing may be left (state, private
//! bundle, cgroups, processes, mounts), not even half a second later, and at no point may a process of
//! the container run without its seccomp filter and no_new_privs. (killed_create.rs also kills
//! `create` at 24 fixed points.)
//!
//! The delays come from a seeded generator; the seed is printed, and `RLOXSC_KILL_SEED=N` replays it.

mod common;

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::*;

/// Iterations per verb.
const ITERATIONS: u64 = 30;

/// xorshift64*: enough randomness for kill delays, reproducible from the printed seed.
struct Rng(u64);

impl Rng {
    fn from_env(what: &str) -> Rng {
        let seed = std::env::var("RLOXSC_KILL_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_nanos() as u64
                    ^ std::process::id() as u64
            })
            | 1;
        eprintln!("{what}: RLOXSC_KILL_SEED={seed}");
        Rng(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A delay of 0 to 30 ms.
    fn delay(&mut self) -> Duration {
        Duration::from_micros(self.next() % 30_001)
    }
}

/// Spawns production rloxsc with `args`, output discarded.
fn spawn(env: &TestEnv, args: &[&str]) -> Child {
    env.command(&rloxsc_bin(), args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn rloxsc")
}

/// SIGKILLs `child` after `delay` (it may have finished by then) and reaps it.
fn kill_after(mut child: Child, delay: Duration) {
    std::thread::sleep(delay);
    let _ = child.kill();
    let _ = child.wait();
}

/// Processes of container `id` running a payload without `Seccomp: 2` and `NoNewPrivs: 1`, sampled
/// every 100 ms over `span` ([`uncontained_processes_of`]).
fn uncontained(id: &str, span: Duration) -> Vec<String> {
    let deadline = Instant::now() + span;
    loop {
        let bad = uncontained_processes_of(id);
        if !bad.is_empty() || Instant::now() > deadline {
            return bad;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `delete --force` must succeed and leave nothing, mounts included.
fn force_delete_leaves_nothing(env: &TestEnv, id: &str, context: &str) {
    let out = env.rloxsc(&["delete", "--force", id]);
    assert_eq!(out.code, 0, "{context}: delete --force failed: {out}");
    env.assert_nothing_left(
        id,
        &format!("{context} (delete --force said: {:?})", out.stderr.trim()),
    );
    let stray: Vec<String> = mount_points_under(&env.dir)
        .into_iter()
        .chain(mount_points_under(&test_rootfs()))
        .collect();
    assert!(stray.is_empty(), "{context}: mounts left: {stray:?}");
}

/// After all iterations: nothing of any container of `env` reappeared later (an orphaned
/// libcontainer process of a killed create can recreate cgroups after `delete --force` returned).
fn nothing_reappeared(env: &TestEnv, context: &str) {
    std::thread::sleep(Duration::from_millis(500));
    let prefix = env.id_prefix();
    let cgroups: Vec<_> = rloxsc_cgroup_children()
        .into_iter()
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&prefix))
        })
        .collect();
    assert!(
        cgroups.is_empty(),
        "{context}: cgroups reappeared: {cgroups:?}"
    );
    for d in ["containers", "bundles"] {
        let left: Vec<_> = std::fs::read_dir(env.root.join(d))
            .map(|rd| rd.flatten().map(|e| e.file_name()).collect())
            .unwrap_or_default();
        assert!(left.is_empty(), "{context}: {d}/ holds {left:?}");
    }
}

fn created(env: &TestEnv, bundle: &Path) -> String {
    let id = env.id();
    env.create(bundle, &id).expect_ok();
    id
}

#[test]
fn sigkill_during_start_then_delete_force_leaves_nothing() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("killed-start");
    let bundle = env.bundle(&base_spec(LONG_LIVED));
    let mut rng = Rng::from_env("start");
    let mut seen = std::collections::BTreeMap::new();
    for _ in 0..ITERATIONS {
        let id = created(&env, &bundle);
        let _g = env.guard(&id);
        let d = rng.delay();
        kill_after(spawn(&env, &["start", &id]), d);
        *seen.entry(env.status(&id).unwrap_or_default()).or_insert(0) += 1;
        let bad = uncontained(&id, Duration::from_millis(300));
        assert!(
            bad.is_empty(),
            "start killed after {d:?}: uncontained {bad:?}"
        );
        force_delete_leaves_nothing(&env, &id, &format!("start killed after {d:?}"));
    }
    eprintln!("start: status after the kill: {seen:?}");
    nothing_reappeared(&env, "start");
}

#[test]
fn sigkill_during_exec_leaves_no_uncontained_process_then_nothing() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("killed-exec");
    let bundle = env.bundle(&base_spec(LONG_LIVED));
    let mut rng = Rng::from_env("exec");
    let mut survived = 0;
    for i in 0..ITERATIONS {
        let id = created(&env, &bundle);
        let _g = env.guard(&id);
        env.rloxsc(&["start", &id]).expect_ok();
        let d = rng.delay();
        // foreground and detached exec of a long-lived process
        let args: Vec<&str> = if i % 2 == 0 {
            vec!["exec", &id, "sleep", "300"]
        } else {
            vec!["exec", "--detach", &id, "sleep", "300"]
        };
        kill_after(spawn(&env, &args), d);
        let bad = uncontained(&id, Duration::from_millis(300));
        assert!(
            bad.is_empty(),
            "exec killed after {d:?}: uncontained {bad:?}"
        );
        let execd = pids_in_cgroup_of(&id)
            .into_iter()
            .filter(|p| {
                std::fs::read(format!("/proc/{p}/cmdline"))
                    .is_ok_and(|c| c.starts_with(b"sleep\x00300"))
            })
            .count();
        survived += usize::from(execd > 0);
        // the container itself is unharmed
        assert_eq!(
            env.status(&id).as_deref(),
            Some("running"),
            "exec killed after {d:?}"
        );
        force_delete_leaves_nothing(&env, &id, &format!("exec killed after {d:?}"));
    }
    eprintln!(
        "exec: the exec'd process was running (contained) after {survived} of {ITERATIONS} kills"
    );
    nothing_reappeared(&env, "exec");
}

#[test]
fn sigkill_during_create_at_random_then_delete_force_leaves_nothing() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("killed-create-rnd");
    let bundle = env.bundle(&base_spec(LONG_LIVED));
    let mut rng = Rng::from_env("create");
    let mut seen = std::collections::BTreeMap::new();
    for i in 0..ITERATIONS * 2 {
        let id = env.id();
        let _g = env.guard(&id);
        let d = rng.delay();
        kill_after(
            spawn(&env, &["create", "--bundle", bundle.to_str().unwrap(), &id]),
            d,
        );
        // half the time `delete --force` at once, racing libcontainer's orphaned processes (they
        // carry on creating the container); half the time after they settled, checking them first
        if i % 2 == 1 {
            *seen
                .entry(env.status(&id).unwrap_or_else(|| "none".into()))
                .or_insert(0) += 1;
            let bad = uncontained(&id, Duration::from_millis(300));
            assert!(
                bad.is_empty(),
                "create killed after {d:?}: uncontained {bad:?}"
            );
        }
        force_delete_leaves_nothing(&env, &id, &format!("create killed after {d:?}"));
    }
    eprintln!("create: status after the kill: {seen:?}");
    nothing_reappeared(&env, "create");
}

#[test]
fn sigkill_during_delete_then_delete_force_leaves_nothing() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("killed-delete");
    let bundle = env.bundle(&base_spec(LONG_LIVED));
    let mut rng = Rng::from_env("delete");
    let mut seen = std::collections::BTreeMap::new();
    for i in 0..ITERATIONS {
        let id = created(&env, &bundle);
        let _g = env.guard(&id);
        let args: Vec<&str> = match i % 3 {
            // a running container, forced
            0 => {
                env.rloxsc(&["start", &id]).expect_ok();
                vec!["delete", "--force", &id]
            }
            // a created one, forced
            1 => vec!["delete", "--force", &id],
            // a stopped one, plainly
            _ => {
                env.rloxsc(&["start", &id]).expect_ok();
                env.rloxsc(&["kill", &id, "KILL"]).expect_ok();
                assert!(env.wait_for_status(&id, "stopped", Duration::from_secs(5)));
                vec!["delete", &id]
            }
        };
        let d = rng.delay();
        kill_after(spawn(&env, &args), d);
        *seen
            .entry(env.status(&id).unwrap_or_else(|| "gone".into()))
            .or_insert(0) += 1;
        let bad = uncontained(&id, Duration::from_millis(300));
        assert!(
            bad.is_empty(),
            "delete killed after {d:?}: uncontained {bad:?}"
        );
        force_delete_leaves_nothing(&env, &id, &format!("{args:?} killed after {d:?}"));
    }
    eprintln!("delete: status after the kill: {seen:?}");
    nothing_reappeared(&env, "delete");
}

#[test]
fn sigkill_during_run_then_delete_force_leaves_nothing() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("killed-run");
    let bundle = env.bundle(&base_spec(LONG_LIVED));
    let mut rng = Rng::from_env("run");
    let mut seen = std::collections::BTreeMap::new();
    for _ in 0..ITERATIONS {
        let id = env.id();
        let _g = env.guard(&id);
        // up to 60 ms: run = create + start, and create alone takes ~40 ms
        let d = rng.delay() * 2;
        kill_after(
            spawn(&env, &["run", "--bundle", bundle.to_str().unwrap(), &id]),
            d,
        );
        *seen
            .entry(env.status(&id).unwrap_or_else(|| "none".into()))
            .or_insert(0) += 1;
        let bad = uncontained(&id, Duration::from_millis(300));
        assert!(
            bad.is_empty(),
            "run killed after {d:?}: uncontained {bad:?}"
        );
        force_delete_leaves_nothing(&env, &id, &format!("run killed after {d:?}"));
    }
    eprintln!("run: status after the kill: {seen:?}");
    nothing_reappeared(&env, "run");
}

/// The detector above can fail: a host process (no filter, no no_new_privs) moved into a running
/// container's cgroup is reported, with its exe and argv, while a process of the container is not.
#[test]
fn uncontained_detector_flags_a_process_without_the_filter() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("killed-detector");
    let c = env.start_container(&base_spec(LONG_LIVED));
    assert!(
        uncontained_processes_of(&c.id).is_empty(),
        "the container's own processes are contained: {:?}",
        uncontained_processes_of(&c.id)
    );
    let mut host = std::process::Command::new("sleep")
        .arg("301")
        .spawn()
        .expect("spawn sleep");
    // once it has exec'd (found in CI: read between fork and exec, its argv was still empty)
    let cmdline = format!("/proc/{}/cmdline", host.id());
    assert!(poll_until(Duration::from_secs(5), || {
        std::fs::read(&cmdline).is_ok_and(|c| c.starts_with(b"sleep\x00301"))
    }));
    let procs = cgroup_dirs_of(&c.id)
        .into_iter()
        .map(|d| d.join("cgroup.procs"))
        .find(|p| p.exists())
        .expect("a cgroup.procs of the container");
    std::fs::write(&procs, host.id().to_string()).expect("move sleep into the container's cgroup");
    let bad = uncontained_processes_of(&c.id);
    let _ = host.kill();
    let _ = host.wait();
    assert!(
        bad.iter()
            .any(|b| b.contains(&format!("pid {} ", host.id())) && b.contains("sleep 301")),
        "the host sleep (Seccomp 0) in the cgroup was not reported: {bad:?}"
    );
    force_delete_leaves_nothing(&env, &c.id, "detector");
}
