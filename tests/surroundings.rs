//! Issue #12, what surrounds the container: a local unprivileged user steering root's rloxsc through
//! files it trusts, a run killed or hung, and kernel limits the container shares with the host. Each
//! test failed against bdaba62 (the one before the change it guards): see each test's comment.

mod common;

use std::fs;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::*;
use serde_json::json;

const NOBODY: u32 = 65534;

/// Runs `argv` as the unprivileged user nobody (setpriv), to plant what a local user could.
fn as_nobody(argv: &[&str]) {
    let st = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .args(argv)
        .status()
        .expect("setpriv (util-linux)");
    assert!(st.success(), "as nobody: {argv:?}");
}

/// A directory anyone may write in, like /tmp (sticky, 1777), inside the test's own directory.
fn shared_dir(env: &TestEnv, name: &str) -> PathBuf {
    let d = env.dir.join(name);
    fs::create_dir_all(&d).unwrap();
    fs::set_permissions(&d, fs::Permissions::from_mode(0o1777)).unwrap();
    d
}

fn victim(env: &TestEnv) -> PathBuf {
    let v = env.dir.join("victim");
    fs::write(&v, "precious\n").unwrap();
    v
}

// bdaba62 accepted a world-writable policy file, one owned by another user, one in a directory
// another user can write, and the same through RLOXSC_POLICY.
#[test]
fn a_policy_file_a_local_user_could_write_is_refused() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("sur-policy");
    let bundle = env.bundle(&base_spec(&["true"]));
    let good_dir = env.dir.join("etc-rloxsc");
    fs::create_dir_all(&good_dir).unwrap();
    fs::set_permissions(&good_dir, fs::Permissions::from_mode(0o755)).unwrap();
    let policy = good_dir.join("policy.toml");
    let text = "[limits]\npids = { default = 4096, ceiling = 4096 }\n";
    let run = |env_policy: bool, path: &Path| {
        let id = env.id();
        let _g = env.guard(&id);
        let mut cmd = if env_policy {
            env.command(
                &rloxsc_bin(),
                &["run", "--bundle", bundle.to_str().unwrap(), &id],
            )
        } else {
            env.command(
                &rloxsc_bin(),
                &[
                    "--policy",
                    path.to_str().unwrap(),
                    "run",
                    "--bundle",
                    bundle.to_str().unwrap(),
                    &id,
                ],
            )
        };
        if env_policy {
            cmd.env("RLOXSC_POLICY", path);
        }
        env.exec(cmd)
    };
    // control: root's own file in a root-only directory is used
    fs::write(&policy, text).unwrap();
    fs::set_permissions(&policy, fs::Permissions::from_mode(0o644)).unwrap();
    run(false, &policy).expect_ok();
    for via_env in [false, true] {
        // world-writable
        fs::set_permissions(&policy, fs::Permissions::from_mode(0o666)).unwrap();
        assert_error(
            &run(via_env, &policy),
            &["writable by other users", "runtime.trusted_files"],
        );
        fs::set_permissions(&policy, fs::Permissions::from_mode(0o644)).unwrap();
        // owned by nobody
        std::os::unix::fs::chown(&policy, Some(NOBODY), None).unwrap();
        assert_error(
            &run(via_env, &policy),
            &["uid 65534", "runtime.trusted_files"],
        );
        std::os::unix::fs::chown(&policy, Some(0), None).unwrap();
        // in a directory nobody can write (even with the file root's and 0644)
        std::os::unix::fs::chown(&good_dir, Some(NOBODY), None).unwrap();
        assert_error(&run(via_env, &policy), &["runtime.trusted_files"]);
        std::os::unix::fs::chown(&good_dir, Some(0), None).unwrap();
        // a symlink nobody planted in a shared directory, to root's good file
        let shared = shared_dir(&env, &format!("shared-{via_env}"));
        let link = shared.join("policy.toml");
        as_nobody(&["ln", "-s", policy.to_str().unwrap(), link.to_str().unwrap()]);
        assert_error(
            &run(via_env, &link),
            &["symlink owned by uid 65534", "runtime.trusted_files"],
        );
    }
}

