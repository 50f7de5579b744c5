//! ps, pause/resume, update and events against real containers.

mod common;

use std::time::Duration;

use common::*;

fn cgroup_file(id: &str, controller: &str, file: &str) -> String {
    read_trimmed(format!("/sys/fs/cgroup/{controller}/rloxsc/{id}/{file}"))
}

#[test]
fn ps_json_lists_every_process_of_the_container() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("ps");
    let c = env.start_container(&base_spec(LONG_LIVED));
    env.rloxsc(&["exec", "--detach", &c.id, "sleep", "30"])
        .expect_ok();
    let out = env.rloxsc(&["ps", "--format", "json", &c.id]);
    out.expect_ok();
    let pids: Vec<i32> =
        serde_json::from_str(out.stdout.trim()).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert!(
        pids.contains(&c.pid),
        "init {} missing from {pids:?}",
        c.pid
    );
    assert!(pids.len() >= 2, "exec'd process missing: {pids:?}");
    let table = env.rloxsc(&["ps", &c.id]);
    table.expect_ok();
    assert!(
        table.stdout.lines().next().unwrap_or("").contains("PID"),
        "{table}"
    );
    assert!(table.stdout.contains("sleep 30"), "{table}");
}

#[test]
fn pause_freezes_and_resume_thaws() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("pause");
    let c = env.start_container(&base_spec(LONG_LIVED));
    env.rloxsc(&["pause", &c.id]).expect_ok();
    assert_eq!(env.status(&c.id).as_deref(), Some("paused"));
    assert_eq!(cgroup_file(&c.id, "freezer", "freezer.state"), "FROZEN");
    let st = std::fs::read_to_string(format!("/proc/{}/status", c.pid)).unwrap();
    assert!(
        status_field(&st, "State").is_some_and(|s| s.starts_with('D') || s.starts_with('S')),
        "{st}"
    );
    // pausing twice and exec into a paused container are refused
    assert_ne!(env.rloxsc(&["pause", &c.id]).code, 0);
    assert_ne!(env.rloxsc(&["exec", &c.id, "true"]).code, 0);
    env.rloxsc(&["resume", &c.id]).expect_ok();
    assert_eq!(env.status(&c.id).as_deref(), Some("running"));
    assert_eq!(cgroup_file(&c.id, "freezer", "freezer.state"), "THAWED");
    assert_ne!(
        env.rloxsc(&["resume", &c.id]).code,
        0,
        "resume of a running container"
    );
}

// `list` (and a shim's `state`) read state.json while other verbs save it: libcontainer truncated the
// file and then wrote it, so a reader could find it empty and `list` left the container out (seen
// once in tests/clients' cri-pod-bridge). A save is now a new file renamed over the old one.
#[test]
fn a_state_file_being_saved_is_never_seen_empty_or_partial() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("state-save");
    let c = env.start_container(&base_spec(LONG_LIVED));
    let state = env.root.join("containers").join(&c.id).join("state.json");
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let done = done.clone();
        std::thread::spawn(move || {
            let (mut reads, mut bad) = (0u32, Vec::new());
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                if let Ok(b) = std::fs::read(&state) {
                    reads += 1;
                    if serde_json::from_slice::<serde_json::Value>(&b).is_err() {
                        bad.push(String::from_utf8_lossy(&b).into_owned());
                    }
                }
            }
            (reads, bad)
        })
    };
    // each pause and resume saves the state
    for _ in 0..40 {
        env.rloxsc(&["pause", &c.id]).expect_ok();
        env.rloxsc(&["resume", &c.id]).expect_ok();
    }
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let (reads, bad) = reader.join().unwrap();
    assert!(
        reads > 100,
        "the reader read the state file only {reads} times"
    );
    assert!(
        bad.is_empty(),
        "{} of {reads} reads of state.json were not a whole JSON document, e.g. {:?}",
        bad.len(),
        bad[0]
    );
    let listed = env.rloxsc(&["list", "-q"]);
    listed.expect_ok();
    assert!(listed.stdout.lines().any(|l| l == c.id), "{listed}");
}

