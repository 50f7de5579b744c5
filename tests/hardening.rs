//! The mandatory hardening, checked on containers made from the deliberately careless demo spec: from
//! outside (what the kernel says about the container's init and its cgroups) and from inside (what a
//! payload can and cannot do).

mod common;

use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::*;
use serde_json::json;

/// Capability numbers that must never be held.
const FORBIDDEN_BITS: &[(u32, &str)] = &[
    (2, "CAP_DAC_READ_SEARCH"),
    (12, "CAP_NET_ADMIN"),
    (13, "CAP_NET_RAW"),
    (16, "CAP_SYS_MODULE"),
    (19, "CAP_SYS_PTRACE"),
    (21, "CAP_SYS_ADMIN"),
    (27, "CAP_MKNOD"),
];

/// CHOWN 0, DAC_OVERRIDE 1, FOWNER 3, FSETID 4, KILL 5, SETGID 6, SETUID 7, SETPCAP 8,
/// NET_BIND_SERVICE 10, AUDIT_WRITE 29, SETFCAP 31.
const ALLOWED_MASK: u64 = (1 << 0)
    | (1 << 1)
    | (1 << 3)
    | (1 << 4)
    | (1 << 5)
    | (1 << 6)
    | (1 << 7)
    | (1 << 8)
    | (1 << 10)
    | (1 << 29)
    | (1 << 31);

/// Interfaces the kernel puts in every new network namespace when tunnel modules are loaded.
const FALLBACK_DEVICES: &[&str] = &[
    "lo", "sit0", "tunl0", "ip6tnl0", "gre0", "gretap0", "erspan0", "ip6gre0", "ip6_vti0",
    "ip_vti0",
];

fn careless_running(env: &TestEnv) -> Running {
    env.start_container(&careless_spec(Some(LONG_LIVED)))
}

fn proc_status(pid: i32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/status")).expect("read /proc/<pid>/status")
}

/// Interface names of a /proc/net/dev text.
fn interfaces(netdev: &str) -> Vec<String> {
    netdev
        .lines()
        .skip(2)
        .filter_map(|l| l.split_once(':').map(|(n, _)| n.trim().to_string()))
        .collect()
}

fn assert_only_loopback(netdev: &str) {
    let ifs = interfaces(netdev);
    assert!(ifs.iter().any(|i| i == "lo"), "no lo in {netdev}");
    let extra: Vec<&String> = ifs
        .iter()
        .filter(|i| !FALLBACK_DEVICES.contains(&i.as_str()))
        .collect();
    assert!(extra.is_empty(), "interfaces besides loopback: {extra:?}");
}

// ---------------------------------------------------------------------------------------------------
// From outside

#[test]
fn outside_no_new_privs_and_seccomp_filter_mode() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("out-nnp");
    let c = careless_running(&env);
    let st = proc_status(c.pid);
    assert_eq!(
        status_field(&st, "NoNewPrivs").as_deref(),
        Some("1"),
        "{st}"
    );
    assert_eq!(status_field(&st, "Seccomp").as_deref(), Some("2"), "{st}");
}

#[test]
fn outside_capability_sets_are_clamped() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("out-caps");
    let c = careless_running(&env);
    let st = proc_status(c.pid);
    for set in ["CapEff", "CapPrm", "CapBnd", "CapInh", "CapAmb"] {
        let v = status_field(&st, set).unwrap_or_else(|| panic!("no {set} in {st}"));
        let mask = u64::from_str_radix(&v, 16).unwrap_or_else(|e| panic!("{set} {v}: {e}"));
        assert_eq!(
            mask & !ALLOWED_MASK,
            0,
            "{set} = {v} holds capabilities outside the allowed set"
        );
        for (bit, name) in FORBIDDEN_BITS {
            assert_eq!(mask & (1 << bit), 0, "{set} = {v} holds {name}");
        }
    }
}

#[test]
fn outside_every_namespace_is_new() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("out-ns");
    let c = careless_running(&env);
    for ns in ["pid", "mnt", "ipc", "uts", "net", "cgroup"] {
        let theirs = ns_id(format!("/proc/{}/ns/{ns}", c.pid));
        let ours = ns_id(format!("/proc/self/ns/{ns}"));
        assert_ne!(
            theirs, ours,
            "the container shares the host's {ns} namespace"
        );
    }
}

#[test]
fn outside_network_namespace_has_only_loopback() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("out-net");
    let c = careless_running(&env);
    let netdev = std::fs::read_to_string(format!("/proc/{}/net/dev", c.pid)).expect("read net/dev");
    assert_only_loopback(&netdev);
}

