//! Bad input: every refusal exits non-zero with a clear `rloxsc: ...` message (naming the policy key
//! where there is one) and leaves nothing behind: no state directories, no cgroups, no processes.

mod common;

use std::path::Path;
use std::time::Duration;

use common::*;
use serde_json::{json, Value};

/// Creates a container from a bundle whose config.json holds `raw`, expects a failure mentioning every
/// phrase, and checks nothing was left behind.
fn refused_raw(name: &str, raw: &[u8], phrases: &[&str]) {
    let env = TestEnv::new(name);
    let id = env.id();
    let _g = env.guard(&id);
    let b = env.dir.join("bundle");
    std::fs::create_dir_all(&b).unwrap();
    std::fs::write(b.join("config.json"), raw).unwrap();
    let out = env.create(&b, &id);
    assert_error(&out, phrases);
    env.assert_nothing_left(&id, name);
}

/// As [`refused_raw`] for a spec.
fn refused(name: &str, spec: &Value, phrases: &[&str]) {
    refused_raw(name, &serde_json::to_vec(spec).unwrap(), phrases);
}

fn with_mount(mount: Value) -> Value {
    let mut spec = base_spec(LONG_LIVED);
    spec["mounts"].as_array_mut().unwrap().push(mount);
    spec
}

#[test]
fn malformed_json_is_refused() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    refused_raw("malformed", b"this is { not json", &["not valid JSON"]);
}

#[test]
fn truncated_json_is_refused() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let full = serde_json::to_vec(&base_spec(LONG_LIVED)).unwrap();
    refused_raw("truncated", &full[..full.len() / 2], &["not valid JSON"]);
}

#[test]
fn wrong_types_are_refused() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let mut spec = base_spec(LONG_LIVED);
    spec["process"]["args"] = json!("sh");
    refused("wrong-types", &spec, &["not a valid OCI runtime spec"]);
}

#[test]
fn missing_config_is_refused() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("no-config");
    let id = env.id();
    let _g = env.guard(&id);
    let b = env.dir.join("empty-bundle");
    std::fs::create_dir_all(&b).unwrap();
    let out = env.create(&b, &id);
    assert_error(&out, &["config.json"]);
    env.assert_nothing_left(&id, "missing config.json");
}

#[test]
fn missing_rootfs_is_refused() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let mut spec = base_spec(LONG_LIVED);
    spec["root"]["path"] = json!("/nonexistent/rloxsc-test-rootfs");
    refused("no-rootfs", &spec, &["does not exist", "filesystem.rootfs"]);
}

#[test]
fn symlinked_rootfs_is_refused() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("rootfs-link");
    let link = env.dir.join("rootfs-link");
    std::os::unix::fs::symlink(test_rootfs(), &link).unwrap();
    let mut spec = base_spec(LONG_LIVED);
    spec["root"]["path"] = json!(link.to_str().unwrap());
    let id = env.id();
    let _g = env.guard(&id);
    let out = env.create(&env.bundle(&spec), &id);
    assert_error(&out, &["symlink", "filesystem.rootfs"]);
    env.assert_nothing_left(&id, "symlinked rootfs");
}

#[test]
fn rootfs_with_symlinked_proc_is_refused() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("proc-link");
    let copy = env.dir.join("rootfs");
    let st = std::process::Command::new("cp")
        .arg("-a")
        .arg(test_rootfs())
        .arg(&copy)
        .status()
        .expect("cp");
    assert!(st.success(), "cp -a of the rootfs failed");
    let proc_dir = copy.join("proc");
    if proc_dir.is_dir() {
        std::fs::remove_dir_all(&proc_dir).unwrap();
    }
    std::os::unix::fs::symlink("/", &proc_dir).unwrap();
    let mut spec = base_spec(LONG_LIVED);
    spec["root"]["path"] = json!(copy.to_str().unwrap());
    let id = env.id();
    let _g = env.guard(&id);
    let out = env.create(&env.bundle(&spec), &id);
    assert_error(&out, &["/proc", "symlink", "filesystem.rootfs"]);
    env.assert_nothing_left(&id, "symlinked /proc");
}

