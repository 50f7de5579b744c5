//! Issue #20, the filesystem model (`filesystem.writable`, `filesystem.rootfs`, `userns.mode`): the
//! container's root is an overlay of the image's layers, idmapped onto the container's ids, over a
//! bounded store charged to the container; its system paths are read-only, its workdir, HOME and
//! `/tmp` writable with the image's content, nothing copied at create; a client's rootfs shows the
//! container's writes where the client's copy API looks, and at delete they land in the client's
//! layer as runc leaves them. Judged from outside: the client's upper layer and its blocks, the host's
//! Shmem against the container's memory cgroup, what is mounted on the host, wall times of
//! `--timeout`. Every test failed against 6ca7267 (the tmpfs copy-in/write-back model).

mod common;

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::*;
use serde_json::json;

/// The mounts on the host (this mount namespace) at or below `dir`.
fn mounts_under(dir: &Path) -> Vec<String> {
    fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .filter(|l| {
            l.split(' ')
                .nth(4)
                .is_some_and(|p| Path::new(p).starts_with(dir))
        })
        .map(str::to_string)
        .collect()
}

/// A client's rootfs (an overlay mount, shared as Docker's is) with a workdir `/sandbox` holding a
/// file and a directory of the image, and a 0700 `/root` holding a 0600 file.
fn client_rootfs(env: &TestEnv) -> OverlayRoot {
    let root = OverlayRoot::new(env);
    let st = std::process::Command::new("mount")
        .arg("--make-shared")
        .arg(&root.merged)
        .status()
        .unwrap();
    assert!(st.success());
    let w = root.merged.join("sandbox");
    fs::create_dir_all(w.join("pkg")).unwrap();
    fs::write(w.join("in-image.txt"), "from the image\n").unwrap();
    fs::write(w.join("pkg/mod.py"), "x = 1\n").unwrap();
    fs::set_permissions(w.join("pkg"), fs::Permissions::from_mode(0o750)).unwrap();
    fs::create_dir_all(root.merged.join("root")).unwrap();
    fs::set_permissions(root.merged.join("root"), fs::Permissions::from_mode(0o700)).unwrap();
    fs::write(root.merged.join("root/.profile"), "PS1=x\n").unwrap();
    fs::set_permissions(
        root.merged.join("root/.profile"),
        fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    root
}

fn spec_on(rootfs: &Path, cwd: &str, script: &str) -> serde_json::Value {
    let mut spec = base_spec(&["sh", "-c", script]);
    spec["root"]["path"] = json!(rootfs);
    // a client's writable layer, as Docker, Podman and containerd send it
    spec["root"]["readonly"] = json!(false);
    spec["process"]["cwd"] = json!(cwd);
    spec["process"]["env"]
        .as_array_mut()
        .unwrap()
        .push(json!("HOME=/root"));
    // Docker's default set has CAP_CHOWN (runc spec's has not)
    let caps = json!([
        "CAP_AUDIT_WRITE",
        "CAP_KILL",
        "CAP_NET_BIND_SERVICE",
        "CAP_CHOWN",
        "CAP_FOWNER",
        "CAP_DAC_OVERRIDE"
    ]);
    for set in ["bounding", "effective", "permitted"] {
        spec["process"]["capabilities"][set] = caps.clone();
    }
    spec
}

// Under overlayfs (Docker's and Podman's storage) every image file showed as nobody's: /root was
// unreadable, `chown` of an image file failed, HOME and the workdir's content were read-only or
// copied. Now the container's root owns the image's files; the workdir, HOME and /tmp are writable
// with the image's content; the system paths are not; at delete the writes are in the client's
// upper layer with the container's ids, as runc leaves them, and nothing is mounted any more.
#[test]
fn the_containers_root_owns_the_image_and_writes_where_runc_would() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("wr-model");
    let root = client_rootfs(&env);
    let spec = spec_on(
        &root.merged,
        "/sandbox",
        "cat in-image.txt; stat -c '%u %a' pkg; cat pkg/mod.py; cat /root/.profile; \
         echo out > result.txt && cat result.txt; chown 5:5 pkg/mod.py && stat -c %u pkg/mod.py; \
         echo g > ~/.gitconfig && cat ~/.gitconfig; echo t > /tmp/t && cat /tmp/t; \
         for d in / /etc /usr /bin /sandbox/../etc; do if touch $d/.rx 2>/dev/null; then echo \"$d writable\"; else echo \"$d ro\"; fi; done",
    );
    let out = env.run_spec(&spec);
    out.expect_ok();
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(
        &lines[..8],
        &[
            "from the image",
            "0 750",
            "x = 1",
            "PS1=x",
            "out",
            "5",
            "g",
            "t"
        ],
        "{out}"
    );
    for l in &lines[8..] {
        assert!(l.ends_with(" ro"), "a system path is writable: {out}");
    }
    let up = |p: &str| root.upper.join(p);
    assert_eq!(
        fs::read_to_string(up("sandbox/result.txt")).unwrap(),
        "out\n"
    );
    assert_eq!(fs::metadata(up("sandbox/result.txt")).unwrap().uid(), 0);
    assert_eq!(fs::metadata(up("sandbox/pkg/mod.py")).unwrap().uid(), 5);
    assert_eq!(fs::read_to_string(up("root/.gitconfig")).unwrap(), "g\n");
    assert_eq!(fs::read_to_string(up("tmp/t")).unwrap(), "t\n");
    assert!(!up(".rx").exists() && !up("etc/.rx").exists());
    let left = mounts_under(&root.merged);
    assert_eq!(
        left.len(),
        1,
        "mounts left on the client's rootfs: {left:?}"
    );
}

