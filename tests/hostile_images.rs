//! Issue #12, the image: every byte of the rootfs is hostile, and nothing rloxsc's own processes open
//! in it may run its code, block them or make them read without bound. These images each broke
//! bdaba62: an NSS module the image ships ran inside rloxsc's init before the seccomp filter (and left
//! a filterless process behind), and an `/etc/passwd` that is a FIFO hung `run` past `--timeout`.
//! (Symlinked `/dev`, `/dev/null`, `/dev/console`, `/proc`, `/sys` images are in tests/adversarial.rs.)

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;

/// A private copy of the test rootfs that a test may make hostile.
fn image_copy(env: &TestEnv, name: &str) -> PathBuf {
    let dst = env.dir.join(format!("image-{name}"));
    let st = std::process::Command::new("cp")
        .arg("-a")
        .arg(test_rootfs())
        .arg(&dst)
        .status()
        .expect("cp -a");
    assert!(st.success(), "copying the rootfs failed");
    dst
}

/// runc's default spec (`runc spec`: no HOME, no seccomp) on `rootfs`, running `args`.
fn runc_default_spec(rootfs: &Path, args: &[&str]) -> Value {
    let data = fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/runc-spec-default.json"),
    )
    .unwrap();
    let mut spec: Value = serde_json::from_slice(&data).unwrap();
    spec["root"]["path"] = Value::from(rootfs.to_str().unwrap());
    spec["process"]["terminal"] = Value::from(false);
    spec["process"]["args"] = serde_json::json!(args);
    spec["process"]["env"] = serde_json::json!([CONTAINER_PATH]);
    spec
}

/// Builds `libnss_evil.so.2` into the image, and an nsswitch.conf that asks glibc to use it for
/// passwd: its constructor marks `/tmp/nss-ran` and leaves a process behind.
fn plant_nss_module(rootfs: &Path, env: &TestEnv) {
    let src = env.dir.join("nss_evil.c");
    fs::write(
        &src,
        r#"
#include <fcntl.h>
#include <unistd.h>
#include <pwd.h>
#include <nss.h>
__attribute__((constructor)) static void evil(void) {
    int fd = open("/tmp/nss-ran", O_CREAT | O_WRONLY, 0644);
    if (fd >= 0) { write(fd, "ran\n", 4); close(fd); }
    if (fork() == 0) { setsid(); for (;;) pause(); }
}
enum nss_status _nss_evil_getpwuid_r(uid_t u, struct passwd *p, char *b, size_t l, int *e) {
    (void)u; (void)p; (void)b; (void)l; (void)e; return NSS_STATUS_NOTFOUND;
}
"#,
    )
    .unwrap();
    let libdir = rootfs.join("lib/x86_64-linux-gnu");
    fs::create_dir_all(&libdir).unwrap();
    let st = std::process::Command::new("gcc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(libdir.join("libnss_evil.so.2"))
        .arg(&src)
        .status()
        .expect("gcc (build-essential) builds the NSS module");
    assert!(st.success(), "gcc failed to build the NSS module");
    fs::write(
        rootfs.join("etc/nsswitch.conf"),
        "passwd: evil files\ngroup: evil files\n",
    )
    .unwrap();
}

#[test]
fn an_images_nss_module_never_runs_in_rloxscs_processes() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("img-nss");
    let rootfs = image_copy(&env, "nss");
    plant_nss_module(&rootfs, &env);
    let spec = runc_default_spec(&rootfs, &["sleep", "1000"]);
    let id = env.id();
    let _g = env.guard(&id);
    let b = env.bundle(&spec);
    env.create(&b, &id).expect_ok();
    env.rloxsc(&["start", &id]).expect_ok();
    // from outside: the container's cgroup holds its payload only, in seccomp filter mode
    let pids = pids_in_cgroup_of(&id);
    let bad = uncontained_processes_of(&id);
    assert!(bad.is_empty(), "processes without rloxsc's filter: {bad:?}");
    assert_eq!(
        pids.len(),
        1,
        "more than the payload in the cgroup: {pids:?}"
    );
    // and the module never ran (its mark is missing), while HOME came from the image's passwd
    let out = env.rloxsc(&[
        "exec",
        &id,
        "sh",
        "-c",
        "test -e /tmp/nss-ran && echo RAN; tr '\\0' '\\n' < /proc/1/environ | grep ^HOME=",
    ]);
    assert!(
        !out.stdout.contains("RAN"),
        "the image's NSS module ran: {out}"
    );
    assert!(
        out.stdout.contains("HOME=/root"),
        "HOME not from the image's /etc/passwd: {out}"
    );
    // the same for exec without HOME (libcontainer would look the exec's user up too)
    let p = env.dir.join("process.json");
    fs::write(
        &p,
        serde_json::to_vec(&serde_json::json!({
            "args": ["sh", "-c", "echo HOME=$HOME; test -e /tmp/nss-ran && echo RAN; true"],
            "cwd": "/", "env": [CONTAINER_PATH], "user": {"uid": 65534, "gid": 65534}
        }))
        .unwrap(),
    )
    .unwrap();
    let out = env.rloxsc(&["exec", "--process", p.to_str().unwrap(), &id]);
    assert!(
        !out.stdout.contains("RAN"),
        "exec loaded the image's NSS module: {out}"
    );
    assert!(
        out.stdout.contains("HOME=/nonexistent") || out.stdout.contains("HOME=/home"),
        "exec's HOME: {out}"
    );
    assert!(uncontained_processes_of(&id).is_empty());
}