// bdaba62 wrote `<pid-file>.rloxsc-tmp-<its pid>` and `<record>.rloxsc-tmp-<its pid>` with
// fs::write, following a symlink a local user planted at that predictable name; and opened --log
// through a planted symlink.
#[test]
fn pid_file_record_and_log_never_follow_a_planted_symlink() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("sur-links");
    let victim = victim(&env);
    let shared = shared_dir(&env, "shared");
    // nobody plants symlinks at every temporary name the next few hundred pids would use
    // SAFETY: getpid has no preconditions
    let me = unsafe { libc::getpid() };
    let script = format!(
        "for i in $(seq {} {}); do ln -s {v} {d}/init.pid.rloxsc-tmp-$i; ln -s {v} {d}/rec.json.rloxsc-tmp-$i; done",
        me,
        me + 600,
        v = victim.display(),
        d = shared.display()
    );
    as_nobody(&["sh", "-c", &script]);
    let bundle = env.bundle(&base_spec(&["true"]));
    let id = env.id();
    let _g = env.guard(&id);
    let pid_file = shared.join("init.pid");
    let record = shared.join("rec.json");
    env.rloxsc(&[
        "run",
        "--pid-file",
        pid_file.to_str().unwrap(),
        "--record",
        record.to_str().unwrap(),
        "--bundle",
        bundle.to_str().unwrap(),
        &id,
    ])
    .expect_ok();
    assert_eq!(
        fs::read_to_string(&victim).unwrap(),
        "precious\n",
        "root wrote through a planted symlink"
    );
    assert!(fs::symlink_metadata(&pid_file)
        .unwrap()
        .file_type()
        .is_file());
    // a symlink planted as the final component itself is refused, for each of the three
    for (flag, name) in [("--pid-file", "p2"), ("--record", "r2"), ("--log", "l2")] {
        let link = shared.join(name);
        as_nobody(&["ln", "-s", victim.to_str().unwrap(), link.to_str().unwrap()]);
        let id = env.id();
        let _g = env.guard(&id);
        let out = if flag == "--log" {
            env.rloxsc(&[
                "--log",
                link.to_str().unwrap(),
                "run",
                "--bundle",
                bundle.to_str().unwrap(),
                &id,
            ])
        } else {
            env.rloxsc(&[
                "run",
                flag,
                link.to_str().unwrap(),
                "--bundle",
                bundle.to_str().unwrap(),
                &id,
            ])
        };
        assert!(
            out.stderr.contains("symlink"),
            "{flag} through a planted symlink: {out}"
        );
        assert_eq!(
            fs::read_to_string(&victim).unwrap(),
            "precious\n",
            "{flag}: root wrote through it"
        );
    }
}

// Issue #20 (15): `rloxsc --log D/x.log run --pid-file D/c.pid --record D/r.json` where D is a
// local user's symlink to a root-owned directory wrote root-owned files there. A symlink a user
// other than root owns is never followed on the way to a file rloxsc writes for its caller; a
// root-owned one (Debian's /var/run) still is.
#[test]
fn files_for_the_caller_never_follow_a_users_directory_symlink() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("sur-dirlink");
    let shared = shared_dir(&env, "shared");
    let roots = env.dir.join("roots-only");
    fs::create_dir_all(&roots).unwrap();
    let link = shared.join("d");
    as_nobody(&["ln", "-s", roots.to_str().unwrap(), link.to_str().unwrap()]);
    let bundle = env.bundle(&base_spec(&["true"]));
    for (flag, name) in [
        ("--pid-file", "c.pid"),
        ("--record", "r.json"),
        ("--log", "x.log"),
    ] {
        let id = env.id();
        let _g = env.guard(&id);
        let target = link.join(name);
        let out = if flag == "--log" {
            env.rloxsc(&[
                "--log",
                target.to_str().unwrap(),
                "run",
                "--bundle",
                bundle.to_str().unwrap(),
                &id,
            ])
        } else {
            env.rloxsc(&[
                "run",
                flag,
                target.to_str().unwrap(),
                "--bundle",
                bundle.to_str().unwrap(),
                &id,
            ])
        };
        assert!(
            out.stderr.contains("symlink owned by uid 65534"),
            "{flag} through a user's directory symlink: {out}"
        );
        assert!(
            !roots.join(name).exists(),
            "{flag}: root wrote {name} in the linked directory"
        );
    }
    // a root-owned link is followed
    let mine = env.dir.join("mine");
    std::os::unix::fs::symlink(&roots, &mine).unwrap();
    let id = env.id();
    let _g = env.guard(&id);
    env.rloxsc(&[
        "run",
        "--pid-file",
        mine.join("c.pid").to_str().unwrap(),
        "--bundle",
        bundle.to_str().unwrap(),
        &id,
    ])
    .expect_ok();
    assert!(roots.join("c.pid").exists());
}

