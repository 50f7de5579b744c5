//! Issue #10: the image's system stays read-only, and what code-eval clients write works: the
//! workdir and `/tmp` (and the other `filesystem.writable` paths) are size-limited tmpfs holding the
//! image's content, visible from the host where the client's copy API (Docker's archive API) looks.
//! At the container's end, what it wrote there is written back to the rootfs's writable layer (as
//! runc leaves it). Each test failed against the runtime before writable paths (4c23f5c + #13): the
//! workdir was read-only, `/tmp` an empty tmpfs seen only inside the container.

mod common;

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use common::*;
use serde_json::json;

/// Host-side mounts of rloxsc's writable tmpfs below `dir` (from this mount namespace).
fn writable_views_under(dir: &Path) -> Vec<String> {
    fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .filter(|l| l.contains(" - tmpfs rloxsc-"))
        .filter(|l| {
            l.split(' ')
                .nth(4)
                .is_some_and(|p| Path::new(p).starts_with(dir))
        })
        .map(str::to_string)
        .collect()
}

/// An overlay rootfs (as Docker's: a shared mount) with `/sandbox` holding a file and a directory
/// of the image.
fn image_with_workdir(env: &TestEnv) -> OverlayRoot {
    let root = OverlayRoot::new(env);
    // Docker's rootfs is a shared mount: its clone would be a peer (found through Docker: the
    // host-side views propagated into the container and were unmounted with the view directory)
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
    root
}

// llm-sandbox creates its venv in its workdir and the code writes next to itself; under a
// read-only root both failed with EROFS. The workdir now holds the image's content, owned as in
// the image, writable; the image's system paths stay read-only.
#[test]
fn the_workdir_and_tmp_are_writable_with_the_images_content_and_the_system_is_not() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("wr-workdir");
    let root = image_with_workdir(&env);
    let mut spec = base_spec(&[
        "sh",
        "-c",
        "cat in-image.txt; stat -c '%u %a' pkg; cat pkg/mod.py; echo out > result.txt && cat result.txt; \
         echo t > /tmp/t && cat /tmp/t; \
         for d in / /etc /usr /bin /sandbox/../etc; do if touch $d/.rx 2>/dev/null; then echo \"$d writable\"; else echo \"$d ro\"; fi; done",
    ]);
    spec["root"]["path"] = json!(root.merged);
    spec["process"]["cwd"] = json!("/sandbox");
    let out = env.run_spec(&spec);
    out.expect_ok();
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(
        &lines[..5],
        &["from the image", "0 750", "x = 1", "out", "t"],
        "{out}"
    );
    for l in &lines[5..] {
        assert!(l.ends_with(" ro"), "a system path is writable: {out}");
    }
    // at the end, what it wrote is in the rootfs's writable layer, as under runc (docker cp out of
    // an exited container), with the ids it had inside; nothing else changed there
    assert_eq!(
        fs::read_to_string(root.upper.join("sandbox/result.txt")).unwrap(),
        "out\n"
    );
    assert_eq!(
        fs::metadata(root.upper.join("sandbox/result.txt"))
            .unwrap()
            .uid(),
        0
    );
    assert_eq!(fs::read_to_string(root.upper.join("tmp/t")).unwrap(), "t\n");
    assert!(!root.upper.join(".rx").exists() && !root.upper.join("etc/.rx").exists());
    assert!(writable_views_under(&env.dir).is_empty());
}

// Each writable path is bounded: a container that fills it gets ENOSPC, nothing lands elsewhere.
#[test]
fn a_writable_path_is_size_bounded() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("wr-size");
    let policy = env.dir.join("policy.toml");
    fs::write(
        &policy,
        "[filesystem]\nwritable = [\"$WORKDIR=2M\", \"/tmp=3M\"]\n",
    )
    .unwrap();
    let root = image_with_workdir(&env);
    let mut spec = base_spec(&[
        "sh",
        "-c",
        "dd if=/dev/zero of=/tmp/big bs=1M count=8 2>/dev/null; echo tmp=$?; ls -l /tmp/big | awk '{print $5}'; \
         dd if=/dev/zero of=/sandbox/big bs=1M count=8 2>/dev/null; echo wd=$?; grep -E ' /(tmp|sandbox) ' /proc/self/mountinfo",
    ]);
    spec["root"]["path"] = json!(root.merged);
    spec["process"]["cwd"] = json!("/sandbox");
    let out = env.run_spec_with_policy(&spec, &policy);
    out.expect_ok();
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.first().copied(), Some("tmp=1"), "{out}");
    let size: u64 = lines[1].parse().unwrap();
    assert!(size <= 3 << 20, "/tmp held {size} bytes: {out}");
    assert_eq!(lines.get(2).copied(), Some("wd=1"), "{out}");
    assert!(
        out.stdout.contains("size=2048k") && out.stdout.contains("size=3072k"),
        "{out}"
    );
    // what was written back is what fitted
    let back = fs::metadata(root.upper.join("tmp/big"))
        .map(|m| m.len())
        .unwrap_or(0);
    assert!(back <= 3 << 20, "{back}");
}