// A 64 MiB store (the policy's): what the container writes anywhere fills it and ends in ENOSPC;
// the pages are the container's (its memory cgroup), not the caller's; a store is never larger than
// half the container's memory limit (a full store is ENOSPC, not an OOM kill).
#[test]
fn the_store_bounds_every_write_and_is_charged_to_the_container() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("wr-store");
    let policy = env.dir.join("policy.toml");
    fs::write(&policy, "[limits]\nstore = { default = \"64M\" }\n").unwrap();
    let mut spec = spec_on(
        Path::new(&rootfs_str()),
        "/",
        "dd if=/dev/zero of=/tmp/a bs=1M count=40 2>/dev/null; \
         dd if=/dev/zero of=/root/b bs=1M count=40 2>&1 | grep -o 'No space left on device'; \
         echo total=$(( ($(wc -c < /tmp/a) + $(wc -c < /root/b)) / 1048576 )); \
         cat /sys/fs/cgroup/memory/memory.stat 2>/dev/null | grep -E '^shmem ' ; sleep 3",
    );
    spec["linux"]["resources"] = json!({"memory": {"limit": 512u64 << 20}});
    let id = env.id();
    let _g = env.guard(&id);
    let b = env.bundle(&spec);
    let mut child = env
        .command(
            &rloxsc_bin(),
            &[
                "--policy",
                policy.to_str().unwrap(),
                "run",
                "--bundle",
                b.to_str().unwrap(),
                &id,
            ],
        )
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // while it holds its 64 MiB: the container's memory cgroup holds them
    let mut charged = 0u64;
    poll_until(Duration::from_secs(20), || {
        charged = cgroup_dirs_of(&id)
            .iter()
            .find(|d| d.starts_with("/sys/fs/cgroup/memory"))
            .and_then(|d| fs::read_to_string(d.join("memory.stat")).ok())
            .and_then(|s| {
                s.lines().find_map(|l| {
                    l.strip_prefix("shmem ")
                        .map(|v| v.trim().parse::<u64>().unwrap_or(0))
                })
            })
            .unwrap_or(0);
        charged >= 60 << 20
    });
    let st = wait_child(&mut child, Duration::from_secs(60), "run");
    let mut stdout = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut stdout).unwrap();
    assert!(st.success(), "{stdout}");
    assert!(
        stdout.contains("No space left on device"),
        "the store was not bounded: {stdout}"
    );
    let total: u64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("total="))
        .and_then(|v| v.trim().parse().ok())
        .unwrap();
    assert!((60..=64).contains(&total), "{total} MiB written: {stdout}");
    assert!(
        charged >= 60 << 20,
        "the store's pages are not the container's: its memory cgroup holds {charged} bytes of shmem"
    );

    // half the memory limit at most
    let mut spec = spec_on(
        Path::new(&rootfs_str()),
        "/",
        "dd if=/dev/zero of=/tmp/a bs=1M count=100 2>&1 | grep -o 'No space left on device'; echo $(( $(wc -c < /tmp/a) / 1048576 ))",
    );
    spec["linux"]["resources"] = json!({"memory": {"limit": 64u64 << 20}});
    let out = env.run_spec(&spec);
    out.expect_ok();
    assert!(out.stdout.contains("No space left on device"), "{out}");
    let mb: u64 = out.stdout.lines().last().unwrap().trim().parse().unwrap();
    assert!(mb <= 32, "a 64 MiB container's store held {mb} MiB");
    let check = env.rloxsc(&["policy", "check", env.bundle(&spec).to_str().unwrap()]);
    assert!(
        check.stdout.contains("half its memory limit")
            || check.stderr.contains("half its memory limit"),
        "policy check does not say the store was made smaller: {check}"
    );
}