// Issue #20 (3): the caller's pipes stayed host root's (`prw------- 65534 65534` inside), so the
// container could not reopen its own /dev/stdout (nginx and httpd log there). They are the
// process's user's now, as runc gives them.
#[test]
fn the_container_reopens_its_own_stdout() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("sur-stdio");
    let bundle = env.bundle(&base_spec(&[
        "sh",
        "-c",
        "echo via-dev-stdout > /dev/stdout && echo via-proc > /proc/self/fd/1 && echo err > /dev/stderr",
    ]));
    let id = env.id();
    let _g = env.guard(&id);
    let out = std::process::Command::new(rloxsc_bin())
        .arg("--root")
        .arg(&env.root)
        .args(["run", "--bundle", bundle.to_str().unwrap(), &id])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout} / {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stdout, "via-dev-stdout\nvia-proc\n");
    assert!(String::from_utf8_lossy(&out.stderr).contains("err"));
}

// bdaba62 accepted a --root owned by another user, and signalled whatever pid a state file named.
#[test]
fn a_state_root_or_state_a_local_user_controls_is_never_acted_on() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("sur-root");
    let foreign = env.dir.join("foreign-root");
    fs::create_dir_all(&foreign).unwrap();
    std::os::unix::fs::chown(&foreign, Some(NOBODY), Some(NOBODY)).unwrap();
    for verb in [
        vec!["list"],
        vec!["kill", "x", "9"],
        vec!["delete", "--force", "x"],
    ] {
        let mut cmd = std::process::Command::new(rloxsc_bin());
        cmd.arg("--root")
            .arg(&foreign)
            .args(&verb)
            .stdin(Stdio::null());
        let out = env.exec(cmd);
        assert_error(&out, &["state root", "runtime.trusted_files"]);
    }
    // a state whose init pid now names another process (recycled, or edited): never signalled
    let c = env.start_container(&base_spec(LONG_LIVED));
    let mut decoy = std::process::Command::new("sleep")
        .arg("300")
        .spawn()
        .unwrap();
    let state = env.root.join("containers").join(&c.id).join("state.json");
    let mut st: serde_json::Value = serde_json::from_slice(&fs::read(&state).unwrap()).unwrap();
    st["pid"] = json!(decoy.id());
    fs::write(&state, serde_json::to_vec(&st).unwrap()).unwrap();
    let out = env.rloxsc(&["kill", &c.id, "9"]);
    assert!(!out.ok(), "kill of a forged pid succeeded: {out}");
    assert!(
        decoy.try_wait().unwrap().is_none(),
        "the decoy process was killed"
    );
    let out = env.rloxsc(&["exec", &c.id, "true"]);
    assert!(!out.ok(), "exec joined a forged pid's namespaces: {out}");
    let _ = decoy.kill();
    let _ = decoy.wait();
    // put the real pid back so the guard cleans up
    st["pid"] = json!(c.pid);
    fs::write(&state, serde_json::to_vec(&st).unwrap()).unwrap();
}

