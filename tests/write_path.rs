//! Issue #28, nothing written back (`filesystem.rootfs`, `filesystem.writable`): the container's
//! writes land in the client's own layer as they are made (a client's overlay with `root.readonly`
//! false), or are scratch (a plain directory, `root.readonly: true`): bounded, charged to the
//! container, gone at delete, never written into the rootfs. Judged from the host: the rootfs's
//! files, the client's upper layer while the container runs, the container's memory cgroup after
//! it ended, the host's mount table, wall time of delete against an empty container's, owners of
//! host files, the v1 device cgroup. Each test failed against 77206ba (the store written back at
//! delete).

mod common;

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::*;
use serde_json::json;

/// A spec on `rootfs` running `script` in `cwd` as a client sends it: `root.readonly` as given,
/// HOME /root.
fn spec_on(rootfs: &Path, readonly: bool, cwd: &str, script: &str) -> serde_json::Value {
    let mut spec = base_spec(&["sh", "-c", script]);
    spec["root"]["path"] = json!(rootfs);
    spec["root"]["readonly"] = json!(readonly);
    spec["process"]["cwd"] = json!(cwd);
    spec["process"]["env"]
        .as_array_mut()
        .unwrap()
        .push(json!("HOME=/root"));
    spec
}

/// Where container `id`'s writes land and its views' token, from its ledger.
fn ledger_of(env: &TestEnv, id: &str) -> (String, String) {
    let ledger: serde_json::Value = serde_json::from_slice(
        &fs::read(env.root.join("bundles").join(id).join("footprint.json")).unwrap(),
    )
    .unwrap();
    let token = Path::new(ledger["views"].as_str().unwrap())
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    (ledger["writes"].as_str().unwrap_or("").to_string(), token)
}

/// Every entry below `dir` with its size and content hash, sorted: what a later run would find.
fn tree_of(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let md = fs::symlink_metadata(&p).unwrap();
            let rel = p.strip_prefix(dir).unwrap().display().to_string();
            if md.is_dir() {
                stack.push(p);
                out.push(format!("{rel}/"));
            } else if md.is_file() {
                out.push(format!("{rel} {} {:?}", md.len(), fs::read(&p).unwrap()));
            } else {
                out.push(format!("{rel} {:o}", md.mode()));
            }
        }
    }
    out.sort();
    out
}

/// A copy of the demo image in a directory of the test (a grader's workdir `/sandbox` with
/// `grader.py`), bind-mounted on itself: a rootfs that is a mount of its own.
/// A bind mount of a copy of the test rootfs onto itself, unmounted when dropped (also when the test
/// fails half way: a failing run left its mount behind).
struct MountedImage(PathBuf);

impl Drop for MountedImage {
    fn drop(&mut self) {
        umount(&self.0);
    }
}

fn mounted_image(env: &TestEnv) -> MountedImage {
    let img = env.dir.join("image");
    let st = std::process::Command::new("cp")
        .arg("-a")
        .arg(test_rootfs())
        .arg(&img)
        .status()
        .unwrap();
    assert!(st.success());
    fs::create_dir_all(img.join("sandbox")).unwrap();
    fs::write(img.join("sandbox/grader.py"), "assert answer == 42\n").unwrap();
    let st = std::process::Command::new("mount")
        .args(["--bind"])
        .arg(&img)
        .arg(&img)
        .status()
        .unwrap();
    assert!(st.success());
    MountedImage(img)
}

fn umount(p: &Path) {
    let _ = std::process::Command::new("umount")
        .arg("-l")
        .arg(p)
        .status();
}