/// A rootfs directory with `n` files of one byte in `/sandbox` (and `n` in `/tmp`).
fn image_with_many_files(env: &TestEnv, n: usize) -> PathBuf {
    let r = env.dir.join("big-rootfs");
    let st = std::process::Command::new("cp")
        .args(["-a", &rootfs_str()])
        .arg(&r)
        .status()
        .unwrap();
    assert!(st.success());
    for d in ["sandbox", "tmp"] {
        let dir = r.join(d);
        fs::create_dir_all(&dir).unwrap();
        for i in 0..n {
            fs::write(dir.join(format!("f{i}")), b"x").unwrap();
        }
    }
    r
}

/// Used inodes of the store of container `id`, from the host's mount table and statvfs.
fn store_inodes_used(id_views_owner: &str) -> Option<u64> {
    for e in fs::read_dir("/run/rloxsc-views").ok()?.flatten() {
        let owner = fs::read_to_string(e.path().join("owner")).unwrap_or_default();
        if !owner.contains(id_views_owner) {
            continue;
        }
        for s in fs::read_dir(e.path()).ok()?.flatten() {
            if s.file_name().to_string_lossy().ends_with("-store") {
                let v = nix::sys::statvfs::statvfs(&s.path()).ok()?;
                return Some(v.files() - v.files_free());
            }
        }
    }
    None
}

// 2 x 99,990 entries in /tmp and the workdir were copied at create (3.3 s), and refused above
// 100,000; delete of a never-started container took 64 s (quadratic write-back), and `run
// --timeout 2s` returned after 56 s. Now nothing is copied (the store holds a handful of inodes
// after create), and --timeout bounds the whole run, cleanup included (timeout + 1 s).
#[test]
fn nothing_is_copied_at_create_and_timeout_bounds_the_whole_run() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("wr-many");
    let r = image_with_many_files(&env, 100_000);
    let spec = spec_on(&r, "/sandbox", "ls | wc -l; sleep 100");
    let id = env.id();
    let _g = env.guard(&id);
    let b = env.bundle(&spec);
    env.create(&b, &id).expect_ok();
    let used = store_inodes_used(&id).expect("no store found for the container");
    assert!(
        used < 64,
        "the store holds {used} inodes after create: the image was copied"
    );
    let t0 = Instant::now();
    env.rloxsc(&["delete", "--force", &id]).expect_ok();
    assert!(
        t0.elapsed() < Duration::from_secs(10),
        "delete took {:?}",
        t0.elapsed()
    );

    // the container renames every file of /tmp (100,000 entries into the store), then sleeps
    let spec = spec_on(
        &r,
        "/sandbox",
        "cd /tmp && for f in f*; do mv $f r$f; done; sleep 100",
    );
    let id = env.id();
    let _g = env.guard(&id);
    let b = env.bundle(&spec);
    let t0 = Instant::now();
    let out = env.rloxsc(&[
        "run",
        "--timeout",
        "20s",
        "--bundle",
        b.to_str().unwrap(),
        &id,
    ]);
    let took = t0.elapsed();
    assert_eq!(out.code, 124, "{out}");
    assert!(
        took < Duration::from_secs(21),
        "run --timeout 20s took {took:?}"
    );
    env.assert_nothing_left(&id, "after run --timeout");
}