/// Runs `args` under `rloxsc run --timeout 10s` with a deadline of its own: a run that hangs fails
/// the test instead of hanging it.
fn bounded_run(env: &TestEnv, spec: &Value, id: &str) -> (Outcome, Duration) {
    let b = env.bundle(spec);
    let t0 = Instant::now();
    let cmd = env.command(
        &rloxsc_bin(),
        &[
            "run",
            "--timeout",
            "10s",
            "--bundle",
            b.to_str().unwrap(),
            id,
        ],
    );
    let (o, e) = env.capture_paths();
    let mut cmd = cmd;
    cmd.stdout(fs::File::create(&o).unwrap());
    cmd.stderr(fs::File::create(&e).unwrap());
    let mut child = cmd.spawn().unwrap();
    let st = wait_child(
        &mut child,
        Duration::from_secs(30),
        "rloxsc run --timeout 10s of a hostile image",
    );
    (
        Outcome {
            code: exit_code(st),
            stdout: fs::read_to_string(&o).unwrap_or_default(),
            stderr: fs::read_to_string(&e).unwrap_or_default(),
            cmdline: format!("{cmd:?}"),
        },
        t0.elapsed(),
    )
}

#[test]
fn a_hostile_etc_passwd_never_blocks_or_floods_the_runtime() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("img-passwd");
    type Plant = fn(&Path);
    let variants: Vec<(&str, Plant)> = vec![
        ("fifo", |r| {
            nix::unistd::mkfifo(
                &r.join("etc/passwd"),
                nix::sys::stat::Mode::from_bits_truncate(0o644),
            )
            .unwrap()
        }),
        ("char device (zero)", |r| {
            let p = std::ffi::CString::new(r.join("etc/passwd").as_os_str().as_encoded_bytes())
                .unwrap();
            // SAFETY: mknod of a path in the test's own image copy
            let rc = unsafe { libc::mknod(p.as_ptr(), libc::S_IFCHR | 0o644, libc::makedev(1, 5)) };
            assert_eq!(rc, 0);
        }),
        ("symlink out of the image", |r| {
            std::os::unix::fs::symlink("/etc/shadow", r.join("etc/passwd")).unwrap()
        }),
        ("huge", |r| {
            fs::write(r.join("etc/passwd"), vec![b'#'; 64 << 20]).unwrap()
        }),
        ("directory", |r| {
            fs::create_dir(r.join("etc/passwd")).unwrap()
        }),
    ];
    for (name, plant) in variants {
        let rootfs = image_copy(&env, &name.replace(' ', "-"));
        let _ = fs::remove_file(rootfs.join("etc/passwd"));
        plant(&rootfs);
        let spec = runc_default_spec(&rootfs, &["sh", "-c", "echo HOME=$HOME"]);
        let id = env.id();
        let _g = env.guard(&id);
        let (out, took) = bounded_run(&env, &spec, &id);
        assert_eq!(out.code, 0, "{name}: {out}");
        assert_eq!(out.stdout.trim(), "HOME=/", "{name}: {out}");
        assert!(took < Duration::from_secs(10), "{name}: took {took:?}");
        env.assert_nothing_left(&id, name);
    }
}

// The binds a client makes onto files of the image (Docker's /etc/hosts, /etc/resolv.conf,
// /etc/hostname) land on the image's files even when the image makes them symlinks out of it or
// FIFOs: nothing blocks, and the container sees the bind.
#[test]
fn binds_onto_hostile_etc_files_land_inside_the_image() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("img-hosts");
    let host_file = env.dir.join("host-hosts");
    fs::write(&host_file, "host file\n").unwrap();
    let src = env.dir.join("hosts-src");
    fs::write(&src, "127.0.0.1 from-the-bind\n").unwrap();
    type Plant = fn(&Path, &Path);
    let variants: Vec<(&str, Plant)> = vec![
        ("symlink to a host file", |r, host| {
            std::os::unix::fs::symlink(host, r.join("etc/hosts")).unwrap()
        }),
        ("relative symlink climbing out", |r, _| {
            std::os::unix::fs::symlink("../../../../../../../../etc/passwd", r.join("etc/hosts"))
                .unwrap()
        }),
        ("fifo", |r, _| {
            nix::unistd::mkfifo(
                &r.join("etc/hosts"),
                nix::sys::stat::Mode::from_bits_truncate(0o644),
            )
            .unwrap()
        }),
    ];
    for (name, plant) in variants {
        let rootfs = image_copy(&env, &name.replace(' ', "-"));
        let _ = fs::remove_file(rootfs.join("etc/hosts"));
        plant(&rootfs, &host_file);
        let mut spec = runc_default_spec(&rootfs, &["cat", "/etc/hosts"]);
        spec["mounts"].as_array_mut().unwrap().push(serde_json::json!({
            "destination": "/etc/hosts", "type": "bind", "source": src, "options": ["rbind", "ro"]
        }));
        let id = env.id();
        let _g = env.guard(&id);
        let (out, took) = bounded_run(&env, &spec, &id);
        assert!(took < Duration::from_secs(10), "{name}: took {took:?}");
        assert_eq!(
            fs::read_to_string(&host_file).unwrap(),
            "host file\n",
            "{name}: the host file changed"
        );
        if out.code == 0 {
            assert_eq!(
                out.stdout.trim(),
                "127.0.0.1 from-the-bind",
                "{name}: {out}"
            );
        } else {
            // refusing the image is fine too, as long as it is a clear error
            assert!(out.stderr.contains("rloxsc: error:"), "{name}: {out}");
        }
        env.assert_nothing_left(&id, name);
    }
}