// 1. A harness runs submissions one after another on one rootfs that is a mount of its own (a bind,
// an image, an overlay it mounted) and sends `root.readonly: true`. Against 77206ba submission A's
// writes to the workdir, /tmp and HOME were committed into the rootfs at delete and submission B
// read A's grader.py. Now they are scratch: the rootfs is byte for byte what it was, B sees the
// original grader, and the host never sees A's writes on the rootfs, even while A runs.
#[test]
fn a_read_only_rootfs_is_never_written_and_the_next_run_sees_it_as_it_was() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("wp-graders");
    let image = mounted_image(&env);
    let img = image.0.clone();
    let ovl = OverlayRoot::new(&env);
    fs::create_dir_all(ovl.merged.join("sandbox")).unwrap();
    fs::write(
        ovl.merged.join("sandbox/grader.py"),
        "assert answer == 42\n",
    )
    .unwrap();
    for rootfs in [img.clone(), ovl.merged.clone()] {
        let before = tree_of(&rootfs);
        let upper_before = tree_of(&ovl.upper);
        let a = spec_on(
            &rootfs,
            true,
            "/sandbox",
            "echo 'pass' > grader.py; echo x > /tmp/planted; echo y > ~/.planted; \
             touch /sandbox/new.py; cat grader.py; sleep 2",
        );
        let id = env.id();
        let _g = env.guard(&id);
        let b = env.bundle(&a);
        let mut child = env
            .command(
                &rloxsc_bin(),
                &["run", "--bundle", b.to_str().unwrap(), &id],
            )
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // while A runs, the rootfs on the host is not A's
        std::thread::sleep(Duration::from_millis(800));
        assert!(
            !rootfs.join("tmp/planted").exists() && !rootfs.join("sandbox/new.py").exists(),
            "A's writes show on the rootfs {}",
            rootfs.display()
        );
        let st = wait_child(&mut child, Duration::from_secs(60), "run A");
        let mut out = String::new();
        std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut out).unwrap();
        assert!(
            st.success() && out.contains("pass"),
            "A could not write its scratch: {out}"
        );
        assert_eq!(
            tree_of(&rootfs),
            before,
            "A changed the rootfs {}",
            rootfs.display()
        );
        assert_eq!(
            tree_of(&ovl.upper),
            upper_before,
            "A changed the harness's layer"
        );
        let b = env.run_spec(&spec_on(
            &rootfs,
            true,
            "/sandbox",
            "cat grader.py; ls /tmp",
        ));
        b.expect_ok();
        assert_eq!(b.stdout, "assert answer == 42\n", "B saw A's files: {b}");
        env.assert_nothing_left(&id, "after A");
    }
    drop(image);
}

// 2. Against 77206ba the store was committed at delete and the commit stopped half way (EMFILE
// with 1,100 hard-linked inodes, a tree deeper than 256, EFBIG, EMLINK) while delete exited 0: the
// container's results and the file the client had copied in were gone. Now each write is in the
// client's layer as it is made (seen there while the container still runs), and delete removes
// nothing of it.
#[test]
fn the_containers_writes_are_in_the_clients_layer_as_they_are_made() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("wp-as-made");
    let root = OverlayRoot::new(&env);
    fs::create_dir_all(root.merged.join("sandbox")).unwrap();
    // the client copies its input in before start
    fs::write(
        root.merged.join("sandbox/input.txt"),
        "the client's input\n",
    )
    .unwrap();
    let spec = spec_on(
        &root.merged,
        false,
        "/sandbox",
        "mkdir -p /tmp/h && cd /tmp/h && for i in $(seq 1 1100); do echo $i > f$i; ln f$i l$i; done; \
         d=/sandbox/deep; for i in $(seq 1 300); do d=$d/d; done; mkdir -p $d && echo bottom > $d/f; \
         truncate -s 1099511627776 /sandbox/sparse; echo result > /sandbox/result.txt; echo ready; sleep 100",
    );
    let c = env.start_container(&spec);
    let up = |p: &str| root.upper.join(p);
    assert!(
        poll_until(Duration::from_secs(60), || up("sandbox/result.txt")
            .exists()),
        "the container's result is not in the client's layer while it runs"
    );
    let deep: PathBuf = std::iter::once("sandbox/deep".to_string())
        .chain((0..300).map(|_| "d".to_string()))
        .collect::<Vec<_>>()
        .join("/")
        .into();
    let check = |when: &str| {
        assert_eq!(
            fs::read_to_string(up("sandbox/input.txt")).unwrap(),
            "the client's input\n",
            "{when}"
        );
        assert_eq!(
            fs::read_to_string(up("sandbox/result.txt")).unwrap(),
            "result\n",
            "{when}"
        );
        assert_eq!(
            fs::read_to_string(root.upper.join(&deep).join("f")).unwrap(),
            "bottom\n",
            "{when}"
        );
        let sparse = fs::metadata(up("sandbox/sparse")).unwrap();
        assert_eq!(sparse.len(), 1 << 40, "{when}");
        assert!(
            sparse.blocks() * 512 < 1 << 20,
            "{when}: the hole was written"
        );
        for i in [1, 550, 1100] {
            let f = fs::metadata(up(&format!("tmp/h/f{i}"))).unwrap();
            assert_eq!(f.nlink(), 2, "{when}");
            assert_eq!(
                f.ino(),
                fs::metadata(up(&format!("tmp/h/l{i}"))).unwrap().ino()
            );
            assert_eq!(
                f.uid(),
                0,
                "{when}: the container's root is the client's root"
            );
        }
    };
    check("while running");
    let id = c.id.clone();
    drop(c);
    env.assert_nothing_left(&id, "after delete");
    check("after delete");
    // nothing of rloxsc is left in the client's storage
    let names: Vec<String> = fs::read_dir(root.upper.parent().unwrap())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!names.iter().any(|n| n.contains("rloxsc")), "{names:?}");
}