#[test]
fn outside_default_pids_and_memory_limits() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("out-limits");
    let c = careless_running(&env);
    let pids = format!("/sys/fs/cgroup/pids/rloxsc/{}", c.id);
    let mem = format!("/sys/fs/cgroup/memory/rloxsc/{}", c.id);
    assert_eq!(read_trimmed(format!("{pids}/pids.max")), "512");
    assert_eq!(
        read_trimmed(format!("{mem}/memory.limit_in_bytes")),
        "536870912"
    );
    let memsw = format!("{mem}/memory.memsw.limit_in_bytes");
    if std::path::Path::new(&memsw).exists() {
        assert_eq!(read_trimmed(&memsw), "536870912", "swap above memory");
    }
    let procs = read_trimmed(format!("{pids}/cgroup.procs"));
    assert!(
        procs.lines().any(|l| l.trim() == c.pid.to_string()),
        "init {} is not in {pids}: {procs}",
        c.pid
    );
}

#[test]
fn outside_root_mount_is_read_only() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("out-ro");
    let c = careless_running(&env);
    let mi = std::fs::read_to_string(format!("/proc/{}/mountinfo", c.pid)).expect("mountinfo");
    // the last mount on "/" is the one the container sees
    let root = mi
        .lines()
        .rev()
        .find(|l| l.split_whitespace().nth(4) == Some("/"))
        .unwrap_or_else(|| panic!("no root mount in {mi}"));
    let opts = root.split_whitespace().nth(5).unwrap_or("");
    assert!(
        opts.split(',').any(|o| o == "ro"),
        "root mount is not ro: {root}"
    );
}

#[test]
fn outside_rlimits_are_set() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("out-rlimits");
    let c = careless_running(&env);
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", c.pid)).expect("limits");
    let values = |label: &str| -> Vec<String> {
        limits
            .lines()
            .find(|l| l.starts_with(label))
            .unwrap_or_else(|| panic!("no {label} in {limits}"))[label.len()..]
            .split_whitespace()
            .take(2)
            .map(str::to_string)
            .collect()
    };
    assert_eq!(values("Max open files"), ["1024", "1024"], "{limits}");
    assert_eq!(values("Max core file size"), ["0", "0"], "{limits}");
}

// ---------------------------------------------------------------------------------------------------
// From inside

/// Runs `script` with `sh -c` in a container of the careless spec and returns its stdout, asserting
/// the run succeeded.
fn inside(env: &TestEnv, script: &str) -> String {
    let out = env.run_spec(&careless_spec(Some(&["sh", "-c", script])));
    assert_eq!(out.code, 0, "payload failed: {out}");
    out.stdout
}

fn assert_line(stdout: &str, want: &str) {
    assert!(
        stdout.lines().any(|l| l.trim() == want),
        "expected a line {want:?} in:\n{stdout}"
    );
}

#[test]
fn inside_root_is_read_only_and_tmp_is_writable_up_to_the_store() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("in-ro");
    // the default store is 256 MiB (half the default memory limit of 512 MiB): filling /tmp ends in
    // ENOSPC there, not in an OOM kill
    let out = inside(
        &env,
        "if touch /probe 2>/dev/null; then echo root=writable; else echo root=readonly; fi; \
         if touch /tmp/ok; then echo tmp=writable; else echo tmp=readonly; fi; \
         grep ' /tmp ' /proc/self/mountinfo; \
         dd if=/dev/zero of=/tmp/fill bs=1M count=400 2>&1 | grep -o 'No space left on device'; \
         echo filled=$(($(wc -c < /tmp/fill) / 1048576))",
    );
    assert_line(&out, "root=readonly");
    assert_line(&out, "tmp=writable");
    let tmp = out
        .lines()
        .find(|l| l.split_whitespace().nth(4) == Some("/tmp"))
        .unwrap_or_else(|| panic!("no /tmp mount: {out}"));
    assert!(
        tmp.contains(" - overlay rloxsc-"),
        "/tmp is not a window onto rloxsc's overlay: {tmp}"
    );
    for flag in ["nosuid", "nodev", "rw"] {
        assert!(
            tmp.split_whitespace()
                .nth(5)
                .is_some_and(|o| o.split(',').any(|x| x == flag)),
            "/tmp lacks {flag}: {tmp}"
        );
    }
    assert!(
        out.contains("No space left on device"),
        "/tmp was not bounded: {out}"
    );
    let filled: u64 = out
        .lines()
        .find_map(|l| l.strip_prefix("filled="))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no fill size: {out}"));
    assert!(
        (200..=256).contains(&filled),
        "{filled} MiB written before ENOSPC"
    );
}

