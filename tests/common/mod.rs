//! Shared harness of rloxsc's integration tests.
//!
//! Every test gets a [`TestEnv`]: a private directory under /tmp (removed on drop, even when the test
//! panics) holding its bundles, its `--root` state directory and the files that capture the output of
//! the commands it runs. Containers get unique ids ([`TestEnv::id`]) and a [`ContainerGuard`] that runs
//! `delete --force` on drop, so a failing test leaves nothing behind.
//!
//! Where things come from:
//! - the runtime: `RLOXSC_BIN`, else the binary cargo built for this test run;
//! - the fault-injection runtime: `RLOXSC_FAULT_BIN`, else `target/fault/x86_64-unknown-linux-gnu/release/rloxsc`;
//! - the root filesystem: `RLOXSC_TEST_ROOTFS`, else `bundles/demo/rootfs`.
//!
//! Missing prerequisites fail the test ([`require_prereqs`]) unless `RLOXSC_ALLOW_SKIP=1`.

#![allow(dead_code)]

use std::collections::BTreeSet;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// A payload that runs until it gets SIGTERM (then exits 0) or SIGKILL.
pub const LONG_LIVED: &[&str] = &[
    "sh",
    "-c",
    "trap \"exit 0\" TERM; while true; do sleep 1; done",
];

/// How long any single rloxsc invocation may take before the test gives up on it.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(120);

/// The PATH every test spec gives its process.
pub const CONTAINER_PATH: &str = "PATH=/usr/sbin:/usr/bin:/sbin:/bin";

/// Counter making container ids, bundle names and capture files unique within the test binary.
static SEQ: AtomicUsize = AtomicUsize::new(0);

fn next_seq() -> usize {
    SEQ.fetch_add(1, Ordering::SeqCst)
}

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The rloxsc binary under test.
pub fn rloxsc_bin() -> PathBuf {
    std::env::var_os("RLOXSC_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_rloxsc")))
}

/// The fault-injection build of rloxsc.
pub fn fault_bin() -> PathBuf {
    std::env::var_os("RLOXSC_FAULT_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            manifest_dir().join("target/fault/x86_64-unknown-linux-gnu/release/rloxsc")
        })
}

/// The shared test root filesystem (busybox + /bin/escape-demo).
pub fn test_rootfs() -> PathBuf {
    std::env::var_os("RLOXSC_TEST_ROOTFS")
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest_dir().join("bundles/demo/rootfs"))
}

/// The deliberately careless demo spec.
pub fn careless_config_path() -> PathBuf {
    manifest_dir().join("bundles/demo/config.careless.json")
}

/// Which binaries a test needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// The production binary (and root, and the rootfs).
    Runtime,
    /// The production binary and the fault-injection binary.
    FaultRuntime,
}

/// Checks that the test can run: root, the binaries it needs, the rootfs. Returns `true` when it can.
/// Otherwise it panics naming what is missing and how to get it, unless `RLOXSC_ALLOW_SKIP=1`, in which
/// case it prints `SKIPPED: <reason>` to stderr and returns `false` (the caller then returns).
pub fn require_prereqs(need: Need) -> bool {
    let mut missing = Vec::new();
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        missing.push("these tests must run as root (containers, cgroups, namespaces)".to_string());
    }
    let bin = rloxsc_bin();
    if !bin.is_file() {
        missing.push(format!(
            "rloxsc binary {} is missing: run `make build` (or `cargo build --release`), or set RLOXSC_BIN",
            bin.display()
        ));
    }
    if need == Need::FaultRuntime {
        let f = fault_bin();
        if !f.is_file() {
            missing.push(format!(
                "fault-injection binary {} is missing: run `make build-fault` (or `CARGO_TARGET_DIR=target/fault cargo build --release --features fault-injection`), or set RLOXSC_FAULT_BIN",
                f.display()
            ));
        }
    }
    let rootfs = test_rootfs();
    for needed in ["bin/busybox", "bin/sh", "bin/escape-demo"] {
        if fs::symlink_metadata(rootfs.join(needed)).is_err() {
            missing.push(format!(
                "test rootfs {} lacks {needed}: run `make bundles` (or `bash scripts/build-bundle.sh bundles/demo`), or set RLOXSC_TEST_ROOTFS",
                rootfs.display()
            ));
            break;
        }
    }
    if !careless_config_path().is_file() {
        missing.push(format!(
            "{} is missing from the checkout",
            careless_config_path().display()
        ));
    }
    if missing.is_empty() {
        return true;
    }
    let reason = missing.join("; ");
    if std::env::var("RLOXSC_ALLOW_SKIP").as_deref() == Ok("1") {
        eprintln!("SKIPPED: {reason}");
        return false;
    }
    panic!("prerequisites missing (set RLOXSC_ALLOW_SKIP=1 to skip instead): {reason}");
}

