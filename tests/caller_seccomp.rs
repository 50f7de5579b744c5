//! The caller's seccomp profile is installed as written: each conditional rule decides a syscall as
//! it does under runc, which this test runs on the same profile and the same probes side by side.
//! rloxsc's own allowlist stays stacked under it; the probes are syscalls that allowlist lets through,
//! so the answer is the caller's rule's.

mod common;

use std::path::PathBuf;

use common::*;
use serde_json::{json, Value};

const SYS_SOCKET: &str = "41";
const SYS_CLONE: &str = "56";
const CLONE_PARENT_SETTID: u64 = 0x0010_0000;
const SIGCHLD: u64 = 17;

/// The caller's profile: allow by default, EPERM for
/// - `socket` when `(protocol & 0xF00) == 0` (`SCMP_CMP_MASKED_EQ` with `valueTwo: 0`), and
/// - `clone` when `(flags & CLONE_PARENT_SETTID) == 0`, written as Docker writes its `clone` rule
///   (the mask in `value`, no `valueTwo`).
fn profile() -> Value {
    json!({
        "defaultAction": "SCMP_ACT_ALLOW",
        "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"],
        "syscalls": [
            {"names": ["socket"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1,
             "args": [{"index": 2, "value": 0xF00, "valueTwo": 0, "op": "SCMP_CMP_MASKED_EQ"}]},
            {"names": ["clone"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1,
             "args": [{"index": 0, "value": CLONE_PARENT_SETTID, "op": "SCMP_CMP_MASKED_EQ"}]}
        ]
    })
}

/// The probes: (what, raw syscall and arguments).
fn probes() -> Vec<(&'static str, Vec<String>)> {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    vec![
        (
            "socket(AF_UNIX, SOCK_STREAM, 0)",
            s(&[SYS_SOCKET, "1", "1", "0"]),
        ),
        (
            "socket(AF_UNIX, SOCK_STREAM, 0x100)",
            s(&[SYS_SOCKET, "1", "1", "0x100"]),
        ),
        (
            "clone(SIGCHLD)",
            vec![SYS_CLONE.into(), SIGCHLD.to_string()],
        ),
        (
            "clone(CLONE_PARENT_SETTID|SIGCHLD)",
            vec![
                SYS_CLONE.into(),
                format!("{:#x}", CLONE_PARENT_SETTID | SIGCHLD),
                "0".into(),
                "0".into(),
            ],
        ),
    ]
}

/// What `seccomp-probe call` answered: "allowed" when any process (a clone's child prints too)
/// says `ok`, else `errno N` from its `errno N NAME` line.
fn decision(stdout: &str) -> String {
    if stdout.lines().any(|l| l.starts_with("ok ")) {
        return "allowed".into();
    }
    // `errno N NAME`: the number decides (NAME is the C library's wording)
    stdout
        .lines()
        .find(|l| l.starts_with("errno "))
        .map(|l| l.split_whitespace().take(2).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| "no answer".into())
}

fn spec_for(call: &[String]) -> Value {
    let mut args: Vec<&str> = vec!["/bin/seccomp-probe", "call"];
    args.extend(call.iter().map(String::as_str));
    let mut spec = base_spec(&args);
    spec["linux"]["seccomp"] = profile();
    spec
}

fn runc_bin() -> Option<PathBuf> {
    std::env::var_os("RUNC_BIN")
        .map(PathBuf::from)
        .or_else(|| Some(PathBuf::from("/usr/sbin/runc")))
        .filter(|p| p.is_file())
}

/// Runs `spec` under runc (its own state root in the test's directory) and removes the container.
fn runc_run(env: &TestEnv, runc: &std::path::Path, spec: &Value) -> Outcome {
    let runc_root = env.dir.join("runc-state");
    let b = env.bundle(spec);
    let id = env.id();
    let mut cmd = std::process::Command::new(runc);
    cmd.arg("--root").arg(&runc_root).args(["run", "--bundle"]);
    cmd.arg(&b).arg(&id).stdin(std::process::Stdio::null());
    let out = env.exec(cmd);
    let mut del = std::process::Command::new(runc);
    del.arg("--root")
        .arg(&runc_root)
        .args(["delete", "--force", &id]);
    let _ = env.exec(del);
    out
}

/// Each probe's decision under rloxsc, with the profile in config.json.
fn rloxsc_decisions(env: &TestEnv) -> Vec<String> {
    probes()
        .iter()
        .map(|(what, call)| {
            let out = env.run_spec(&spec_for(call));
            assert_eq!(out.code, 0, "{what} under rloxsc: {out}");
            decision(&out.stdout)
        })
        .collect()
}