// A 1 GiB sparse file (0 bytes used in the container) became 1 GiB dense in the caller's layer; a
// 64 MiB file with 15 hard links became 1 GiB. Written back now, holes stay holes and links stay
// links: the client's layer never costs the host more than the container used.
#[test]
fn sparse_and_hardlinked_files_never_cost_the_host_more_than_the_container() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("wr-sparse");
    let root = client_rootfs(&env);
    let spec = spec_on(
        &root.merged,
        "/sandbox",
        "truncate -s 1G /tmp/sparse && truncate -s 100G sparse2 && \
         dd if=/dev/urandom of=/tmp/big bs=1M count=64 2>/dev/null && \
         for i in $(seq 1 15); do ln /tmp/big /tmp/link$i; done && echo done",
    );
    let out = env.run_spec(&spec);
    out.expect_ok();
    assert!(out.stdout.contains("done"), "{out}");
    let md = |p: &str| fs::metadata(root.upper.join(p)).unwrap();
    assert_eq!(md("tmp/sparse").len(), 1 << 30);
    assert!(
        md("tmp/sparse").blocks() * 512 < 1 << 20,
        "the hole was written"
    );
    assert!(
        md("sandbox/sparse2").blocks() * 512 < 1 << 20,
        "the hole was written"
    );
    assert_eq!(md("tmp/big").nlink(), 16, "hard links became files");
    assert_eq!(md("tmp/link7").ino(), md("tmp/big").ino());
}

// Two containers created at once on one client rootfs: both succeeded in some rounds, and after
// both were deleted one container's views stayed mounted on the host. Now one is created, the
// other refused naming the policy key, and nothing is left after delete.
#[test]
fn two_containers_on_one_rootfs_one_is_refused_and_nothing_is_left() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("wr-two");
    let root = client_rootfs(&env);
    for round in 0..5 {
        let spec = spec_on(&root.merged, "/sandbox", "sleep 100");
        let (a, b) = (env.id(), env.id());
        let (_ga, _gb) = (env.guard(&a), env.guard(&b));
        let (ba, bb) = (env.bundle(&spec), env.bundle(&spec));
        // output to files, never pipes: a created init holds its runtime's stdio open
        let (ea, eb) = (env.capture_paths().1, env.capture_paths().1);
        let spawn = |bundle: &Path, id: &str, err: &Path| {
            env.command(
                &rloxsc_bin(),
                &["create", "--bundle", bundle.to_str().unwrap(), id],
            )
            .stdout(std::process::Stdio::null())
            .stderr(fs::File::create(err).unwrap())
            .spawn()
            .unwrap()
        };
        let (mut ca, mut cb) = (spawn(&ba, &a, &ea), spawn(&bb, &b, &eb));
        let oa = wait_child(&mut ca, Duration::from_secs(60), "create a");
        let ob = wait_child(&mut cb, Duration::from_secs(60), "create b");
        let ok = [oa.success(), ob.success()];
        assert_eq!(
            ok.iter().filter(|x| **x).count(),
            1,
            "round {round}: {ok:?}"
        );
        let err = fs::read_to_string(if ok[0] { &eb } else { &ea }).unwrap();
        assert!(err.contains("filesystem.rootfs"), "round {round}: {err}");
        env.rloxsc(&["delete", "--force", &a]).expect_ok();
        env.rloxsc(&["delete", "--force", &b]).expect_ok();
        let left = mounts_under(&root.merged);
        assert_eq!(left.len(), 1, "round {round}: mounts left: {left:?}");
        for id in [&a, &b] {
            env.assert_nothing_left(id, &format!("round {round}"));
        }
    }
}

// A workdir of /var made /var/lib/dpkg and /var/lib/apt writable (only paths inside system paths
// were refused, not paths holding them). Now it stays read-only, as a system path.
#[test]
fn a_workdir_holding_a_system_path_stays_read_only() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("wr-var");
    let r = env.dir.join("rootfs");
    let st = std::process::Command::new("cp")
        .args(["-a", &rootfs_str()])
        .arg(&r)
        .status()
        .unwrap();
    assert!(st.success());
    fs::create_dir_all(r.join("var/lib/dpkg")).unwrap();
    fs::write(r.join("var/lib/dpkg/status"), "Package: x\n").unwrap();
    for cwd in ["/var", "/var/lib"] {
        let spec = spec_on(
            &r,
            cwd,
            "if echo y >> /var/lib/dpkg/status 2>/dev/null; then echo WRITABLE; else echo ro; fi",
        );
        let out = env.run_spec(&spec);
        out.expect_ok();
        assert_eq!(out.stdout.trim(), "ro", "workdir {cwd}: {out}");
    }
    assert_eq!(
        fs::read_to_string(r.join("var/lib/dpkg/status")).unwrap(),
        "Package: x\n"
    );
}