// An image whose content does not fit its writable size is refused, naming the key.
#[test]
fn an_image_whose_content_does_not_fit_is_refused() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("wr-nofit");
    let policy = env.dir.join("policy.toml");
    fs::write(&policy, "[filesystem]\nwritable = [\"$WORKDIR=1M\"]\n").unwrap();
    let root = image_with_workdir(&env);
    fs::write(root.merged.join("sandbox/huge"), vec![7u8; 3 << 20]).unwrap();
    let mut spec = base_spec(&["true"]);
    spec["root"]["path"] = json!(root.merged);
    spec["process"]["cwd"] = json!("/sandbox");
    let id = env.id();
    let _g = env.guard(&id);
    let b = env.bundle(&spec);
    let out = env.rloxsc(&[
        "--policy",
        policy.to_str().unwrap(),
        "run",
        "--bundle",
        b.to_str().unwrap(),
        &id,
    ]);
    assert!(!out.ok(), "{out}");
    assert_error(&out, &["/sandbox", "filesystem.writable"]);
    env.assert_nothing_left(&id, "refused image");
    assert!(writable_views_under(&env.dir).is_empty());
}

// Docker's archive API (docker cp, put_archive, get_archive) works on the rootfs in the daemon's
// mount namespace: it saw neither rloxsc's /tmp nor what the container wrote (a `docker cp` into
// /tmp "succeeded" into the image layer, invisible inside). The writable paths are now attached
// there too, with the container's ids inverted: what host root puts there is the container root's.
#[test]
fn the_host_sees_the_writable_paths_where_a_clients_copy_api_looks() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("wr-hostview");
    let root = image_with_workdir(&env);
    let mut spec = base_spec(LONG_LIVED);
    spec["root"]["path"] = json!(root.merged);
    spec["process"]["cwd"] = json!("/sandbox");
    let c = env.start_container(&spec);
    // the host sees the image's content and what the container writes, with the ids inside
    let out = env.rloxsc(&[
        "exec",
        &c.id,
        "sh",
        "-c",
        "echo result > /sandbox/result.txt && mkdir /tmp/plots && echo png > /tmp/plots/p.png",
    ]);
    out.expect_ok();
    let on_host = root.merged.join("sandbox/result.txt");
    assert_eq!(fs::read_to_string(&on_host).unwrap(), "result\n");
    assert_eq!(fs::metadata(&on_host).unwrap().uid(), 0);
    assert_eq!(
        fs::read_to_string(root.merged.join("tmp/plots/p.png")).unwrap(),
        "png\n"
    );
    assert_eq!(
        fs::read_to_string(root.merged.join("sandbox/in-image.txt")).unwrap(),
        "from the image\n"
    );
    // what host root puts there (a new directory, as put_archive's mkdir -p) is the container root's
    fs::create_dir_all(root.merged.join("sandbox/new/dir")).unwrap();
    fs::write(root.merged.join("sandbox/new/dir/code.py"), "print(1)\n").unwrap();
    let out = env.rloxsc(&[
        "exec",
        &c.id,
        "sh",
        "-c",
        "stat -c %u /sandbox/new/dir/code.py; echo more >> /sandbox/new/dir/code.py && rm -r /sandbox/new && echo removed",
    ]);
    out.expect_ok();
    assert_eq!(out.stdout, "0\nremoved\n", "{out}");
    assert_eq!(
        writable_views_under(&root.merged).len(),
        3,
        "/sandbox, /tmp, /run"
    );
    // delete takes the host-side views and leaves what the container wrote in the rootfs's
    // writable layer, as runc would have (the client's `cp` out of an exited container); what it
    // removed is gone there too; unchanged image files are not rewritten
    let before = fs::metadata(root.upper.join("sandbox/in-image.txt"))
        .unwrap()
        .ino();
    env.rloxsc(&["delete", "--force", &c.id]).expect_ok();
    assert!(
        writable_views_under(&env.dir).is_empty(),
        "{:?}",
        writable_views_under(&env.dir)
    );
    assert_eq!(
        fs::read_to_string(root.merged.join("sandbox/result.txt")).unwrap(),
        "result\n"
    );
    assert_eq!(
        fs::metadata(root.merged.join("sandbox/result.txt"))
            .unwrap()
            .uid(),
        0
    );
    assert_eq!(
        fs::read_to_string(root.merged.join("tmp/plots/p.png")).unwrap(),
        "png\n"
    );
    assert!(!root.merged.join("sandbox/new").exists());
    assert_eq!(
        fs::metadata(root.upper.join("sandbox/in-image.txt"))
            .unwrap()
            .ino(),
        before
    );
}