/// What a finished command did.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Exit status; 128+N when signal N ended it.
    pub code: i32,
    /// Everything it wrote to stdout.
    pub stdout: String,
    /// Everything it wrote to stderr.
    pub stderr: String,
    /// The command line, for messages.
    pub cmdline: String,
}

impl Outcome {
    /// Whether it exited 0.
    pub fn ok(&self) -> bool {
        self.code == 0
    }

    /// Panics with the full output unless it exited 0.
    pub fn expect_ok(&self) -> &Self {
        assert!(self.ok(), "command failed: {self}");
        self
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "`{}` exited {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.cmdline, self.code, self.stdout, self.stderr
        )
    }
}

/// Exit code of a status, 128+N for signal N.
pub fn exit_code(st: ExitStatus) -> i32 {
    st.code().unwrap_or_else(|| 128 + st.signal().unwrap_or(0))
}

/// Waits for `child` (a process this test started) for at most `timeout`; kills it by pid and panics
/// on timeout.
pub fn wait_child(child: &mut Child, timeout: Duration, what: &str) -> ExitStatus {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(st) = child.try_wait().expect("try_wait") {
            return st;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not finish within {timeout:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Polls `cond` every 20 ms until it holds or `timeout` passes; returns whether it held.
pub fn poll_until(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A test's private directory, state root and id namespace. Removed on drop.
pub struct TestEnv {
    /// The private directory under /tmp.
    pub dir: PathBuf,
    /// The `--root` state directory (inside `dir`).
    pub root: PathBuf,
    name: String,
}

impl TestEnv {
    /// A fresh environment for test `name`.
    pub fn new(name: &str) -> TestEnv {
        let name: String = name
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        let dir = std::env::temp_dir().join(format!(
            "rloxsc-it-{name}-{}-{}",
            std::process::id(),
            next_seq()
        ));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).expect("create test dir");
        let root = dir.join("state");
        TestEnv { dir, root, name }
    }

    /// A container id unique to this test run: `t-<testname>-<pid>-<counter>`.
    pub fn id(&self) -> String {
        format!("t-{}-{}-{}", self.name, std::process::id(), next_seq())
    }

    /// Prefix shared by every id [`TestEnv::id`] hands out.
    pub fn id_prefix(&self) -> String {
        format!("t-{}-{}-", self.name, std::process::id())
    }

    /// Writes `spec` as config.json of a new bundle directory and returns the directory.
    pub fn bundle(&self, spec: &Value) -> PathBuf {
        let b = self.dir.join(format!("bundle-{}", next_seq()));
        fs::create_dir_all(&b).expect("create bundle dir");
        fs::write(
            b.join("config.json"),
            serde_json::to_vec_pretty(spec).unwrap(),
        )
        .expect("write config.json");
        b
    }

    /// A command running `bin --root <root> args...` with stdin closed.
    pub fn command(&self, bin: &Path, args: &[&str]) -> Command {
        let mut c = Command::new(bin);
        c.arg("--root").arg(&self.root).args(args);
        c.stdin(Stdio::null());
        c.env_remove("RLOXSC_FAULT");
        c
    }

    /// Runs `cmd` to completion. Output goes to files (never pipes: a container's init inherits
    /// rloxsc's stdout and stderr and would keep a pipe open for as long as it lives).
    pub fn exec(&self, mut cmd: Command) -> Outcome {
        let (out_path, err_path) = self.capture_paths();
        cmd.stdout(fs::File::create(&out_path).unwrap());
        cmd.stderr(fs::File::create(&err_path).unwrap());
        let cmdline = format!("{cmd:?}");
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {cmdline}: {e}"));
        let st = wait_child(&mut child, COMMAND_TIMEOUT, &cmdline);
        Outcome {
            code: exit_code(st),
            stdout: fs::read_to_string(&out_path).unwrap_or_default(),
            stderr: fs::read_to_string(&err_path).unwrap_or_default(),
            cmdline,
        }
    }

    /// Two fresh capture files (stdout, stderr).
    pub fn capture_paths(&self) -> (PathBuf, PathBuf) {
        let n = next_seq();
        (
            self.dir.join(format!("out-{n}.stdout")),
            self.dir.join(format!("out-{n}.stderr")),
        )
    }

    /// Runs the production rloxsc with this test's `--root`.
    pub fn rloxsc(&self, args: &[&str]) -> Outcome {
        self.exec(self.command(&rloxsc_bin(), args))
    }

    /// A guard deleting container `id` (with the production binary) when dropped.
    pub fn guard(&self, id: &str) -> ContainerGuard {
        ContainerGuard {
            root: self.root.clone(),
            id: id.to_string(),
        }
    }

    /// `create --bundle <bundle> <id>`.
    pub fn create(&self, bundle: &Path, id: &str) -> Outcome {
        self.rloxsc(&["create", "--bundle", bundle.to_str().unwrap(), id])
    }

    /// `run --bundle <bundle> <id>` (foreground).
    pub fn run(&self, bundle: &Path, id: &str) -> Outcome {
        self.rloxsc(&["run", "--bundle", bundle.to_str().unwrap(), id])
    }

    /// Runs `spec` to completion under a fresh id; the container is force-deleted afterwards in any case.
    pub fn run_spec(&self, spec: &Value) -> Outcome {
        let id = self.id();
        let _g = self.guard(&id);
        let b = self.bundle(spec);
        self.run(&b, &id)
    }

    /// Runs `spec` to completion under a fresh id with the policy file `policy` (`--policy`).
    pub fn run_spec_with_policy(&self, spec: &Value, policy: &Path) -> Outcome {
        let id = self.id();
        let _g = self.guard(&id);
        let b = self.bundle(spec);
        self.rloxsc(&[
            "--policy",
            policy.to_str().unwrap(),
            "run",
            "--bundle",
            b.to_str().unwrap(),
            &id,
        ])
    }

    /// Runs `spec` to completion under a fresh id and asserts that `run` removed the container
    /// (before the guard could).
    pub fn run_spec_clean(&self, spec: &Value) -> Outcome {
        let id = self.id();
        let _g = self.guard(&id);
        let b = self.bundle(spec);
        let out = self.run(&b, &id);
        self.assert_nothing_left(&id, &format!("after run ({})", out.cmdline));
        out
    }

    /// Creates and starts `spec` (which should be long-lived) under a fresh id and returns it running.
    pub fn start_container(&self, spec: &Value) -> Running {
        let id = self.id();
        let guard = self.guard(&id);
        let bundle = self.bundle(spec);
        self.create(&bundle, &id).expect_ok();
        self.rloxsc(&["start", &id]).expect_ok();
        let st = self.state(&id).expect("state of a started container");
        assert_eq!(st["status"], "running", "{st}");
        let pid = st["pid"].as_i64().expect("pid in state") as i32;
        assert!(pid > 0, "{st}");
        Running {
            guard,
            id,
            pid,
            bundle,
        }
    }

    /// The parsed `state` of `id`, or `None` when `state` fails.
    pub fn state(&self, id: &str) -> Option<Value> {
        let o = self.rloxsc(&["state", id]);
        if !o.ok() {
            return None;
        }
        Some(
            serde_json::from_str(&o.stdout)
                .unwrap_or_else(|e| panic!("state is not JSON ({e}): {o}")),
        )
    }

    /// The status field of `state`, if any.
    pub fn status(&self, id: &str) -> Option<String> {
        self.state(id)
            .and_then(|s| s["status"].as_str().map(str::to_string))
    }

    /// Waits up to `timeout` for `id` to reach `want`.
    pub fn wait_for_status(&self, id: &str, want: &str, timeout: Duration) -> bool {
        poll_until(timeout, || self.status(id).as_deref() == Some(want))
    }

    /// Everything container `id` could have left behind: state directories under this test's root, its
    /// cgroup directories, and processes in its cgroup.
    pub fn leftovers(&self, id: &str) -> Vec<String> {
        let mut out = Vec::new();
        for d in [
            self.root.join("containers").join(id),
            self.root.join("bundles").join(id),
        ] {
            if fs::symlink_metadata(&d).is_ok() {
                out.push(format!("state directory {}", d.display()));
            }
        }
        out.extend(host_holdings_of(id));
        out.extend(
            cgroup_dirs_of(id)
                .into_iter()
                .map(|d| format!("cgroup {}", d.display())),
        );
        out.extend(pids_in_cgroup_of(id).into_iter().filter_map(|p| {
            describe_live_process(p).map(|d| format!("process {d} in cgroup /rloxsc/{id}"))
        }));
        out
    }

    /// Asserts container `id` left nothing behind. State directories must be gone at once; cgroups and
    /// processes get 2 s to disappear (the kernel reaps asynchronously).
    pub fn assert_nothing_left(&self, id: &str, context: &str) {
        let state_left: Vec<String> = self
            .leftovers(id)
            .into_iter()
            .filter(|l| l.starts_with("state directory"))
            .collect();
        assert!(
            state_left.is_empty(),
            "{context}: container {id} left {state_left:?}"
        );
        let mut left = Vec::new();
        let gone = poll_until(Duration::from_secs(2), || {
            left = self.leftovers(id);
            left.is_empty()
        });
        assert!(gone, "{context}: container {id} left {left:?}");
    }
}

impl Drop for TestEnv {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// Runs `delete --force <id>` when dropped, so that no container outlives its test.
pub struct ContainerGuard {
    root: PathBuf,
    id: String,
}

impl Drop for ContainerGuard {
    fn drop(&mut self) {
        let _ = Command::new(rloxsc_bin())
            .arg("--root")
            .arg(&self.root)
            .args(["delete", "--force", &self.id])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// A created and started container.
pub struct Running {
    /// Deletes the container when the test ends.
    pub guard: ContainerGuard,
    /// Its id.
    pub id: String,
    /// Its init's pid (from `state`).
    pub pid: i32,
    /// The caller's bundle directory.
    pub bundle: PathBuf,
}

/// A spec in the shape `runc spec` writes, with no terminal, `args`, the test PATH and the shared rootfs
/// by absolute path.
pub fn base_spec(args: &[&str]) -> Value {
    json!({
        "ociVersion": "1.0.2",
        "process": {
            "terminal": false,
            "user": {"uid": 0, "gid": 0},
            "args": args,
            "env": [CONTAINER_PATH],
            "cwd": "/",
            "capabilities": {
                "bounding": ["CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"],
                "effective": ["CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"],
                "permitted": ["CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"],
                "ambient": ["CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"]
            },
            "rlimits": [{"type": "RLIMIT_NOFILE", "hard": 1024, "soft": 1024}],
            "noNewPrivileges": true
        },
        "root": {"path": test_rootfs().to_str().unwrap(), "readonly": true},
        "hostname": "rloxsc-test",
        "mounts": [
            {"destination": "/proc", "type": "proc", "source": "proc"},
            {"destination": "/dev", "type": "tmpfs", "source": "tmpfs",
             "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]},
            {"destination": "/dev/pts", "type": "devpts", "source": "devpts",
             "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"]},
            {"destination": "/dev/shm", "type": "tmpfs", "source": "shm",
             "options": ["nosuid", "noexec", "nodev", "mode=1777", "size=65536k"]},
            {"destination": "/dev/mqueue", "type": "mqueue", "source": "mqueue",
             "options": ["nosuid", "noexec", "nodev"]},
            {"destination": "/sys", "type": "sysfs", "source": "sysfs",
             "options": ["nosuid", "noexec", "nodev", "ro"]},
            {"destination": "/sys/fs/cgroup", "type": "cgroup", "source": "cgroup",
             "options": ["nosuid", "noexec", "nodev", "relatime", "ro"]}
        ],
        "linux": {
            "resources": {"devices": [{"allow": false, "access": "rwm"}]},
            "namespaces": [
                {"type": "pid"}, {"type": "network"}, {"type": "ipc"},
                {"type": "uts"}, {"type": "mount"}, {"type": "cgroup"}
            ],
            "maskedPaths": ["/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys",
                            "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats",
                            "/proc/sched_debug", "/sys/firmware", "/proc/scsi"],
            "readonlyPaths": ["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"]
        }
    })
}

/// The careless demo spec (bundles/demo/config.careless.json) with the shared rootfs by absolute path
/// and, if given, `args` instead of /bin/escape-demo.
pub fn careless_spec(args: Option<&[&str]>) -> Value {
    let data = fs::read(careless_config_path()).expect("read config.careless.json");
    let mut spec: Value = serde_json::from_slice(&data).expect("config.careless.json is JSON");
    spec["root"]["path"] = json!(test_rootfs().to_str().unwrap());
    if let Some(a) = args {
        spec["process"]["args"] = json!(a);
    }
    spec
}

/// The shared rootfs path as a string.
pub fn rootfs_str() -> String {
    test_rootfs().to_str().unwrap().to_string()
}

/// Every existing cgroup directory `/sys/fs/cgroup/<hierarchy>/rloxsc/<id>` (v1 hierarchies and the
/// unified mount) and `/sys/fs/cgroup/rloxsc/<id>` (pure v2).
pub fn cgroup_dirs_of(id: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let base = Path::new("/sys/fs/cgroup");
    let direct = base.join("rloxsc").join(id);
    if direct.is_dir() {
        out.push(direct);
    }
    if let Ok(rd) = fs::read_dir(base) {
        for e in rd.flatten() {
            let d = e.path().join("rloxsc").join(id);
            if d.is_dir() {
                out.push(d);
            }
        }
    }
    out
}

/// Every directory directly under `/sys/fs/cgroup/*/rloxsc/` (the rloxsc parent cgroups).
pub fn rloxsc_cgroup_children() -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    let base = Path::new("/sys/fs/cgroup");
    let mut parents = vec![base.join("rloxsc")];
    if let Ok(rd) = fs::read_dir(base) {
        parents.extend(rd.flatten().map(|e| e.path().join("rloxsc")));
    }
    for p in parents {
        if let Ok(rd) = fs::read_dir(&p) {
            for e in rd.flatten() {
                if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                    out.insert(e.path());
                }
            }
        }
    }
    out
}

/// Pids of every process whose /proc/<pid>/cgroup places it in `/rloxsc/<id>` (any hierarchy).
pub fn pids_in_cgroup_of(id: &str) -> Vec<i32> {
    let suffix = format!("/rloxsc/{id}");
    let mut out = Vec::new();
    let Ok(rd) = fs::read_dir("/proc") else {
        return out;
    };
    for e in rd.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        if let Ok(cg) = fs::read_to_string(e.path().join("cgroup")) {
            if cg
                .lines()
                .any(|l| l.ends_with(&suffix) || l.contains(&format!("{suffix}/")))
            {
                out.push(pid);
            }
        }
    }
    out
}

/// The trimmed contents of a file, panicking with its path when unreadable.
pub fn read_trimmed(path: impl AsRef<Path>) -> String {
    let p = path.as_ref();
    fs::read_to_string(p)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()))
        .trim()
        .to_string()
}

/// (device, inode) of a namespace file, following the magic link (as `stat -L` does).
pub fn ns_id(path: impl AsRef<Path>) -> (u64, u64) {
    let p = path.as_ref();
    let m = fs::metadata(p).unwrap_or_else(|e| panic!("cannot stat {}: {e}", p.display()));
    (m.dev(), m.ino())
}

/// A field of a /proc/<pid>/status text (value trimmed).
pub fn status_field(status: &str, name: &str) -> Option<String> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .map(|v| v.trim().to_string())
}