// `docker run --init` failed on every merged-/usr image: Docker binds /sbin/docker-init, /sbin is
// a symlink to usr/sbin, and the container's root could not create the target there. Now the target
// is made in the store (the image's /usr untouched on the host, and read-only inside); a target
// through an absolute symlink of the image lands inside it, never on the host.
#[test]
fn mount_targets_are_made_inside_the_image_without_making_it_writable() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("wr-init");
    let r = env.dir.join("rootfs");
    let st = std::process::Command::new("cp")
        .args(["-a", &rootfs_str()])
        .arg(&r)
        .status()
        .unwrap();
    assert!(st.success());
    fs::create_dir_all(r.join("usr/sbin")).unwrap();
    if r.join("sbin").exists() {
        let st = std::process::Command::new("cp")
            .args(["-a"])
            .arg(r.join("sbin/."))
            .arg(r.join("usr/sbin"))
            .status()
            .unwrap();
        assert!(st.success());
        fs::remove_dir_all(r.join("sbin")).unwrap();
    }
    std::os::unix::fs::symlink("usr/sbin", r.join("sbin")).unwrap();
    let outside = env.dir.join("outside");
    fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, r.join("away")).unwrap();
    let init = env.dir.join("docker-init");
    fs::write(&init, "#!/bin/sh\necho init-ran\n").unwrap();
    fs::set_permissions(&init, fs::Permissions::from_mode(0o755)).unwrap();
    let mut spec = spec_on(
        &r,
        "/",
        "/sbin/docker-init; if touch /usr/sbin/x 2>/dev/null; then echo usr-writable; else echo usr-ro; fi",
    );
    let m = spec["mounts"].as_array_mut().unwrap();
    m.push(json!({"destination": "/sbin/docker-init", "type": "bind", "source": init, "options": ["rbind", "ro"]}));
    m.push(json!({"destination": "/away/x", "type": "tmpfs", "source": "tmpfs", "options": ["size=1m"]}));
    let out = env.run_spec(&spec);
    out.expect_ok();
    assert_eq!(out.stdout.trim(), "init-ran\nusr-ro", "{out}");
    assert!(
        !r.join("usr/sbin/docker-init").exists(),
        "the target was made in the image itself"
    );
    assert!(
        !outside.join("x").exists(),
        "a target was made through a symlink out of the image"
    );
}

// The client's copy API (Docker's archive API works on the rootfs from the host) sees what the
// container writes at once and after it ends; what the client writes as host root (a 0600 file,
// llm-sandbox's code files) is the container's own at its next process; nothing of the view is
// left after delete.
#[test]
fn the_client_sees_and_writes_where_its_copy_api_looks() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("wr-client");
    let root = client_rootfs(&env);
    let spec = spec_on(
        &root.merged,
        "/sandbox",
        "echo from-ctr > /sandbox/out.txt; mkdir -p /tmp/plots; echo png > /tmp/plots/p.png; \
         while [ ! -s /tmp/cmd.json ]; do sleep 0.1; done; cat /tmp/cmd.json > /sandbox/got 2>&1; \
         printf '#!/bin/sh\\necho ran\\n' > /tmp/tool && chmod 755 /tmp/tool && /tmp/tool > /sandbox/ran 2>&1; sleep 100",
    );
    let c = env.start_container(&spec);
    let host = |p: &str| root.merged.join(p);
    assert!(
        poll_until(Duration::from_secs(10), || host("tmp/plots/p.png").exists()),
        "the container's /tmp write is not where the client looks"
    );
    assert_eq!(
        fs::read_to_string(host("sandbox/out.txt")).unwrap(),
        "from-ctr\n"
    );
    // a long-lived process of the container reads what the client copies into /tmp (empty in the
    // image: the client's layer's own directory) as its own at once, with no exec in between
    // (llm-sandbox's interactive runner polls for its command files)
    fs::write(host("tmp/cmd.json.part"), "{\"code\": 1}\n").unwrap();
    fs::set_permissions(host("tmp/cmd.json.part"), fs::Permissions::from_mode(0o600)).unwrap();
    fs::rename(host("tmp/cmd.json.part"), host("tmp/cmd.json")).unwrap();
    assert!(
        poll_until(Duration::from_secs(10), || fs::read_to_string(host(
            "sandbox/got"
        ))
        .is_ok_and(|s| !s.is_empty())),
        "the container's process never read the client's file"
    );
    assert_eq!(
        fs::read_to_string(host("sandbox/got")).unwrap(),
        "{\"code\": 1}\n"
    );
    // and runs what it writes there (a venv's pip)
    assert!(
        poll_until(Duration::from_secs(10), || fs::read_to_string(host(
            "sandbox/ran"
        ))
        .is_ok_and(|s| !s.is_empty())),
        "no outcome of running /tmp/tool"
    );
    assert_eq!(fs::read_to_string(host("sandbox/ran")).unwrap(), "ran\n");
    for p in ["sandbox/code.py", "tmp/in.json", "etc/hostfile"] {
        fs::write(host(p), "print(1)\n").unwrap();
        fs::set_permissions(host(p), fs::Permissions::from_mode(0o600)).unwrap();
    }
    let out = env.rloxsc(&[
        "exec",
        &c.id,
        "sh",
        "-c",
        "cat /sandbox/code.py /tmp/in.json /etc/hostfile; stat -c %u /sandbox/code.py /tmp/in.json",
    ]);
    out.expect_ok();
    assert_eq!(out.stdout, "print(1)\nprint(1)\nprint(1)\n0\n0\n", "{out}");
    let id = c.id.clone();
    drop(c);
    env.assert_nothing_left(&id, "after delete");
    assert_eq!(
        mounts_under(&root.merged).len(),
        1,
        "{:?}",
        mounts_under(&root.merged)
    );
    // after the container: in the client's own layer, as under runc (seen as the client sees it
    // after the container's end: Docker mounts the stopped container's rootfs again for docker cp)
    root.remount();
    assert_eq!(
        fs::read_to_string(host("tmp/plots/p.png")).unwrap(),
        "png\n"
    );
    assert_eq!(
        fs::read_to_string(root.upper.join("sandbox/code.py")).unwrap(),
        "print(1)\n"
    );
    assert_eq!(
        fs::metadata(root.upper.join("sandbox/out.txt"))
            .unwrap()
            .uid(),
        0
    );
}