// A `delete --force` after a runtime killed before it wrote its record still finds the host-side
// views (by their source name, from the container's id).
#[test]
fn delete_force_finds_the_host_side_views_without_a_record() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("wr-killed");
    let root = image_with_workdir(&env);
    let mut spec = base_spec(LONG_LIVED);
    spec["root"]["path"] = json!(root.merged);
    spec["process"]["cwd"] = json!("/sandbox");
    let c = env.start_container(&spec);
    assert!(!writable_views_under(&root.merged).is_empty());
    // what a killed create leaves: no state at all
    let _ = fs::remove_dir_all(env.root.join("containers").join(&c.id));
    let _ = fs::remove_dir_all(env.root.join("bundles").join(&c.id));
    let _ = std::process::Command::new("kill")
        .args(["-9", &c.pid.to_string()])
        .status();
    env.rloxsc(&["delete", "--force", &c.id]).expect_ok();
    assert!(
        writable_views_under(&env.dir).is_empty(),
        "{:?}",
        writable_views_under(&env.dir)
    );
}

// The image owns every byte it ships: a /tmp that is a symlink to /etc, a FIFO or a link to the
// host's /etc/shadow in the workdir never make rloxsc write, follow or block on anything outside.
#[test]
fn an_images_symlinks_and_fifos_never_redirect_a_writable_path() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("wr-hostile");
    let root = image_with_workdir(&env);
    fs::remove_dir_all(root.merged.join("tmp")).unwrap();
    std::os::unix::fs::symlink("/etc", root.merged.join("tmp")).unwrap();
    std::os::unix::fs::symlink("/etc/shadow", root.merged.join("sandbox/shadow")).unwrap();
    nix_mkfifo(&root.merged.join("sandbox/fifo"));
    let host_etc = fs::read_dir("/etc").unwrap().count();
    let mut spec = base_spec(&[
        "sh",
        "-c",
        "if touch /etc/.rx 2>/dev/null; then echo etc writable; else echo etc ro; fi; readlink /sandbox/shadow; ls /sandbox",
    ]);
    spec["root"]["path"] = json!(root.merged);
    spec["process"]["cwd"] = json!("/sandbox");
    let out = env.run_spec(&spec);
    out.expect_ok();
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(
        lines.first().copied(),
        Some("etc ro"),
        "/tmp -> /etc made /etc writable: {out}"
    );
    assert_eq!(lines.get(1).copied(), Some("/etc/shadow"), "{out}");
    assert!(!out.stdout.contains("fifo"), "a FIFO was copied: {out}");
    assert_eq!(fs::read_dir("/etc").unwrap().count(), host_etc);
    assert!(writable_views_under(Path::new("/etc")).is_empty());
}

fn nix_mkfifo(p: &Path) {
    let st = std::process::Command::new("mkfifo")
        .arg(p)
        .status()
        .unwrap();
    assert!(st.success());
}