// runc's bats "delete --force [paused container]": a frozen process takes its SIGKILL only once it
// is thawed (v1's freezer), so the delete waited out its bound and failed with the cgroup left.
#[test]
fn delete_force_of_a_paused_container_leaves_nothing() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("pause-del");
    let c = env.start_container(&base_spec(LONG_LIVED));
    env.rloxsc(&["exec", "--detach", &c.id, "sleep", "30"])
        .expect_ok();
    env.rloxsc(&["pause", &c.id]).expect_ok();
    assert_eq!(env.status(&c.id).as_deref(), Some("paused"));
    let t0 = std::time::Instant::now();
    env.rloxsc(&["delete", "--force", &c.id]).expect_ok();
    assert!(
        t0.elapsed() < Duration::from_secs(5),
        "delete --force of a paused container took {:?}",
        t0.elapsed()
    );
    env.assert_nothing_left(&c.id, "delete --force of a paused container");
}

#[test]
fn update_applies_lower_limits_and_clamps_higher_ones() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("update");
    let c = env.start_container(&base_spec(LONG_LIVED));
    env.rloxsc(&["update", "--memory", "64m", "--pids-limit", "50", &c.id])
        .expect_ok();
    assert_eq!(cgroup_file(&c.id, "pids", "pids.max"), "50");
    assert_eq!(
        cgroup_file(&c.id, "memory", "memory.limit_in_bytes"),
        (64u64 << 20).to_string()
    );

    // above the ceilings, or unlimited, through --resources FILE: clamped, never applied as asked
    let res = c.bundle.join("resources.json");
    std::fs::write(&res, r#"{"pids":{"limit":-1},"memory":{"limit":68719476736,"swap":-1},"devices":[{"allow":true,"access":"rwm"}]}"#).unwrap();
    let log = c.bundle.join("update.log");
    env.rloxsc(&[
        "--log",
        log.to_str().unwrap(),
        "--log-format",
        "json",
        "update",
        "--resources",
        res.to_str().unwrap(),
        &c.id,
    ])
    .expect_ok();
    assert_eq!(cgroup_file(&c.id, "pids", "pids.max"), "4096");
    assert_eq!(
        cgroup_file(&c.id, "memory", "memory.limit_in_bytes"),
        (16u64 << 30).to_string()
    );
    let memsw = format!(
        "/sys/fs/cgroup/memory/rloxsc/{}/memory.memsw.limit_in_bytes",
        c.id
    );
    if std::path::Path::new(&memsw).exists() {
        assert_eq!(
            read_trimmed(&memsw),
            (16u64 << 30).to_string(),
            "swap above memory"
        );
    }
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(
        logged.contains("limits.pids") && logged.contains("limits.memory"),
        "clamps not logged: {logged}"
    );
    assert!(
        logged.contains("devices.allowed"),
        "ignored device rules not logged: {logged}"
    );
    // the device cgroup did not widen
    let devices = read_trimmed(format!(
        "/sys/fs/cgroup/devices/rloxsc/{}/devices.list",
        c.id
    ));
    assert!(!devices.lines().any(|l| l.starts_with("a ")), "{devices}");
}

#[test]
fn events_stats_prints_one_runc_envelope() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("events");
    let c = env.start_container(&base_spec(LONG_LIVED));
    let out = env.rloxsc(&["events", "--stats", &c.id]);
    out.expect_ok();
    let v: serde_json::Value =
        serde_json::from_str(out.stdout.trim()).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(v["type"], "stats");
    assert_eq!(v["id"], c.id.as_str());
    assert!(
        v["data"]["pids"]["current"].as_u64().unwrap_or(0) >= 1,
        "{v}"
    );
    assert!(v["data"]["memory"].is_object(), "{v}");
}

#[test]
fn events_reports_an_oom_kill() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("events-oom");
    let mut spec = base_spec(LONG_LIVED);
    spec["linux"]["resources"] = serde_json::json!({"memory": {"limit": 33554432}});
    let c = env.start_container(&spec);
    let mut child = env
        .command(&rloxsc_bin(), &["events", "--interval", "1s", &c.id])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("events");
    // a memory hog in the container: the kernel kills it inside the container's 32 MiB
    let _ = env.rloxsc(&[
        "exec",
        &c.id,
        "sh",
        "-c",
        "x=a; while true; do x=$x$x; done",
    ]);
    std::thread::sleep(Duration::from_millis(600));
    env.rloxsc(&["kill", &c.id, "KILL"]).expect_ok();
    let status = wait_child(&mut child, Duration::from_secs(10), "events");
    let mut out = String::new();
    use std::io::Read;
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    assert_eq!(
        exit_code(status),
        0,
        "events should end when the container stops: {out}"
    );
    assert!(
        out.lines()
            .any(|l| serde_json::from_str::<serde_json::Value>(l)
                .is_ok_and(|v| v["type"] == "oom" && v["id"] == c.id.as_str())),
        "no oom event in:\n{out}"
    );
}