#[test]
fn duplicate_id_is_refused_and_the_first_container_survives() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("dup-id");
    let c = env.start_container(&base_spec(LONG_LIVED));
    let other = env.bundle(&base_spec(LONG_LIVED));
    let out = env.create(&other, &c.id);
    assert_error(&out, &["already exists"]);
    let st = env.state(&c.id).expect("first container still known");
    assert_eq!(st["status"], "running", "{st}");
    assert_eq!(st["pid"].as_i64(), Some(c.pid as i64), "{st}");
    assert_eq!(st["bundle"], c.bundle.to_str().unwrap(), "{st}");
    assert!(Path::new(&format!("/proc/{}", c.pid)).exists());
    assert!(env.root.join("containers").join(&c.id).is_dir());
    assert!(env.root.join("bundles").join(&c.id).is_dir());
    assert!(
        !cgroup_dirs_of(&c.id).is_empty(),
        "first container lost its cgroup"
    );
    // and it still works normally
    env.rloxsc(&["kill", &c.id]).expect_ok();
    assert!(env.wait_for_status(&c.id, "stopped", Duration::from_secs(5)));
    env.rloxsc(&["delete", &c.id]).expect_ok();
    env.assert_nothing_left(&c.id, "after delete");
}

#[test]
fn unknown_id_does_not_exist_for_every_verb() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("unknown-id");
    let id = env.id();
    for args in [
        vec!["state", id.as_str()],
        vec!["start", id.as_str()],
        vec!["kill", id.as_str()],
        vec!["kill", id.as_str(), "KILL"],
        vec!["delete", id.as_str()],
    ] {
        let out = env.rloxsc(&args);
        assert_error(&out, &["does not exist"]);
    }
    env.assert_nothing_left(&id, "unknown id");
}

#[test]
fn delete_force_of_an_unknown_id_succeeds() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("unknown-force");
    let id = env.id();
    env.rloxsc(&["delete", "--force", &id]).expect_ok();
    env.assert_nothing_left(&id, "delete --force");
}

#[test]
fn bad_signal_is_refused_and_the_container_keeps_running() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("bad-signal");
    let c = env.start_container(&base_spec(LONG_LIVED));
    for sig in ["SIGNOPE", "65", "999"] {
        let out = env.rloxsc(&["kill", &c.id, sig]);
        assert_error(&out, &["invalid signal"]);
    }
    // Signal 0 is runc's liveness probe: it succeeds on a running container and signals nothing.
    env.rloxsc(&["kill", &c.id, "0"]).expect_ok();
    assert_eq!(env.status(&c.id).as_deref(), Some("running"));
}

#[test]
fn no_pivot_is_refused() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("no-pivot");
    let id = env.id();
    let _g = env.guard(&id);
    let b = env.bundle(&base_spec(LONG_LIVED));
    for verb in ["create", "run"] {
        let out = env.rloxsc(&[verb, "--no-pivot", "--bundle", b.to_str().unwrap(), &id]);
        assert_error(&out, &["--no-pivot is refused"]);
        env.assert_nothing_left(&id, verb);
    }
}

#[test]
fn bind_mount_of_host_root_is_refused() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    refused(
        "bind-root",
        &with_mount(
            json!({"destination": "/host", "type": "bind", "source": "/", "options": ["rbind", "ro"]}),
        ),
        &["mounts.sensitive_sources"],
    );
}

#[test]
fn bind_mount_of_docker_socket_is_refused() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    refused(
        "bind-docker",
        &with_mount(
            json!({"destination": "/var/run/docker.sock", "type": "bind",
                           "source": "/var/run/docker.sock", "options": ["bind"]}),
        ),
        &["mounts.sensitive_sources"],
    );
}

#[test]
fn bind_mount_of_host_proc_is_refused() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    refused(
        "bind-proc",
        &with_mount(
            json!({"destination": "/hostproc", "type": "bind", "source": "/proc", "options": ["rbind"]}),
        ),
        &["mounts.sensitive_sources"],
    );
    // the same without "type": bind recognised by its options
    refused(
        "bind-proc-notype",
        &with_mount(json!({"destination": "/hostproc", "source": "/proc", "options": ["rbind"]})),
        &["mounts.sensitive_sources"],
    );
}