#[test]
fn inside_status_shows_seccomp_and_no_new_privs() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("in-status");
    let out = inside(&env, "cat /proc/self/status");
    assert_eq!(status_field(&out, "Seccomp").as_deref(), Some("2"), "{out}");
    assert_eq!(
        status_field(&out, "NoNewPrivs").as_deref(),
        Some("1"),
        "{out}"
    );
    let eff = status_field(&out, "CapEff").expect("CapEff");
    assert_eq!(
        u64::from_str_radix(&eff, 16).unwrap() & !ALLOWED_MASK,
        0,
        "CapEff {eff}"
    );
}

#[test]
fn inside_cgroupfs_is_read_only() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("in-cgroupfs");
    let out = inside(
        &env,
        "if echo 100000 > /sys/fs/cgroup/pids/pids.max; then echo pids=writable; else echo pids=readonly; fi; \
         if echo 0 > /sys/fs/cgroup/memory/memory.limit_in_bytes; then echo mem=writable; else echo mem=readonly; fi",
    );
    assert_line(&out, "pids=readonly");
    assert_line(&out, "mem=readonly");
}

#[test]
fn inside_proc_sys_is_read_only() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("in-procsys");
    let out = inside(
        &env,
        "if echo 1 > /proc/sys/kernel/ns_last_pid; then echo nslp=writable; else echo nslp=readonly; fi; \
         if echo rloxsc > /proc/sys/kernel/hostname; then echo host=writable; else echo host=readonly; fi; \
         if echo h > /proc/sysrq-trigger; then echo sysrq=writable; else echo sysrq=readonly; fi",
    );
    assert_line(&out, "nslp=readonly");
    assert_line(&out, "host=readonly");
    assert_line(&out, "sysrq=readonly");
}

#[test]
fn inside_kernel_files_are_masked() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("in-masked");
    let out = inside(
        &env,
        "echo kcore=$(cat /proc/kcore 2>/dev/null | wc -c); \
         echo keys=$(cat /proc/keys 2>/dev/null | wc -c); \
         echo timer_list=$(cat /proc/timer_list 2>/dev/null | wc -c); \
         echo firmware=$(ls -A /sys/firmware 2>/dev/null | wc -l)",
    );
    for f in ["kcore", "keys", "timer_list"] {
        assert_line(&out, &format!("{f}=0"));
    }
    assert_line(&out, "firmware=0");
}

#[test]
fn inside_mount_is_denied() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("in-mount");
    let out = inside(
        &env,
        "if mount -t tmpfs none /mnt 2>/dev/null; then echo tmpfs=mounted; else echo tmpfs=denied; fi; \
         if mount -t proc proc /mnt 2>/dev/null; then echo proc=mounted; else echo proc=denied; fi",
    );
    assert_line(&out, "tmpfs=denied");
    assert_line(&out, "proc=denied");
}

#[test]
fn inside_user_namespace_is_denied() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    assert!(
        test_rootfs().join("bin/unshare").exists(),
        "the test rootfs has no busybox unshare applet"
    );
    let env = TestEnv::new("in-userns");
    let out = inside(
        &env,
        "if unshare -U true; then echo userns=created; else echo userns=denied; fi",
    );
    assert_line(&out, "userns=denied");
}

#[test]
fn inside_only_loopback_is_visible() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("in-net");
    let out = inside(&env, "cat /proc/net/dev; echo ---; ls /sys/class/net");
    let (netdev, class) = out.split_once("---\n").expect("two parts");
    assert_only_loopback(netdev);
    let names: Vec<&str> = class.split_whitespace().collect();
    assert!(names.contains(&"lo"), "{class}");
    for n in names {
        assert!(FALLBACK_DEVICES.contains(&n), "/sys/class/net shows {n}");
    }
}

/// A listener on the host's 127.0.0.1:47123 (python3's http.server), killed by pid on drop.
struct HostListener(Child);