/// Asserts `out` is a failure whose last stderr line is rloxsc's `rloxsc: ...` error containing every
/// phrase in `phrases`.
pub fn assert_error(out: &Outcome, phrases: &[&str]) {
    assert_ne!(out.code, 0, "expected a failure: {out}");
    let last = out
        .stderr
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_else(|| panic!("no error message on stderr: {out}"));
    assert!(
        last.starts_with("rloxsc: "),
        "last stderr line is not an `rloxsc: ...` error: {out}"
    );
    for p in phrases {
        assert!(last.contains(p), "error message lacks {p:?}: {out}");
    }
}

/// Asserts `out` failed with a message naming at least one of `keys` (policy keys), anywhere on stderr.
pub fn assert_error_names_one_of(out: &Outcome, keys: &[&str]) {
    assert_ne!(out.code, 0, "expected a failure: {out}");
    assert!(
        keys.iter().any(|k| out.stderr.contains(k)),
        "error names none of {keys:?}: {out}"
    );
}

/// Mount points of the test process's mount namespace at or below `dir` (a container's mounts live in
/// its own mount namespace: one showing up here is a leak).
pub fn mount_points_under(dir: &Path) -> Vec<String> {
    let prefix = dir.to_string_lossy().trim_end_matches('/').to_string();
    fs::read_to_string("/proc/self/mountinfo")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_whitespace().nth(4))
        .map(|mp| mp.replace("\\040", " "))
        .filter(|mp| *mp == prefix || mp.starts_with(&format!("{prefix}/")))
        .collect()
}