#[test]
fn caller_masked_eq_rules_decide_as_under_runc() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("caller-seccomp");
    let got = rloxsc_decisions(&env);
    // the OCI meaning, `(arg & value) == valueTwo`, as runc installs it
    let want = ["errno 1", "errno 93", "errno 1", "allowed"]; // EPERM, EPROTONOSUPPORT
    let names: Vec<&str> = probes().iter().map(|p| p.0).collect();
    for ((name, g), w) in names.iter().zip(&got).zip(want) {
        assert_eq!(g, w, "{name}: rloxsc decided {g:?}, the profile says {w:?}");
    }

    // and runc, on the very same profile and probes
    let Some(runc) = runc_bin() else {
        let reason =
            "runc is not installed (apt-get install runc, or set RUNC_BIN): the decisions \
                      were checked against the OCI meaning only";
        if std::env::var("RLOXSC_ALLOW_SKIP").as_deref() == Ok("1") {
            eprintln!("SKIPPED (runc side): {reason}");
            return;
        }
        panic!("{reason}");
    };
    for ((name, call), g) in probes().iter().zip(&got) {
        let out = runc_run(&env, &runc, &spec_for(call));
        assert_eq!(out.code, 0, "{name} under runc: {out}");
        assert_eq!(
            &decision(&out.stdout),
            g,
            "{name}: runc and rloxsc decide differently on the same profile"
        );
    }
}

/// A profile written for an older kernel: EPERM by default, every syscall up to `pidfd_open` (434)
/// allowed but `acct` (163). What libseccomp on this host names is what the profile lists.
fn older_profile() -> Value {
    let names: Vec<String> = (0..=434)
        .filter_map(|nr| {
            libseccomp::ScmpSyscall::from_raw_syscall(nr)
                .get_name()
                .ok()
        })
        .filter(|n| n != "acct")
        .collect();
    json!({
        "defaultAction": "SCMP_ACT_ERRNO",
        "defaultErrnoRet": 1,
        "architectures": ["SCMP_ARCH_X86_64"],
        "syscalls": [{"names": names, "action": "SCMP_ACT_ALLOW"}]
    })
}

/// Syscalls newer than the caller's profile answer ENOSYS (runc's `patchbpf`), so a libc falls back
/// to the older call instead of failing: `close_range` (436), `faccessat2` (439), `fchmodat2` (452)
/// and a number past the table (1000); a listed-out older one (`acct`) keeps the profile's EPERM.
/// Decided side by side with runc on the same profile.
#[test]
fn syscalls_newer_than_the_profile_answer_enosys_as_under_runc() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("caller-seccomp-enosys");
    // (what, raw call, the answer runc gives)
    let probes: [(&str, Vec<String>, &str); 5] = [
        (
            "close_range(100, 200, 0)",
            vec!["436".into(), "100".into(), "200".into(), "0".into()],
            "errno 38",
        ),
        (
            "faccessat2(AT_FDCWD, \"/\", F_OK, 0)",
            vec!["439".into(), "-100".into(), "0".into()],
            "errno 38",
        ),
        (
            "fchmodat2(-1, 0, 0, 0)",
            vec![
                "452".into(),
                "-1".into(),
                "0".into(),
                "0".into(),
                "0".into(),
            ],
            "errno 38",
        ),
        ("syscall 1000", vec!["1000".into()], "errno 38"),
        ("acct(NULL)", vec!["163".into(), "0".into()], "errno 1"),
    ];
    let spec_of = |call: &[String]| {
        let mut args: Vec<&str> = vec!["/bin/seccomp-probe", "call"];
        args.extend(call.iter().map(String::as_str));
        let mut spec = base_spec(&args);
        spec["linux"]["seccomp"] = older_profile();
        spec
    };
    for (what, call, want) in &probes {
        let out = env.run_spec(&spec_of(call));
        assert_eq!(out.code, 0, "{what} under rloxsc: {out}");
        assert_eq!(&decision(&out.stdout), want, "{what} under rloxsc: {out}");
    }
    let Some(runc) = runc_bin() else {
        if std::env::var("RLOXSC_ALLOW_SKIP").as_deref() == Ok("1") {
            eprintln!("SKIPPED (runc side): runc is not installed");
            return;
        }
        panic!("runc is not installed (apt-get install runc, or set RUNC_BIN)");
    };
    for (what, call, want) in &probes {
        let out = runc_run(&env, &runc, &spec_of(call));
        assert_eq!(out.code, 0, "{what} under runc: {out}");
        assert_eq!(
            &decision(&out.stdout),
            want,
            "{what}: runc answers otherwise"
        );
    }
}