// The caller's mounts win: a volume at /tmp/x stays visible below rloxsc's /tmp (Kubernetes
// hostPath volumes under /tmp were hidden by it, found through the CRI client), and a caller's own
// /tmp replaces rloxsc's.
#[test]
fn a_callers_volume_below_a_writable_path_stays_visible() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("wr-volume");
    let vol = env.dir.join("vol");
    fs::create_dir_all(&vol).unwrap();
    fs::write(vol.join("f"), "volume\n").unwrap();
    let mut spec = base_spec(&["sh", "-c", "cat /tmp/x/f; echo t > /tmp/t && cat /tmp/t"]);
    spec["mounts"].as_array_mut().unwrap().push(json!({
        "destination": "/tmp/x", "type": "bind", "source": vol, "options": ["rbind", "ro"]
    }));
    let out = env.run_spec(&spec);
    out.expect_ok();
    assert_eq!(out.stdout, "volume\nt\n", "{out}");
}

// A caller that maps the ids itself (Podman's userns=auto, Kubernetes' hostUsers: false) keeps its
// rootfs in host ids: the host-side views and what is written back at delete hold host ids, as
// runc would leave them (found through Podman with userns=auto: `podman cp` out of an exited
// container failed with "host ID 0 cannot be mapped to a container ID").
#[test]
fn a_callers_own_mapping_keeps_host_ids_in_the_rootfs() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("wr-callermap");
    let root = image_with_workdir(&env);
    // the caller's storage is in its host ids (Podman chowns an image's layers for userns=auto)
    let st = std::process::Command::new("chown")
        .args(["-R", "300000:300000"])
        .arg(root.merged.join("sandbox"))
        .status()
        .unwrap();
    assert!(st.success());
    let mut spec = base_spec(LONG_LIVED);
    spec["root"]["path"] = json!(root.merged);
    spec["process"]["cwd"] = json!("/sandbox");
    let map = json!([{"containerID": 0, "hostID": 300000, "size": 65536}]);
    spec["linux"]["uidMappings"] = map.clone();
    spec["linux"]["gidMappings"] = map;
    spec["linux"]["namespaces"]
        .as_array_mut()
        .unwrap()
        .push(json!({"type": "user"}));
    let c = env.start_container(&spec);
    env.rloxsc(&["exec", &c.id, "sh", "-c", "echo r > /sandbox/result.txt"])
        .expect_ok();
    let on_host = root.merged.join("sandbox/result.txt");
    assert_eq!(
        fs::metadata(&on_host).unwrap().uid(),
        300000,
        "host-side view"
    );
    env.rloxsc(&["delete", "--force", &c.id]).expect_ok();
    assert_eq!(fs::read_to_string(&on_host).unwrap(), "r\n");
    assert_eq!(
        fs::metadata(&on_host).unwrap().uid(),
        300000,
        "written back"
    );
    // a writable path whose directory the mapping lacks (Podman's API makes a missing workdir as
    // host root) is the container root's
    fs::create_dir_all(root.merged.join("work")).unwrap();
    let mut spec2 = spec.clone();
    spec2["process"]["cwd"] = json!("/work");
    spec2["process"]["args"] = json!(["sh", "-c", "echo w > /work/w && cat /work/w"]);
    let out = env.run_spec(&spec2);
    out.expect_ok();
    assert_eq!(out.stdout, "w\n");
    // the image's own files keep the ids they have on disk
    assert_eq!(
        fs::metadata(root.merged.join("sandbox/in-image.txt"))
            .unwrap()
            .uid(),
        300000
    );
}

// Under overlayfs (not idmapped) libcontainer, mounting from inside the user namespace, cannot open
// an image directory only host root may (found through Podman with `-w /root`: every create failed
// with "cannot re-open"). Such a path gets no writable tmpfs; the container still starts.
#[test]
fn a_writable_path_closed_to_the_container_is_skipped_not_fatal() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("wr-closed");
    let root = image_with_workdir(&env);
    fs::create_dir_all(root.merged.join("secret")).unwrap();
    fs::set_permissions(
        root.merged.join("secret"),
        fs::Permissions::from_mode(0o700),
    )
    .unwrap();
    let policy = env.dir.join("policy.toml");
    fs::write(
        &policy,
        "[filesystem]\nwritable = [\"/tmp\", \"/secret\"]\n",
    )
    .unwrap();
    let mut spec = base_spec(&[
        "sh",
        "-c",
        "echo t > /tmp/t && cat /tmp/t; ls /secret 2>&1 | head -1",
    ]);
    spec["root"]["path"] = json!(root.merged);
    let out = env.run_spec_with_policy(&spec, &policy);
    out.expect_ok();
    assert!(out.stdout.starts_with("t\n"), "{out}");
    assert!(out.stdout.contains("Permission denied"), "{out}");
}