// bdaba62 ran a container in a cgroup that already held host processes, and its end killed them.
#[test]
fn a_cgroup_that_holds_processes_is_never_the_containers() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("sur-cgroup");
    let name = format!("rloxsc-test-occupied-{}", std::process::id());
    let dir = Path::new("/sys/fs/cgroup/pids").join(&name);
    let dir = if dir.parent().unwrap().is_dir() {
        dir
    } else {
        Path::new("/sys/fs/cgroup").join(&name)
    };
    fs::create_dir_all(&dir).unwrap();
    let mut host = std::process::Command::new("sleep")
        .arg("300")
        .spawn()
        .unwrap();
    fs::write(dir.join("cgroup.procs"), host.id().to_string()).unwrap();
    let mut spec = base_spec(&["true"]);
    spec["linux"]["cgroupsPath"] = json!(format!("/{name}"));
    let id = env.id();
    let _g = env.guard(&id);
    let b = env.bundle(&spec);
    let out = env.run(&b, &id);
    assert_error(&out, &["already holds", "cgroups.parent"]);
    assert!(
        host.try_wait().unwrap().is_none(),
        "the host process in that cgroup was killed"
    );
    let _ = host.kill();
    let _ = host.wait();
    for _ in 0..50 {
        if fs::remove_dir(&dir).is_ok() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

// bdaba62 accepted a writable bind of the directory holding the runtime's binary.
#[test]
fn a_writable_bind_of_the_runtimes_directory_is_refused() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("sur-bindbin");
    let bin_dir = fs::canonicalize(rloxsc_bin())
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf();
    let mut spec = base_spec(&["true"]);
    let mounts = spec["mounts"].as_array_mut().unwrap();
    mounts.push(json!({"destination": "/host-bin", "type": "bind", "source": bin_dir, "options": ["rbind", "rw"]}));
    let out = env.run_spec(&spec);
    assert_error(&out, &["runtime's own binary", "mounts.sensitive_sources"]);
    // read-only is fine
    let mut spec = base_spec(&["true"]);
    let mounts = spec["mounts"].as_array_mut().unwrap();
    mounts.push(json!({"destination": "/host-bin", "type": "bind", "source": bin_dir, "options": ["rbind", "ro"]}));
    env.run_spec(&spec).expect_ok();
}

/// A prestart hook that never returns (`sleep <secs>` in the host's namespaces, before the payload).
fn hanging_hook_spec(args: &[&str], secs: &str) -> serde_json::Value {
    let mut spec = base_spec(args);
    spec["hooks"] = json!({"prestart": [{"path": "/bin/sleep", "args": ["sleep", secs]}]});
    spec
}

/// Reads a pipe to its end within `limit`; returns whether it ended (nobody held it open).
fn pipe_ends_within(mut r: impl Read + Send + 'static, limit: Duration) -> bool {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = r.read_to_end(&mut buf);
        let _ = tx.send(());
    });
    rx.recv_timeout(limit).is_ok()
}