impl HostListener {
    fn start() -> HostListener {
        let child = Command::new("python3")
            .args(["-m", "http.server", "--bind", "127.0.0.1", "47123"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 is needed for the host listener of the escape demo");
        let l = HostListener(child);
        let up = poll_until(Duration::from_secs(10), || {
            TcpStream::connect(("127.0.0.1", 47123)).is_ok()
        });
        assert!(up, "nothing listens on the host's 127.0.0.1:47123");
        l
    }
}

impl Drop for HostListener {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn escape_demo_is_fully_contained() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("escape-demo");
    let _listener = HostListener::start();
    let out = env.run_spec(&careless_spec(None));
    assert!(
        out.stdout
            .lines()
            .any(|l| l.trim() == "summary: 6 contained, 0 escaped"),
        "{out}"
    );
    assert!(!out.stdout.contains("[ESCAPED]"), "{out}");
    assert_eq!(out.code, 0, "{out}");
}

fn with_limits(pids: i64, memory: i64) -> serde_json::Value {
    let mut spec = careless_spec(Some(LONG_LIVED));
    spec["linux"]["resources"] = json!({
        "pids": {"limit": pids},
        "memory": {"limit": memory, "swap": memory}
    });
    spec
}

#[test]
fn lower_limits_are_kept() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("limits-low");
    let c = env.start_container(&with_limits(64, 64 * 1024 * 1024));
    assert_eq!(
        read_trimmed(format!("/sys/fs/cgroup/pids/rloxsc/{}/pids.max", c.id)),
        "64"
    );
    assert_eq!(
        read_trimmed(format!(
            "/sys/fs/cgroup/memory/rloxsc/{}/memory.limit_in_bytes",
            c.id
        )),
        (64 * 1024 * 1024).to_string()
    );
}

#[test]
fn excessive_limits_are_clamped_to_the_ceilings() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("limits-high");
    let c = env.start_container(&with_limits(100_000, 64 * 1024 * 1024 * 1024));
    assert_eq!(
        read_trimmed(format!("/sys/fs/cgroup/pids/rloxsc/{}/pids.max", c.id)),
        "4096"
    );
    assert_eq!(
        read_trimmed(format!(
            "/sys/fs/cgroup/memory/rloxsc/{}/memory.limit_in_bytes",
            c.id
        )),
        (16u64 * 1024 * 1024 * 1024).to_string()
    );
}

#[test]
fn joining_the_host_namespaces_gives_new_ones() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("join-host-ns");
    let me = std::process::id();
    let mut spec = careless_spec(Some(LONG_LIVED));
    spec["linux"]["namespaces"] = json!([
        {"type": "pid", "path": format!("/proc/{me}/ns/pid")},
        {"type": "network", "path": format!("/proc/{me}/ns/net")},
        {"type": "ipc", "path": format!("/proc/{me}/ns/ipc")},
        {"type": "uts", "path": format!("/proc/{me}/ns/uts")},
        {"type": "mount"}
    ]);
    let c = env.start_container(&spec);
    for ns in ["pid", "net", "ipc", "uts", "mnt", "cgroup"] {
        assert_ne!(
            ns_id(format!("/proc/{}/ns/{ns}", c.pid)),
            ns_id(format!("/proc/self/ns/{ns}")),
            "the container joined the host's {ns} namespace"
        );
    }
}

#[test]
fn devices_outside_the_allowed_set_are_dropped() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("devices");
    let mut spec = careless_spec(Some(LONG_LIVED));
    spec["linux"]["devices"] = json!([
        {"path": "/dev/mem", "type": "c", "major": 1, "minor": 1, "fileMode": 438, "uid": 0, "gid": 0},
        {"path": "/dev/rloxsc-sda", "type": "b", "major": 8, "minor": 0, "fileMode": 438, "uid": 0, "gid": 0}
    ]);
    spec["linux"]["resources"] = json!({"devices": [{"allow": true, "access": "rwm"}]});
    let c = env.start_container(&spec);
    let root = format!("/proc/{}/root", c.pid);
    for node in ["dev/mem", "dev/rloxsc-sda"] {
        assert!(
            std::fs::symlink_metadata(format!("{root}/{node}")).is_err(),
            "/{node} exists in the container"
        );
    }
    assert!(
        std::path::Path::new(&format!("{root}/dev/null")).exists(),
        "/dev/null missing"
    );
    let list = read_trimmed(format!(
        "/sys/fs/cgroup/devices/rloxsc/{}/devices.list",
        c.id
    ));
    let allowed = [
        "c 1:3 rwm",
        "c 1:5 rwm",
        "c 1:7 rwm",
        "c 1:8 rwm",
        "c 1:9 rwm",
        "c 5:0 rwm",
        "c 5:1 rwm",
        "c 5:2 rwm",
        "c 136:* rwm",
    ];
    for line in list.lines() {
        let access = line.split_whitespace().nth(2).unwrap_or("");
        assert!(
            access == "m" || allowed.contains(&line.trim()),
            "the device cgroup allows {line:?}:\n{list}"
        );
    }
}