/// `pid`, its state, exe and argv, or None for a zombie or a process already gone. A zombie runs no
/// code and holds no cgroup (v1 and v2 let the directory be removed); /proc/<pid>/cgroup keeps naming
/// the container until the parent reaps it, and an orphan's parent is the machine's PID 1.
pub fn describe_live_process(pid: i32) -> Option<String> {
    let st = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let state = status_field(&st, "State").unwrap_or_default();
    if state.starts_with('Z') || state.starts_with('X') {
        return None;
    }
    let exe = fs::read_link(format!("/proc/{pid}/exe"))
        .map(|p| p.display().to_string())
        .unwrap_or_else(|e| format!("({e})"));
    let argv = fs::read(format!("/proc/{pid}/cmdline"))
        .map(|c| {
            String::from_utf8_lossy(&c)
                .replace('\0', " ")
                .trim()
                .to_string()
        })
        .unwrap_or_default();
    Some(format!(
        "{pid} ({state}, exe {exe}, ppid {}, argv {argv:?}, rloxsc binary: {})",
        status_field(&st, "PPid").unwrap_or_default(),
        runs_rloxsc(pid)
    ))
}

/// Whether process `pid` runs an rloxsc binary: its exe is the same file as the production or the
/// fault-injection binary (the sealed copy is a bind mount of it, whose path may not be reachable from
/// here once the process has its own mount namespace, so the file is compared, not the path), or its
/// exe path names rloxsc (the memfd fallback).
pub fn runs_rloxsc(pid: i32) -> bool {
    let exe = format!("/proc/{pid}/exe");
    let same_file = |a: &fs::Metadata, b: &Path| {
        fs::metadata(b).is_ok_and(|m| m.dev() == a.dev() && m.ino() == a.ino())
    };
    if let Ok(m) = fs::metadata(&exe) {
        if same_file(&m, &rloxsc_bin()) || same_file(&m, &fault_bin()) {
            return true;
        }
    }
    fs::read_link(&exe).is_ok_and(|p| p.to_string_lossy().contains("rloxsc"))
}