/// Creates, starts, waits for the end of and times the delete of a container on a client's
/// rootfs that writes `files` files.
fn timed_delete(env: &TestEnv, files: usize) -> Duration {
    let root = OverlayRoot::new(env);
    let spec = spec_on(
        &root.merged,
        false,
        "/tmp",
        &format!("mkdir -p /tmp/many && cd /tmp/many && i=0; while [ $i -lt {files} ]; do : > f$i; i=$((i+1)); done"),
    );
    let id = env.id();
    let _g = env.guard(&id);
    let b = env.bundle(&spec);
    env.create(&b, &id).expect_ok();
    env.rloxsc(&["start", &id]).expect_ok();
    assert!(env.wait_for_status(&id, "stopped", Duration::from_secs(120)));
    let t0 = Instant::now();
    env.rloxsc(&["delete", &id]).expect_ok();
    let took = t0.elapsed();
    assert_eq!(
        fs::read_dir(root.upper.join("tmp/many"))
            .map(|d| d.count())
            .unwrap_or(0),
        files,
        "the container's files are not all in the client's layer"
    );
    took
}

// 3. Against 77206ba delete wrote the store back: 42 s for 524k entries, and `run --timeout`
// overran by seconds. Now delete does not grow with what the container wrote: the delete of a
// container that wrote 30,000 files takes about what an empty one's takes (a ratio, in one run).
#[test]
fn delete_does_not_grow_with_what_the_container_wrote() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("wp-delete");
    let empty: Vec<Duration> = (0..3).map(|_| timed_delete(&env, 0)).collect();
    let full = timed_delete(&env, 30_000);
    let base = *empty.iter().max().unwrap();
    assert!(
        full < base * 3 + Duration::from_millis(150),
        "delete after 30,000 files took {full:?}, an empty container's {empty:?}"
    );
}