/// CVE-2019-5736: while the container is created, its init still runs the runtime's binary; that file
/// must not be writable through /proc/<pid>/exe.
#[test]
fn created_init_maps_a_sealed_runtime_binary() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("exe-seal");
    let id = env.id();
    let _g = env.guard(&id);
    let b = env.bundle(&careless_spec(Some(LONG_LIVED)));
    env.create(&b, &id).expect_ok();
    let pid = env.state(&id).expect("state")["pid"].as_i64().unwrap();
    let exe = std::fs::File::open(format!("/proc/{pid}/exe")).expect("open /proc/<pid>/exe");
    use std::os::fd::AsRawFd;
    // SAFETY: statvfs is plain data, for which all-zero bytes are valid.
    let mut sv: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: fstatvfs on an fd we own, into that struct.
    let ro = unsafe { libc::fstatvfs(exe.as_raw_fd(), &mut sv) } == 0
        && sv.f_flag & libc::ST_RDONLY != 0;
    // SAFETY: fcntl(F_GET_SEALS) on an fd we own.
    let seals = unsafe { libc::fcntl(exe.as_raw_fd(), libc::F_GET_SEALS) };
    let sealed = seals >= 0 && seals & libc::F_SEAL_WRITE != 0;
    assert!(
        ro || sealed,
        "the created container's init maps a writable runtime binary ({})",
        std::fs::read_link(format!("/proc/{pid}/exe"))
            .map(|p| p.display().to_string())
            .unwrap_or_default()
    );
}

#[test]
fn callers_seccomp_profile_is_stacked_never_replacing_rloxscs() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("in-stacked");
    // a caller profile that allows everything except mkdir: both filters must apply
    let mut spec = careless_spec(Some(&[
        "sh",
        "-c",
        "grep Seccomp /proc/self/status; \
         if mkdir /tmp/d 2>/dev/null; then echo mkdir=allowed; else echo mkdir=denied; fi; \
         if unshare -U true 2>/dev/null; then echo userns=allowed; else echo userns=denied; fi",
    ]));
    spec["linux"]["seccomp"] = serde_json::json!({
        "defaultAction": "SCMP_ACT_ALLOW",
        "architectures": ["SCMP_ARCH_X86_64"],
        "syscalls": [{"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO", "errnoRet": 13}]
    });
    let out = env.run_spec(&spec);
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(
        // the caller's profile, then rloxsc's two programs (the allowlist and the ioctl guard)
        status_field(&out.stdout, "Seccomp_filters").as_deref(),
        Some("3"),
        "{out}"
    );
    assert_line(&out.stdout, "mkdir=denied");
    assert_line(&out.stdout, "userns=denied");
}

#[test]
fn callers_hooks_still_run() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("hooks");
    let marker = std::env::temp_dir().join(format!("rloxsc-hook-{}", std::process::id()));
    let _ = std::fs::remove_file(&marker);
    let mut spec = careless_spec(Some(&["true"]));
    spec["hooks"] = serde_json::json!({
        "prestart": [{"path": "/bin/sh", "args": ["sh", "-c", format!("cat > {}", marker.display())]}]
    });
    let out = env.run_spec(&spec);
    assert_eq!(out.code, 0, "{out}");
    let state = std::fs::read_to_string(&marker).unwrap_or_default();
    let _ = std::fs::remove_file(&marker);
    let v: serde_json::Value = serde_json::from_str(&state)
        .unwrap_or_else(|e| panic!("hook got no state JSON ({e}): {state:?}"));
    assert!(v["pid"].as_i64().unwrap_or(0) > 0, "hook state: {v}");
}

#[test]
fn seccomp_probe_finds_every_dangerous_syscall_denied() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("in-probe");
    // careless spec: no seccomp of the caller's, all capabilities asked for
    let out = env.run_spec(&careless_spec(Some(&["/bin/seccomp-probe"])));
    assert!(
        !out.stdout.contains("ALLOWED"),
        "a dangerous syscall went through:\n{out}"
    );
    // newer than the allowlist: ENOSYS (runc's answer too), so libcs fall back instead of failing
    assert!(
        out.stdout.contains("future-syscall-511 denied errno 38 "),
        "{out}"
    );
    for abi in ["i386-int80 denied killed", "x32-abi denied killed"] {
        assert!(out.stdout.contains(abi), "{abi} missing:\n{out}");
    }
    assert!(
        out.stdout
            .lines()
            .any(|l| l.starts_with("probes: ") && l.ends_with(" 0 allowed")),
        "{out}"
    );
    assert_eq!(out.code, 0, "{out}");
}