// bdaba62 armed --timeout only after create: a create that hung made `run --timeout 3s` never return
// (and left no record); the policy had no bound for create at all.
#[test]
fn timeout_and_the_create_limit_bound_a_create_that_hangs() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("sur-deadline");
    let b = env.bundle(&hanging_hook_spec(&["true"], "1001"));
    let id = env.id();
    let _g = env.guard(&id);
    let record = env.dir.join("rec.json");
    let t0 = Instant::now();
    let mut cmd = env.command(
        &rloxsc_bin(),
        &[
            "run",
            "--timeout",
            "3s",
            "--record",
            record.to_str().unwrap(),
            "--bundle",
            b.to_str().unwrap(),
            &id,
        ],
    );
    cmd.stdout(Stdio::piped()).stderr(Stdio::null());
    let mut child = cmd.spawn().unwrap();
    let out = child.stdout.take().unwrap();
    let st = wait_child(
        &mut child,
        Duration::from_secs(30),
        "run --timeout 3s with a hanging create",
    );
    let took = t0.elapsed();
    assert_eq!(exit_code(st), 124, "exit status");
    assert!(took < Duration::from_secs(8), "took {took:?}");
    assert!(
        pipe_ends_within(out, Duration::from_secs(5)),
        "something still holds the caller's stdout"
    );
    let rec: serde_json::Value = serde_json::from_slice(&fs::read(&record).unwrap()).unwrap();
    assert_eq!(rec["status"], "timed_out", "{rec}");
    assert_eq!(rec["timed_out"], true);
    env.assert_nothing_left(&id, "after the timed-out create");
    assert!(
        !std::process::Command::new("pgrep")
            .args(["-f", "^sleep 1001$"])
            .status()
            .unwrap()
            .success(),
        "the hung hook survived"
    );

    // without --timeout, the policy's create limit bounds create (Docker's path) too
    let policy = env.dir.join("p.toml");
    fs::write(&policy, "[limits]\ncreate_timeout = 2\n").unwrap();
    let id = env.id();
    let _g = env.guard(&id);
    let t0 = Instant::now();
    let out = env.rloxsc(&[
        "--policy",
        policy.to_str().unwrap(),
        "create",
        "--bundle",
        b.to_str().unwrap(),
        &id,
    ]);
    assert!(t0.elapsed() < Duration::from_secs(8));
    assert_error(&out, &["not created within", "limits.create_timeout"]);
    env.assert_nothing_left(&id, "after the create past its limit");
}

// bdaba62: a `run` SIGKILLed left its container (and the caller's pipes held by it) behind.
#[test]
fn a_killed_foreground_run_leaves_nothing_and_no_open_pipe() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("sur-killed");
    for stage in ["running", "creating"] {
        let spec = if stage == "running" {
            base_spec(&["sleep", "1002"])
        } else {
            hanging_hook_spec(&["sleep", "1002"], "1003")
        };
        let b = env.bundle(&spec);
        let id = env.id();
        let _g = env.guard(&id);
        let mut cmd = env.command(
            &rloxsc_bin(),
            &["run", "--bundle", b.to_str().unwrap(), &id],
        );
        cmd.stdout(Stdio::piped()).stderr(Stdio::null());
        let mut child = cmd.spawn().unwrap();
        let out = child.stdout.take().unwrap();
        let want = if stage == "running" {
            "running"
        } else {
            "creating"
        };
        assert!(
            poll_until(Duration::from_secs(20), || {
                if want == "running" {
                    env.status(&id).as_deref() == Some("running")
                } else {
                    env.root.join("containers").join(&id).exists()
                }
            }),
            "{stage}: the container never got there"
        );
        std::thread::sleep(Duration::from_millis(200));
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(
            pipe_ends_within(out, Duration::from_secs(5)),
            "{stage}: the caller's stdout is still held open"
        );
        assert!(
            poll_until(Duration::from_secs(10), || env.leftovers(&id).is_empty()),
            "{stage}: left behind: {:?}",
            env.leftovers(&id)
        );
        assert!(
            poll_until(Duration::from_secs(5), || !std::process::Command::new(
                "pgrep"
            )
            .args(["-f", "^sleep 100[23]$"])
            .status()
            .unwrap()
            .success()),
            "{stage}: the payload or the hung hook survived the killed run"
        );
    }
}

// bdaba62: no devpts max=, so one container could take every pty of the pool other containers
// share; native AIO (fs.aio-max-nr, host-wide) was allowed; TIOCSTI was allowed by the filter.
#[test]
fn ptys_aio_and_terminal_injection_are_bounded_or_denied() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("sur-limits");
    let out = env.run_spec(&base_spec(&["/bin/seccomp-probe", "ptys"]));
    out.expect_ok();
    let n: u64 = out
        .stdout
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or(u64::MAX);
    assert!(n <= 64, "the container opened {n} ptys: {out}");
    assert!(n >= 8, "the container got only {n} ptys: {out}");
    // io_setup(65536, &ctx): ENOSYS, before the kernel could reserve anything
    let out = env.run_spec(&base_spec(&[
        "/bin/seccomp-probe",
        "call",
        "206",
        "65536",
        "0",
    ]));
    assert_eq!(
        out.stdout.trim(),
        "errno 38 Function not implemented",
        "{out}"
    );
    // TIOCSTI (0x5412), also with high bits set, and TIOCLINUX (0x541C): EPERM from the filter
    for req in ["0x5412", "0x100005412", "0x541C"] {
        let out = env.run_spec(&base_spec(&[
            "/bin/seccomp-probe",
            "call",
            "16",
            "0",
            req,
            "0",
        ]));
        assert_eq!(
            out.stdout.trim(),
            "errno 1 Operation not permitted",
            "ioctl {req}: {out}"
        );
    }
}

