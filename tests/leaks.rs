//! Resource leaks: after many lifecycles, runs, failing creates and forced deletes, the host looks as
//! it did before. One test only, since it compares snapshots of host-wide state.

mod common;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use common::*;
use serde_json::json;

/// What rloxsc could leak, as seen from the test process.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Snapshot {
    /// Directories under /sys/fs/cgroup/*/rloxsc/ made by this test (other rloxsc users on the host
    /// may add and remove their own meanwhile; those are reported, not compared).
    our_cgroups: BTreeSet<PathBuf>,
    /// Entries of `<root>/containers`.
    containers: BTreeSet<String>,
    /// Entries of `<root>/bundles`.
    bundles: BTreeSet<String>,
    /// Number of lines of /proc/self/mountinfo.
    mount_lines: usize,
    /// Children of the test process.
    children: BTreeSet<i32>,
}

fn entries(dir: PathBuf) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Pids whose parent is the test process (scanning /proc: `task/*/children` needs
/// CONFIG_PROC_CHILDREN, which not every kernel has).
fn children() -> BTreeSet<i32> {
    let me = std::process::id().to_string();
    let mut out = BTreeSet::new();
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in rd.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        if let Ok(st) = std::fs::read_to_string(e.path().join("status")) {
            if status_field(&st, "PPid").as_deref() == Some(me.as_str()) {
                out.insert(pid);
            }
        }
    }
    out
}

fn snapshot(env: &TestEnv) -> Snapshot {
    let prefix = env.id_prefix();
    let all = rloxsc_cgroup_children();
    Snapshot {
        our_cgroups: all
            .iter()
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(&prefix))
            })
            .cloned()
            .collect(),
        containers: entries(env.root.join("containers")),
        bundles: entries(env.root.join("bundles")),
        mount_lines: std::fs::read_to_string("/proc/self/mountinfo")
            .map(|s| s.lines().count())
            .unwrap_or(0),
        children: children(),
    }
}

#[test]
fn nothing_leaks_across_many_lifecycles() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("leaks");
    // the child scan must see a child, or its comparison below proves nothing
    let mut probe = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .expect("spawn sleep");
    let seen = children().contains(&(probe.id() as i32));
    let _ = probe.kill();
    let _ = probe.wait();
    assert!(
        seen,
        "the child-process scan does not see the test's children"
    );
    let long = env.bundle(&base_spec(LONG_LIVED));
    let short = env.bundle(&base_spec(&["sh", "-c", "echo hi"]));

    // warm-up: creates the state root and the /rloxsc parent cgroups
    let warm = env.id();
    let _g = env.guard(&warm);
    env.run(&short, &warm).expect_ok();

    let cgroups_before = rloxsc_cgroup_children();
    let mountinfo_before = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let before = snapshot(&env);

    // 10 x create, start, kill, delete
    for _ in 0..10 {
        let id = env.id();
        let _g = env.guard(&id);
        env.create(&long, &id).expect_ok();
        env.rloxsc(&["start", &id]).expect_ok();
        env.rloxsc(&["kill", &id, "KILL"]).expect_ok();
        assert!(
            env.wait_for_status(&id, "stopped", Duration::from_secs(5)),
            "{id} not stopped"
        );
        env.rloxsc(&["delete", &id]).expect_ok();
    }
    // 10 x run
    for _ in 0..10 {
        let id = env.id();
        let _g = env.guard(&id);
        let out = env.run(&short, &id);
        out.expect_ok();
        assert_eq!(out.stdout, "hi\n");
    }
    // 5 failing creates
    let bad_config = env.dir.join("bad-config");
    std::fs::create_dir_all(&bad_config).unwrap();
    std::fs::write(bad_config.join("config.json"), b"{ \"ociVersion\": ").unwrap();
    let missing_exe = env.bundle(&base_spec(&["rloxsc-no-such-program"]));
    let mut sensitive = base_spec(LONG_LIVED);
    sensitive["mounts"]
        .as_array_mut()
        .unwrap()
        .push(json!({"destination": "/host", "type": "bind", "source": "/", "options": ["rbind"]}));
    let sensitive = env.bundle(&sensitive);
    for bundle in [
        &bad_config,
        &missing_exe,
        &sensitive,
        &missing_exe,
        &bad_config,
    ] {
        let id = env.id();
        let _g = env.guard(&id);
        let out = env.create(bundle, &id);
        assert_ne!(out.code, 0, "{out}");
        // the guard must not do the cleanup for rloxsc: check before it drops
        env.assert_nothing_left(&id, "failed create");
    }
    // 3 x create (+ start) then delete --force while running
    for _ in 0..3 {
        let id = env.id();
        let _g = env.guard(&id);
        env.create(&long, &id).expect_ok();
        env.rloxsc(&["start", &id]).expect_ok();
        env.rloxsc(&["delete", "--force", &id]).expect_ok();
        assert!(env.state(&id).is_none());
    }

    // cgroups and processes are removed asynchronously by the kernel: give them a moment
    let mut after = snapshot(&env);
    poll_until(Duration::from_secs(3), || {
        after = snapshot(&env);
        after == before
    });

    let cgroups_after = rloxsc_cgroup_children();
    let foreign: Vec<&PathBuf> = cgroups_after
        .symmetric_difference(&cgroups_before)
        .filter(|p| !after.our_cgroups.contains(*p) && !before.our_cgroups.contains(*p))
        .collect();
    if !foreign.is_empty() {
        eprintln!("note: cgroups of other rloxsc users changed meanwhile (ignored): {foreign:?}");
    }
    let mount_diff = || {
        let now = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let b: BTreeSet<&str> = mountinfo_before.lines().collect();
        let a: BTreeSet<&str> = now.lines().collect();
        format!(
            "added {:?}, removed {:?}",
            a.difference(&b).collect::<Vec<_>>(),
            b.difference(&a).collect::<Vec<_>>()
        )
    };
    assert_eq!(after.our_cgroups, before.our_cgroups, "cgroups leaked");
    assert_eq!(after.containers, before.containers, "state dirs leaked");
    assert_eq!(after.bundles, before.bundles, "private bundles leaked");
    assert_eq!(
        after.mount_lines,
        before.mount_lines,
        "mounts leaked: {}",
        mount_diff()
    );
    assert_eq!(after.children, before.children, "child processes leaked");
}