/// Processes in container `id`'s cgroup whose status lacks `Seccomp: 2` or `NoNewPrivs: 1`, skipping
/// rloxsc's own processes before the payload's execve ([`runs_rloxsc`]; the executor installs the
/// filter before any execve) and processes without an address space: zombies (`State: Z`/`X`;
/// /proc/<pid>/cgroup names the container until the parent reaps them) and processes already inside
/// exit() (mm released: exe and argv unreadable, state still `R`). Both were seen here when rloxsc
/// is SIGKILLed mid-`exec`/`run`: the orphaned runtime clone dies and is reparented to PID 1. The exe is read
/// before the status. Each entry names the exe, parent, state and argv, to tell what it was.
pub fn uncontained_processes_of(id: &str) -> Vec<String> {
    let mut bad = Vec::new();
    for pid in pids_in_cgroup_of(id) {
        if runs_rloxsc(pid) {
            continue;
        }
        let Ok(st) = fs::read_to_string(format!("/proc/{pid}/status")) else {
            continue;
        };
        let state = status_field(&st, "State").unwrap_or_default();
        // no address space (no `VmSize`): a zombie, or a process inside exit() whose memory is already
        // released (exe and argv unreadable, state still R); neither can run any code
        if state.starts_with('Z') || state.starts_with('X') || status_field(&st, "VmSize").is_none()
        {
            continue;
        }
        if status_field(&st, "Seccomp").as_deref() == Some("2")
            && status_field(&st, "NoNewPrivs").as_deref() == Some("1")
        {
            continue;
        }
        let exe = fs::read_link(format!("/proc/{pid}/exe"))
            .map(|p| p.display().to_string())
            .unwrap_or_else(|e| format!("({e})"));
        let cmd = fs::read(format!("/proc/{pid}/cmdline"))
            .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
            .unwrap_or_default();
        bad.push(format!(
            "pid {pid} (exe {exe}, state {state}, ppid {:?}, argv {:?}) Seccomp: {:?} NoNewPrivs: {:?}",
            status_field(&st, "PPid"),
            cmd.trim(),
            status_field(&st, "Seccomp"),
            status_field(&st, "NoNewPrivs")
        ));
    }
    bad
}