// Issue #30: rloxsc started by an ordinary user, or as root of a user namespace (rootless Podman),
// failed with "refusing the state root /run/rloxsc: the directory / is owned by uid 65534", then a
// warning about the read-only bind of its own binary. It now refuses at once, naming the cause
// (no host root; cgroup v1 gives a user no pids or memory controller), the fix and the policy keys,
// for every verb that acts on containers, and makes nothing; `doctor` says the same.
#[test]
fn without_the_hosts_root_every_container_verb_is_refused_with_the_cause() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("sur-rootless");
    // a copy anyone may execute (the build tree may not be reachable for nobody)
    let bin = env.dir.join("rloxsc");
    fs::copy(rloxsc_bin(), &bin).unwrap();
    fs::set_permissions(&env.dir, fs::Permissions::from_mode(0o755)).unwrap();
    fs::set_permissions(&bin, fs::Permissions::from_mode(0o755)).unwrap();
    let bundle = env.bundle(&base_spec(&["true"]));
    fs::set_permissions(&bundle, fs::Permissions::from_mode(0o755)).unwrap();
    let state = env.dir.join("user-state");
    let b = bundle.to_str().unwrap();
    let st = state.to_str().unwrap();
    let bin_s = bin.to_str().unwrap();
    let as_user: &[&str] = &[
        "setpriv",
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        "--",
    ];
    let in_userns: &[&str] = &["unshare", "--user", "--map-root-user", "--"];
    let verbs: [&[&str]; 4] = [
        &["run", "--bundle", b, "rl1"],
        &["create", "--bundle", b, "rl2"],
        &["list"],
        &["delete", "--force", "rl1"],
    ];
    for (who, prefix) in [
        ("an ordinary user", as_user),
        ("root of a user namespace", in_userns),
    ] {
        for verb in verbs {
            let mut argv: Vec<&str> = prefix.to_vec();
            argv.extend([bin_s, "--root", st]);
            argv.extend(verb);
            let mut cmd = std::process::Command::new(argv[0]);
            cmd.args(&argv[1..]).stdin(Stdio::null());
            let out = env.exec(cmd);
            assert_ne!(out.code, 0, "{who}: {out}");
            assert_error(
                &out,
                &[
                    "without the host's root",
                    "cgroup v2",
                    "Delegate=yes",
                    "limits.pids",
                    "limits.memory",
                ],
            );
            assert!(
                !out.stderr.contains("/run/rloxsc") && !out.stderr.contains("the directory /"),
                "{who}: {out}"
            );
            if cgroups_v1() {
                assert!(out.stderr.contains("cgroups are v1"), "{who}: {out}");
            }
        }
        assert!(!state.exists(), "{who}: a state root was made");
    }
    let mut cmd = std::process::Command::new("setpriv");
    cmd.args(&as_user[1..])
        .args([bin_s, "doctor"])
        .stdin(Stdio::null());
    let out = env.exec(cmd);
    assert!(
        out.stdout
            .contains("[FAIL] rootless: rloxsc runs as uid 65534, not root"),
        "{out}"
    );
}

/// Whether this host's cgroups are v1 (or hybrid): no cgroup2 mount at /sys/fs/cgroup itself.
fn cgroups_v1() -> bool {
    !Path::new("/sys/fs/cgroup/cgroup.controllers").exists()
}