// Regression: `rloxsc list -q | grep -q ID` made rloxsc panic ("failed printing to stdout: Broken
// pipe") once grep had exited; printing verbs end quietly on a closed stdout, like any Unix tool.
#[test]
fn printing_verbs_end_quietly_when_the_reader_has_gone() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("epipe");
    for args in [&["list"][..], &["features"], &["policy", "show"]] {
        let (reader, writer) = std::os::unix::net::UnixStream::pair().unwrap();
        drop(reader);
        let (_, err_path) = env.capture_paths();
        let mut cmd = env.command(&rloxsc_bin(), args);
        cmd.stdout(std::process::Stdio::from(std::os::fd::OwnedFd::from(
            writer,
        )));
        cmd.stderr(std::fs::File::create(&err_path).unwrap());
        let mut child = cmd.spawn().unwrap();
        let st = wait_child(
            &mut child,
            Duration::from_secs(30),
            "rloxsc with a closed stdout",
        );
        let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        use std::os::unix::process::ExitStatusExt;
        assert!(
            st.signal() == Some(libc::SIGPIPE) || st.success(),
            "{args:?}: {st:?} {stderr}"
        );
    }
}

/// As under runc and crun, the payload of `run` and of `exec` starts with every signal at its default
/// disposition and none blocked, whatever the runtime's caller ignored (a shell's background job
/// ignores SIGINT and SIGQUIT) and although rloxsc itself ignores SIGPIPE: an ignored signal survives
/// execve (Python's `_thread.interrupt_main` then raises nothing; `yes | head` gets EPIPE).
#[test]
fn payloads_start_with_default_signal_dispositions() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    use std::os::unix::process::CommandExt;
    let env = TestEnv::new("signals");
    let ignoring = |args: &[&str]| {
        let mut cmd = env.command(&rloxsc_bin(), args);
        // SAFETY: only signal(2) between fork and exec
        unsafe {
            cmd.pre_exec(|| {
                for s in [
                    libc::SIGINT,
                    libc::SIGQUIT,
                    libc::SIGTERM,
                    libc::SIGHUP,
                    libc::SIGPIPE,
                ] {
                    libc::signal(s, libc::SIG_IGN);
                }
                Ok(())
            });
        }
        env.exec(cmd)
    };
    let check = |out: &Outcome, verb: &str| {
        assert_eq!(out.code, 0, "{verb}: {out}");
        for line in ["SigIgn:\t0000000000000000", "SigBlk:\t0000000000000000"] {
            assert!(out.stdout.contains(line), "{verb}: no {line:?} in {out}");
        }
    };
    let status = ["/bin/grep", "-E", "^Sig(Ign|Blk)", "/proc/self/status"];
    let id = env.id();
    let _g = env.guard(&id);
    let b = env.bundle(&base_spec(&status));
    let out = ignoring(&["run", "--bundle", b.to_str().unwrap(), &id]);
    check(&out, "run");

    let c = env.start_container(&base_spec(LONG_LIVED));
    let mut args = vec!["exec", c.id.as_str()];
    args.extend(status);
    let out = ignoring(&args);
    check(&out, "exec");
}

// Issue #33: the release returned nothing, so `delete --force` exited 0 with part of the container
// still on the host (here its private bundle, which holds a mount rloxsc will never remove through).
// It fails now, naming what is left and why; once the cause is gone a second `delete --force` gives
// everything back.
#[test]
fn delete_fails_while_something_cannot_be_given_back_and_a_retry_finishes() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("leak-release");
    let c = env.start_container(&base_spec(LONG_LIVED));
    let blocker = env.root.join("bundles").join(&c.id).join("blocker");
    std::fs::create_dir_all(&blocker).unwrap();
    let st = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=4k", "rxci-blocker"])
        .arg(&blocker)
        .status()
        .unwrap();
    assert!(st.success(), "mount a tmpfs at {}", blocker.display());
    let out = env.rloxsc(&["delete", "--force", &c.id]);
    let _ = std::process::Command::new("umount")
        .arg("-l")
        .arg(&blocker)
        .status();
    assert_ne!(
        out.code, 0,
        "delete reported success with a leftover: {out}"
    );
    assert_error(
        &out,
        &["cannot delete container", "blocker", "still mounted"],
    );
    env.rloxsc(&["delete", "--force", &c.id]).expect_ok();
    let id = c.id.clone();
    drop(c);
    env.assert_nothing_left(&id, "after the second delete --force");
}