/// A hook (run by rloxsc in the host's namespaces, with the container's state on stdin) that adds an
/// interface without an address inside the container's network namespace: a dummy, or, on kernels
/// without the dummy driver, a veth pair with both ends inside.
pub fn interface_hook(env: &TestEnv) -> std::path::PathBuf {
    let hook = env.dir.join("add-interface.sh");
    std::fs::write(
        &hook,
        "#!/bin/sh\npid=$(sed -n 's/.*\"pid\": *\\([0-9]*\\).*/\\1/p')\n[ -n \"$pid\" ] || exit 3\n\
         nsenter -t \"$pid\" -n ip link add dummy0 type dummy 2>/dev/null || \
         exec nsenter -t \"$pid\" -n ip link add rlx0 type veth peer name rlx1\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    hook
}

/// A hook that puts `dummy0` into the container's network namespace and sets it up (as
/// Docker's libnetwork-setkey prestart hook does with the default bridge's veth; no address is given,
/// the kernel adds an IPv6 link-local one when it is up).
pub fn up_interface_hook(env: &TestEnv) -> std::path::PathBuf {
    let hook = env.dir.join("add-interface-up.sh");
    std::fs::write(
        &hook,
        "#!/bin/sh\npid=$(sed -n 's/.*\"pid\": *\\([0-9]*\\).*/\\1/p')\n[ -n \"$pid\" ] || exit 3\n\
         nsenter -t \"$pid\" -n ip link add dummy0 type dummy 2>/dev/null || \
         nsenter -t \"$pid\" -n ip link add dummy0 type veth peer name rlx1 || exit 4\n\
         exec nsenter -t \"$pid\" -n ip link set dummy0 up\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    hook
}

/// What rloxsc holds on the host for container `id` outside its state root: a view directory
/// (`/run/rloxsc-views/*/owner` names the id) and a block of host ids (`/run/rloxsc-userns/<base>`
/// names it).
pub fn host_holdings_of(id: &str) -> Vec<String> {
    let mut out = Vec::new();
    let names =
        |text: &str| text.lines().any(|l| l == id) || text.contains(&format!("\"id\":\"{id}\""));
    for (dir, file, what) in [
        ("/run/rloxsc-views", Some("owner"), "view directory"),
        ("/run/rloxsc-userns", None, "user-namespace block"),
    ] {
        let Ok(rd) = fs::read_dir(dir) else { continue };
        for e in rd.flatten() {
            let p = match file {
                Some(f) => e.path().join(f),
                None => e.path(),
            };
            if fs::read_to_string(&p).is_ok_and(|t| names(&t)) {
                out.push(format!("{what} {}", e.path().display()));
            }
        }
    }
    out
}

/// An overlay mount of the test image (overlayfs cannot be idmapped, as under Docker, Podman and
/// containerd), unmounted when dropped.
pub struct OverlayRoot {
    /// The mount point: the rootfs to give a spec (writes there land in the upper layer).
    pub merged: std::path::PathBuf,
    /// The upper layer (what was written to the image).
    pub upper: std::path::PathBuf,
}

impl OverlayRoot {
    /// Mounts it under the test's directory.
    pub fn new(env: &TestEnv) -> OverlayRoot {
        let d = env.dir.join(format!("ovl-{}", env.id()));
        for s in ["upper", "work", "merged"] {
            fs::create_dir_all(d.join(s)).unwrap();
        }
        let opts = format!(
            "lowerdir={},upperdir={},workdir={}",
            test_rootfs().display(),
            d.join("upper").display(),
            d.join("work").display()
        );
        let st = std::process::Command::new("mount")
            .args(["-t", "overlay", "overlay", "-o", &opts])
            .arg(d.join("merged"))
            .status()
            .unwrap();
        assert!(st.success(), "mount overlay");
        OverlayRoot {
            merged: d.join("merged"),
            upper: d.join("upper"),
        }
    }
}

impl Drop for OverlayRoot {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.merged)
            .status();
    }
}