#[test]
fn ext4_mount_is_refused() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    refused(
        "ext4",
        &with_mount(
            json!({"destination": "/disk", "type": "ext4", "source": "/dev/vda", "options": []}),
        ),
        &["mounts.allowed_types"],
    );
}

#[test]
fn missing_executable_is_refused() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    refused(
        "no-exe",
        &base_spec(&["rloxsc-no-such-program"]),
        &["executable file not found"],
    );
    let env = TestEnv::new("no-exe-run");
    let id = env.id();
    let _g = env.guard(&id);
    let out = env.run(&env.bundle(&base_spec(&["rloxsc-no-such-program"])), &id);
    assert_error(&out, &["executable file not found"]);
    env.assert_nothing_left(&id, "run of a missing executable");
}

// Regression: libcontainer's own error events used to reach stderr before the `rloxsc: ...` line when
// the container process failed (here: a missing executable).
#[test]
fn an_error_is_exactly_one_stderr_line() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("one-line");
    for (what, spec) in [
        (
            "refused mount",
            with_mount(json!({"destination": "/disk", "type": "ext4", "source": "/dev/vda"})),
        ),
        ("missing executable", base_spec(&["rloxsc-no-such-program"])),
    ] {
        let id = env.id();
        let _g = env.guard(&id);
        let out = env.create(&env.bundle(&spec), &id);
        assert_ne!(out.code, 0, "{what}: {out}");
        let lines: Vec<&str> = out
            .stderr
            .lines()
            .filter(|l| !l.trim().is_empty())
            .collect();
        assert_eq!(lines.len(), 1, "{what}: expected one error line: {out}");
        assert!(lines[0].starts_with("rloxsc: "), "{what}: {out}");
    }
}

#[test]
fn log_file_ends_with_the_error_as_json() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("log-error");
    let log = env.dir.join("error.log");
    for (what, spec, phrase) in [
        (
            "refused mount",
            with_mount(json!({"destination": "/disk", "type": "ext4", "source": "/dev/vda"})),
            "mounts.allowed_types",
        ),
        (
            "missing executable",
            base_spec(&["rloxsc-no-such-program"]),
            "executable file not found",
        ),
    ] {
        let id = env.id();
        let _g = env.guard(&id);
        let b = env.bundle(&spec);
        let out = env.rloxsc(&[
            "--log",
            log.to_str().unwrap(),
            "--log-format",
            "json",
            "create",
            "--bundle",
            b.to_str().unwrap(),
            &id,
        ]);
        assert_error(&out, &[phrase]);
        let text = std::fs::read_to_string(&log).expect("log file");
        let last = text
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or_else(|| panic!("{what}: empty log"));
        let v: Value = serde_json::from_str(last)
            .unwrap_or_else(|e| panic!("{what}: last log line is not JSON ({e}): {last}"));
        assert_eq!(v["level"], "error", "{what}: {last}");
        let msg = v["msg"].as_str().unwrap_or_default();
        assert!(msg.contains(phrase), "{what}: {last}");
        assert!(v["time"].is_string(), "{what}: {last}");
        let stderr_line = out.stderr.lines().rev().find(|l| !l.is_empty()).unwrap();
        assert_eq!(
            stderr_line,
            format!("rloxsc: error: {msg}"),
            "{what}: stderr and log disagree"
        );
        env.assert_nothing_left(&id, what);
    }
}

#[test]
fn invalid_ids_are_refused() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("bad-ids");
    let b = env.bundle(&base_spec(LONG_LIVED));
    for id in ["../escape", "a/b", ".", "..", "a b", ""] {
        let out = env.create(&b, id);
        assert_error(&out, &["invalid container id"]);
        let out = env.rloxsc(&["state", id]);
        assert_ne!(out.code, 0, "{out}");
    }
    assert!(
        !env.dir.join("escape").exists(),
        "an id escaped the state root"
    );
    assert!(
        !env.root.join("escape").exists(),
        "an id escaped containers/"
    );
    let containers = env.root.join("containers");
    let left: Vec<_> = std::fs::read_dir(&containers)
        .map(|rd| rd.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn unwritable_pid_file_fails_and_leaves_nothing() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("bad-pid-file");
    let id = env.id();
    let _g = env.guard(&id);
    let b = env.bundle(&base_spec(LONG_LIVED));
    let pid_file = env.dir.join("no-such-dir/init.pid");
    let out = env.rloxsc(&[
        "create",
        "--bundle",
        b.to_str().unwrap(),
        "--pid-file",
        pid_file.to_str().unwrap(),
        &id,
    ]);
    assert_error(&out, &["pid file"]);
    env.assert_nothing_left(&id, "unwritable pid file");
}