// 4. Against 77206ba a container that ended and was not deleted held its writes in host memory
// (the store was tmpfs: 599 MiB for three containers). Now what it wrote into the client's layer is
// on the layer's filesystem: its memory cgroup holds no shmem for it, and the host has no store
// mounted for it.
#[test]
fn an_ended_container_holds_no_memory_for_what_it_wrote() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("wp-memory");
    let root = OverlayRoot::new(&env);
    let spec = spec_on(
        &root.merged,
        false,
        "/tmp",
        "dd if=/dev/urandom of=/tmp/data bs=1M count=64 2>/dev/null; sync",
    );
    let id = env.id();
    let _g = env.guard(&id);
    let b = env.bundle(&spec);
    env.create(&b, &id).expect_ok();
    env.rloxsc(&["start", &id]).expect_ok();
    assert!(env.wait_for_status(&id, "stopped", Duration::from_secs(60)));
    assert_eq!(
        fs::metadata(root.upper.join("tmp/data")).unwrap().len(),
        64 << 20
    );
    let stat = cgroup_dirs_of(&id)
        .iter()
        .find(|d| d.starts_with("/sys/fs/cgroup/memory"))
        .and_then(|d| fs::read_to_string(d.join("memory.stat")).ok())
        .or_else(|| {
            cgroup_dirs_of(&id)
                .first()
                .and_then(|d| fs::read_to_string(d.join("memory.stat")).ok())
        })
        .expect("the ended container's memory cgroup");
    let shmem: u64 = stat
        .lines()
        .find_map(|l| l.strip_prefix("shmem ").map(|v| v.trim().parse().unwrap()))
        .unwrap_or(0);
    assert!(
        shmem < 4 << 20,
        "the ended container holds {shmem} bytes of shmem"
    );
    // no store of its own on the host (its views' token, from its ledger)
    let (writes, token) = ledger_of(&env, &id);
    assert_eq!(writes, "Layer");
    let mountinfo = fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(
        !mountinfo.contains(&format!("rloxsc-{token}-store")),
        "a store is mounted for the ended container"
    );
    env.rloxsc(&["delete", &id]).expect_ok();
}

// 6. A root harness that keeps job layers where a local user can write (uid 1002 owns the job
// directory). Against 77206ba the user replaced `upper` by a symlink to /etc before create and the
// container read the host's /etc/shadow (the layer was reopened by its path). Now a layer a local
// user could swap is refused before anything is mounted, naming the path, the owner and the key,
// and the container never runs; the harness may send root.readonly: true for scratch.
#[test]
fn layers_a_local_user_could_swap_are_refused() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("wp-swap");
    let root = OverlayRoot::new(&env);
    let job = root.upper.parent().unwrap().to_path_buf();
    // the user owns the job directory; then swaps the upper layer for a link to /etc
    std::os::unix::fs::chown(&job, Some(1002), Some(1002)).unwrap();
    let spec = spec_on(&root.merged, false, "/", "cat /etc/shadow; echo ran");
    let out = env.run_spec(&spec);
    assert!(!out.ok() && !out.stdout.contains("ran"), "{out}");
    assert_error(&out, &["uid 1002", "filesystem.rootfs"]);
    fs::rename(&root.upper, job.join("upper.real")).unwrap();
    std::os::unix::fs::symlink("/etc", &root.upper).unwrap();
    std::os::unix::fs::lchown(&root.upper, Some(1002), Some(1002)).unwrap();
    let out = env.run_spec(&spec);
    assert!(!out.ok(), "{out}");
    assert!(
        !out.stdout.contains("root:"),
        "the host's /etc/shadow was read: {out}"
    );
    // the same job with root.readonly: true runs, as scratch
    let out = env.run_spec(&spec_on(&root.merged, true, "/", "echo ran"));
    out.expect_ok();
    // nothing was made in the user's directory
    assert!(
        fs::read_dir(&job)
            .unwrap()
            .flatten()
            .all(|e| !e.file_name().to_string_lossy().contains("rloxsc")),
        "rloxsc wrote into the user's directory"
    );
    fs::remove_file(&root.upper).unwrap();
    fs::rename(job.join("upper.real"), &root.upper).unwrap();
}

fn devices_list(id: &str) -> String {
    read_trimmed(format!("/sys/fs/cgroup/devices/rloxsc/{id}/devices.list"))
}