// An image whose writable path is a symlink (to /etc) or whose /tmp holds a FIFO: the path stays
// read-only (never made where the link points), the FIFO never blocks anything.
#[test]
fn an_images_symlinks_and_fifos_never_redirect_a_writable_path() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("wr-link");
    let r = env.dir.join("rootfs");
    let st = std::process::Command::new("cp")
        .args(["-a", &rootfs_str()])
        .arg(&r)
        .status()
        .unwrap();
    assert!(st.success());
    fs::remove_dir_all(r.join("tmp")).unwrap();
    std::os::unix::fs::symlink("/etc", r.join("tmp")).unwrap();
    fs::create_dir_all(r.join("sandbox")).unwrap();
    nix::unistd::mkfifo(
        &r.join("sandbox/fifo"),
        nix::sys::stat::Mode::from_bits_truncate(0o644),
    )
    .unwrap();
    let spec = spec_on(
        &r,
        "/sandbox",
        "if touch /tmp/x 2>/dev/null; then echo tmp-writable; else echo tmp-ro; fi; ls -l /sandbox | grep -c fifo",
    );
    let out = env.run_spec(&spec);
    out.expect_ok();
    assert_eq!(out.stdout, "tmp-ro\n1\n", "{out}");
    assert!(!r.join("etc/x").exists());
}

// Podman's tmpcopyup tmpfs (its /run): the image's content shows in it, nothing is copied, what the
// container writes there is scratch (never written back into the client's layer).
#[test]
fn a_tmpcopyup_tmpfs_shows_the_images_content_without_a_copy() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("wr-copyup");
    let root = client_rootfs(&env);
    fs::create_dir_all(root.merged.join("srv/data")).unwrap();
    fs::write(root.merged.join("srv/data/seed"), "seed\n").unwrap();
    fs::create_dir_all(root.merged.join("srv/empty")).unwrap();
    let mut spec = spec_on(
        &root.merged,
        "/",
        "cat /srv/data/seed; echo s > /srv/data/scratch && echo wrote; grep ' /srv/empty ' /proc/self/mounts | cut -d' ' -f3",
    );
    for dest in ["/srv/data", "/srv/empty"] {
        spec["mounts"].as_array_mut().unwrap().push(json!({
            "destination": dest, "type": "tmpfs", "source": "tmpfs",
            "options": ["rw", "nosuid", "nodev", "size=4m", "tmpcopyup"]
        }));
    }
    let out = env.run_spec(&spec);
    out.expect_ok();
    // over an empty directory of the image: the caller's tmpfs itself, as runc leaves it
    assert_eq!(out.stdout, "seed\nwrote\ntmpfs\n", "{out}");
    assert!(
        !root.upper.join("srv/data/scratch").exists(),
        "a tmpfs's content was written back"
    );
}