#[test]
fn terminal_without_console_socket_is_refused() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let mut spec = base_spec(LONG_LIVED);
    spec["process"]["terminal"] = json!(true);
    refused("terminal", &spec, &["--console-socket"]);
}

#[test]
fn unimplemented_verbs_say_so() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("unimplemented");
    for verb in ["checkpoint", "restore"] {
        let out = env.rloxsc(&[verb, "some-id"]);
        assert_error(&out, &["does not support checkpoint/restore"]);
    }
}

#[test]
fn huge_config_is_refused_without_reading_it_all() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    // 50 MB: a valid spec padded with a 50 MB env entry
    let mut spec = base_spec(LONG_LIVED);
    spec["process"]["env"]
        .as_array_mut()
        .unwrap()
        .push(json!(format!("PAD={}", "x".repeat(50 << 20))));
    refused_raw(
        "huge",
        &serde_json::to_vec(&spec).unwrap(),
        &["over 16 MiB"],
    );
}

#[test]
fn config_that_is_not_a_regular_file_is_refused_at_once() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("config-not-file");
    // /dev/zero (endless), a FIFO nobody writes to (would block), a directory
    for (what, make) in [
        ("dev-zero", "ln -s /dev/zero"),
        ("fifo", "mkfifo"),
        ("directory", "mkdir"),
    ] {
        let b = env.dir.join(format!("bundle-{what}"));
        std::fs::create_dir_all(&b).unwrap();
        let cfg = b.join("config.json");
        let st = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("{make} \"$0\""))
            .arg(&cfg)
            .status()
            .unwrap();
        assert!(st.success(), "{make} {}", cfg.display());
        let id = env.id();
        let _g = env.guard(&id);
        let t0 = std::time::Instant::now();
        let out = env.create(&b, &id);
        assert_error(&out, &["config.json"]);
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "{what}: took {:?}",
            t0.elapsed()
        );
        env.assert_nothing_left(&id, what);
    }
}

#[test]
fn odd_json_documents_are_refused() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    for (name, raw, phrase) in [
        ("empty", "".to_string(), "not valid JSON"),
        ("null", "null".to_string(), "not a valid OCI runtime spec"),
        // serde reads a struct from a sequence too: `[]` is an empty spec, which has no root
        ("array", "[]".to_string(), "config.json"),
        ("deep", deep, "not valid JSON"),
        (
            "nul",
            "{\"ociVersion\": \"1.0.2\0\"}".to_string(),
            "not valid JSON",
        ),
    ] {
        refused_raw(&format!("odd-{name}"), raw.as_bytes(), &[phrase]);
    }
    refused_raw(
        "odd-utf8",
        b"{\"ociVersion\": \"\xff\xfe\"}",
        &["not valid JSON"],
    );
}

#[test]
fn more_wrong_types_are_refused() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    for (i, (pointer, value)) in [
        ("/process", json!("sh")),
        ("/process/user/uid", json!("0")),
        ("/process/user/uid", json!(-1)),
        ("/process/capabilities/bounding", json!("CAP_SYS_ADMIN")),
        (
            "/process/capabilities/bounding",
            json!(["CAP_NO_SUCH_THING"]),
        ),
        (
            "/process/rlimits",
            json!([{"type": "RLIMIT_NOFILE", "hard": "many", "soft": 1}]),
        ),
        ("/mounts", json!({"destination": "/x"})),
        ("/linux", json!("linux")),
        ("/linux/namespaces", json!([{"type": "no-such-namespace"}])),
        ("/linux/resources/pids", json!({"limit": "max"})),
        ("/root", json!(null)),
    ]
    .into_iter()
    .enumerate()
    {
        let mut spec = base_spec(LONG_LIVED);
        let (parent, key) = pointer.rsplit_once('/').unwrap();
        let slot = if parent.is_empty() {
            &mut spec
        } else {
            spec.pointer_mut(parent)
                .unwrap_or_else(|| panic!("{parent}"))
        };
        slot[key] = value;
        let env = TestEnv::new(&format!("wrong-type-{i}"));
        let id = env.id();
        let _g = env.guard(&id);
        let out = env.create(&env.bundle(&spec), &id);
        assert_ne!(out.code, 0, "{pointer}: {out}");
        assert_error(&out, &[]);
        env.assert_nothing_left(&id, pointer);
    }
}