// 7. Against 77206ba `update --memory` added `c 10:200 rwm` (/dev/net/tun) to a running
// container's v1 device list, and an update before `start` made start fail and remove the
// container; a scratch store stayed at its size when the memory limit shrank (the writer was
// OOM-killed instead of getting ENOSPC). Now update leaves device rules alone, start runs after it,
// and the store follows the memory limit.
#[test]
fn update_never_changes_device_rules_and_the_store_follows_memory() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("wp-update");
    let mut spec = base_spec(&["sh", "-c", "sleep 100"]);
    spec["linux"]["resources"] = json!({"memory": {"limit": 1u64 << 30}});
    let id = env.id();
    let _g = env.guard(&id);
    let b = env.bundle(&spec);
    env.create(&b, &id).expect_ok();
    let v1 = Path::new("/sys/fs/cgroup/devices/rloxsc")
        .join(&id)
        .exists();
    let before = if v1 { devices_list(&id) } else { String::new() };
    env.rloxsc(&["update", "--memory", "128m", &id]).expect_ok();
    if v1 {
        assert_eq!(
            devices_list(&id),
            before,
            "update before start changed the device rules"
        );
    }
    env.rloxsc(&["start", &id]).expect_ok();
    assert_eq!(env.status(&id).as_deref(), Some("running"));
    env.rloxsc(&["update", "--memory", "64m", &id]).expect_ok();
    if v1 {
        assert_eq!(devices_list(&id), before, "update changed the device rules");
        assert!(!devices_list(&id).contains("10:200"));
    }
    // the scratch store: half the memory limit, on the host's mount table
    let (_, token) = ledger_of(&env, &id);
    let line = fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .find(|l| l.contains(&format!("rloxsc-{token}-store ")))
        .map(str::to_string)
        .expect("the container's store on the host");
    assert!(
        line.contains("size=32768k"),
        "the store did not follow the memory limit: {line}"
    );
    env.rloxsc(&["delete", "--force", &id]).expect_ok();
}

// 7. `exec` into a container whose working directory the container swapped for a dangling
// symlink exited 255 with no message. Now it says why, in runc's words.
#[test]
fn exec_into_a_swapped_cwd_says_why() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("wp-cwd");
    let spec = base_spec(&["sh", "-c", "ln -s /nonexistent /tmp/w; sleep 100"]);
    let c = env.start_container(&spec);
    assert!(poll_until(Duration::from_secs(10), || {
        env.rloxsc(&["exec", &c.id, "test", "-L", "/tmp/w"]).ok()
    }));
    let out = env.rloxsc(&["exec", "--cwd", "/tmp/w", &c.id, "pwd"]);
    assert!(!out.ok(), "{out}");
    assert_error(
        &out,
        &["chdir to cwd (/tmp/w)", "no such file or directory"],
    );
}

// 7. In a writable bind of a local user's directory (uid 1002), the files the container's uid 1002
// created belonged to host root and the user could not remove them. Now they are the user's: the
// directory's owner is the container's process user there, and nothing in the container writes as
// host root.
#[test]
fn files_created_in_a_users_bind_belong_to_the_user() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("wp-bind");
    let dir = env.dir.join("home-u");
    fs::create_dir(&dir).unwrap();
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).unwrap();
    std::os::unix::fs::chown(&dir, Some(1002), Some(1002)).unwrap();
    let bind =
        json!({"destination": "/work", "type": "bind", "source": dir, "options": ["rbind", "rw"]});
    // docker run -u 1002 -v DIR:/work
    let mut spec = base_spec(&[
        "sh",
        "-c",
        "echo u > /work/by-user && mkdir /work/d && id -u",
    ]);
    spec["process"]["user"] = json!({"uid": 1002, "gid": 1002});
    spec["mounts"].as_array_mut().unwrap().push(bind.clone());
    let out = env.run_spec(&spec);
    out.expect_ok();
    for f in ["by-user", "d"] {
        let md = fs::metadata(dir.join(f)).unwrap();
        assert_eq!((md.uid(), md.gid()), (1002, 1002), "{f}: {out}");
    }
    // as the container's root (the default): the owner too; another container user never host root
    let mut spec = base_spec(&[
        "sh",
        "-c",
        "echo r > /work/by-root; (setpriv --reuid 1002 --regid 1002 --clear-groups sh -c 'echo x > /work/by-1002' 2>/dev/null || true)",
    ]);
    spec["mounts"].as_array_mut().unwrap().push(bind);
    env.run_spec(&spec).expect_ok();
    assert_eq!(fs::metadata(dir.join("by-root")).unwrap().uid(), 1002);
    if let Ok(md) = fs::metadata(dir.join("by-1002")) {
        assert_ne!(md.uid(), 0, "a container user wrote as host root");
    }
}