#[test]
fn rootfs_that_is_a_file_is_refused() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let mut spec = base_spec(LONG_LIVED);
    spec["root"]["path"] = json!(test_rootfs().join("bin/busybox").to_str().unwrap());
    refused(
        "rootfs-file",
        &spec,
        &["not a directory", "filesystem.rootfs"],
    );
}

/// Runs `create` of `spec` with rloxsc's working directory at `cwd`.
fn create_in(env: &TestEnv, cwd: &Path, spec: &Value, id: &str) -> Outcome {
    let b = env.bundle(spec);
    let mut cmd = env.command(
        &rloxsc_bin(),
        &["create", "--bundle", b.to_str().unwrap(), id],
    );
    cmd.current_dir(cwd);
    env.exec(cmd)
}

// Regression: a relative bind source is relative to the bundle (OCI), but libcontainer resolved it
// against rloxsc's working directory, unchecked: from cwd `/`, source `run/rloxsc` bind-mounted the
// runtime's state directory into the container.
#[test]
fn relative_bind_sources_resolve_in_the_bundle() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("rel-bind");
    // a sensitive path relative to cwd `/`, absent from the bundle: refused
    let mut spec = base_spec(LONG_LIVED);
    spec["mounts"].as_array_mut().unwrap().push(
        json!({"destination": "/mnt", "type": "bind", "source": "run", "options": ["rbind", "ro"]}),
    );
    let id = env.id();
    let _g = env.guard(&id);
    let out = create_in(&env, Path::new("/"), &spec, &id);
    assert_error(
        &out,
        &["must exist in the bundle", "mounts.sensitive_sources"],
    );
    env.assert_nothing_left(&id, "relative bind source outside the bundle");

    // `..` out of the bundle to the host's root: refused as what it resolves to
    let mut spec = base_spec(LONG_LIVED);
    spec["mounts"].as_array_mut().unwrap().push(
        json!({"destination": "/mnt", "type": "bind", "source": "../../../../../../..", "options": ["rbind", "ro"]}),
    );
    let id = env.id();
    let _g = env.guard(&id);
    let out = create_in(&env, Path::new("/"), &spec, &id);
    assert_error(&out, &["mounts.sensitive_sources"]);
    env.assert_nothing_left(&id, "relative bind source up to /");

    // a directory of the bundle: mounted from the bundle whatever the cwd
    let mut spec = base_spec(&["cat", "/mnt/marker"]);
    spec["mounts"]
        .as_array_mut()
        .unwrap()
        .push(json!({"destination": "/mnt", "type": "bind", "source": "data", "options": ["rbind", "ro"]}));
    let b = env.bundle(&spec);
    std::fs::create_dir_all(b.join("data")).unwrap();
    std::fs::write(b.join("data/marker"), "from-the-bundle\n").unwrap();
    let id = env.id();
    let _g = env.guard(&id);
    let mut cmd = env.command(
        &rloxsc_bin(),
        &["run", "--bundle", b.to_str().unwrap(), &id],
    );
    cmd.current_dir("/");
    let out = env.exec(cmd);
    out.expect_ok();
    assert_eq!(out.stdout, "from-the-bundle\n", "{out}");
    env.assert_nothing_left(&id, "relative bind source in the bundle");
}

// Regression: an absolute cgroupsPath with `..` made libcgroups create (and leave) directories outside
// cgroupfs; `/` and `.` named the root or the shared parent cgroup.
#[test]
fn cgroups_path_cannot_leave_the_cgroup_tree() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("cg-escape");
    let target = env.dir.join("escaped-cgroup");
    let escape = format!("/../../../../../..{}", target.display());
    for path in [escape.as_str(), "/", ".", "/rloxsc/.."] {
        let mut spec = base_spec(&["cat", "/proc/self/cgroup"]);
        spec["linux"]["cgroupsPath"] = json!(path);
        let id = env.id();
        let _g = env.guard(&id);
        let out = env.run(&env.bundle(&spec), &id);
        out.expect_ok();
        assert!(!target.exists(), "{path}: created {}", target.display());
        let flat = target.display().to_string().replace('/', "-");
        for name in ["rloxsc", flat.trim_matches('-')] {
            let left: Vec<_> = rloxsc_cgroup_children()
                .into_iter()
                .filter(|d| d.file_name().is_some_and(|n| n == name))
                .collect();
            assert!(left.is_empty(), "{path}: cgroups left: {left:?}");
        }
        let pids_line = out
            .stdout
            .lines()
            .find(|l| l.contains(":pids:"))
            .unwrap_or_default()
            .to_string();
        // the container's own cgroup namespace shows its cgroup as `/`; what matters is that it had
        // one below /rloxsc (checked from outside by verification) and that nothing was created
        assert!(
            !pids_line.is_empty() || out.stdout.contains("0::/"),
            "{out}"
        );
        env.assert_nothing_left(&id, path);
    }
}

// `--systemd-cgroup` where systemd cannot manage the container's cgroup (this project's hosts: no
// systemd as PID 1, cgroup v1 hybrid) is refused with the cause, as runc refuses it, instead of
// being ignored: the container would otherwise land in a cgroupfs cgroup its caller never looks at.
// (Under systemd on cgroup v2 the matrix's systemd-6.12 cell runs it: tests/matrix/cell.sh.)
#[test]
fn systemd_cgroup_without_systemd_is_refused_naming_the_cause() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    if std::path::Path::new("/run/systemd/system").is_dir()
        && !std::path::Path::new("/sys/fs/cgroup/pids").exists()
    {
        eprintln!("systemd runs on pure cgroup v2 here: the driver works (the matrix's systemd-6.12 cell tests it); nothing to refuse");
        return;
    }
    let env = TestEnv::new("systemd-driver");
    let id = env.id();
    let _g = env.guard(&id);
    let mut spec = base_spec(&["true"]);
    spec["linux"]["cgroupsPath"] = json!(format!("system.slice:rloxsc-test:{id}"));
    let b = env.bundle(&spec);
    for verb in ["create", "run"] {
        let out = env.rloxsc(&[
            "--systemd-cgroup",
            verb,
            "--bundle",
            b.to_str().unwrap(),
            &id,
        ]);
        assert_error(&out, &["--systemd-cgroup", "systemd", "cgroups.parent"]);
        env.assert_nothing_left(&id, "--systemd-cgroup refused");
    }
}

// A namespace path must be a namespace of the type it is given as (runtime-tools' linux_ns_path
// gives /proc/self/ns/pid as the network namespace, and so on): refused at create naming the path,
// the kind it is and `namespaces.join`, not a bare EINVAL from setns half way through create. A FIFO
// given as a namespace path is not opened (it would block create).
#[test]
fn namespace_paths_of_another_kind_are_refused_naming_the_path() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("ns-kind-fifo");
    let fifo = env.dir.join("ns-fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let cases = [
        (
            "network",
            "/proc/self/ns/ipc".to_string(),
            "is a namespace of type ipc",
        ),
        ("uts", "/etc/hostname".to_string(), "not a namespace file"),
        ("ipc", fifo.display().to_string(), "not a namespace file"),
    ];
    for (typ, path, phrase) in cases {
        let mut spec = base_spec(LONG_LIVED);
        let nss = spec["linux"]["namespaces"].as_array_mut().unwrap();
        nss.retain(|n| n["type"] != typ);
        nss.push(json!({"type": typ, "path": path}));
        refused(
            &format!("ns-kind-{typ}"),
            &spec,
            &[&path, phrase, "namespaces.join"],
        );
    }
}
