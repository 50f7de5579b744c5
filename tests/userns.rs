//! Issue #13: container root is not host root. Every container gets a user namespace mapping its ids
//! onto a block of host ids of its own; the image's files still look like root's inside (idmapped
//! rootfs, where the filesystem allows); per-user kernel limits are no longer host root's. Each test
//! failed against the runtime before user namespaces (4c23f5c): the container ran as host uid 0.

mod common;

use std::fs;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;

use common::*;
use serde_json::json;

/// The host uids (real, effective, saved, fs) of process `pid`.
fn host_uids(pid: i32) -> Vec<u32> {
    let st = fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status_field(&st, "Uid")
        .unwrap()
        .split_whitespace()
        .map(|v| v.parse().unwrap())
        .collect()
}

fn uid_map(pid: i32) -> String {
    fs::read_to_string(format!("/proc/{pid}/uid_map")).unwrap()
}

#[test]
fn container_root_is_a_host_uid_of_its_own() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("uns-root");
    let a = env.start_container(&base_spec(LONG_LIVED));
    let b = env.start_container(&base_spec(LONG_LIVED));
    let (ua, ub) = (host_uids(a.pid), host_uids(b.pid));
    assert!(
        ua.iter().all(|u| *u != 0),
        "container a runs as host root: {ua:?}"
    );
    assert!(
        ub.iter().all(|u| *u != 0),
        "container b runs as host root: {ub:?}"
    );
    assert_ne!(ua[0], ub[0], "two containers share a host uid");
    // the map is exactly one block of 65536 ids, starting at that uid
    let fields: Vec<u64> = uid_map(a.pid)
        .split_whitespace()
        .map(|v| v.parse().unwrap())
        .collect();
    assert_eq!(fields, vec![0, ua[0] as u64, 65536], "uid_map of a");
    // a user namespace that is not the host's
    assert_ne!(
        ns_id(format!("/proc/{}/ns/user", a.pid)),
        ns_id("/proc/self/ns/user")
    );
    // root inside: and the image's files are root's there (idmapped rootfs on this filesystem)
    let out = env.rloxsc(&[
        "exec",
        &a.id,
        "sh",
        "-c",
        "id -u; stat -c %u /bin/busybox; cat /proc/self/uid_map",
    ]);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.first().copied(), Some("0"), "{out}");
    assert_eq!(
        lines.get(1).copied(),
        Some("0"),
        "the image's files are not root's inside: {out}"
    );
    // an exec'd process is in the container's user namespace too, as the same host uid
    let execd = env.rloxsc(&["exec", "-d", &a.id, "sleep", "300"]);
    execd.expect_ok();
    let pids = pids_in_cgroup_of(&a.id);
    for p in pids {
        assert_ne!(
            host_uids(p)[0],
            0,
            "process {p} of the container runs as host root"
        );
    }
}

#[test]
fn features_list_the_user_namespace_and_idmapped_mounts() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("uns-features");
    let out = env.rloxsc(&["features"]);
    out.expect_ok();
    let f: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert!(
        f["linux"]["namespaces"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n == "user"),
        "{f}"
    );
    assert_eq!(
        f["linux"]["mountExtensions"]["idmap"]["enabled"], true,
        "{f}"
    );
    let opts = f["mountOptions"].as_array().unwrap();
    for o in ["idmap", "ridmap", "rro"] {
        assert!(opts.iter().any(|x| x == o), "{o} missing: {f}");
    }
}

/// Starts `rloxsc run` of `seccomp-probe hold <what>` and waits for its "held N" line; returns the
/// run, what it held and the container's id.
fn holder(env: &TestEnv, what: &str) -> (Child, u64, String) {
    let id = env.id();
    let b = env.bundle(&base_spec(&["/bin/seccomp-probe", "hold", what]));
    let mut cmd = env.command(
        &rloxsc_bin(),
        &["run", "--bundle", b.to_str().unwrap(), &id],
    );
    cmd.stdout(Stdio::piped()).stderr(Stdio::null());
    let mut child = cmd.spawn().unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let n = line
        .trim()
        .strip_prefix("held ")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    (child, n, id)
}

/// Kills the holder's `rloxsc run` and waits until its custodian has released the container (the
/// test's state root is removed when the test ends: a release still running then would find no
/// ledger and leave the cgroup behind).
fn kill_holder(env: &TestEnv, mut run: Child, id: &str) {
    let _ = run.kill();
    let _ = run.wait();
    let released = poll_until(Duration::from_secs(20), || env.leftovers(id).is_empty());
    assert!(
        released,
        "the killed run's container was not released: {:?}",
        env.leftovers(id)
    );
}

// 4c23f5c: the container's root was host uid 0, so it shared host root's inotify instances and pipe
// pages: the container took them all and host root's next inotify_init failed, its new pipes shrank.
#[test]
fn a_container_cannot_exhaust_host_roots_per_user_limits() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("uns-limits");
    let (c, held, id) = holder(&env, "inotify");
    assert!(held >= 8, "the container got only {held} inotify instances");
    // host root still gets one
    // SAFETY: inotify_init1 and close on the fd it returns
    let fd = unsafe { libc::inotify_init1(0) };
    assert!(
        fd >= 0,
        "host root cannot create an inotify instance: {}",
        std::io::Error::last_os_error()
    );
    // SAFETY: closing the fd just opened
    unsafe { libc::close(fd) };
    kill_holder(&env, c, &id);

    let (c, held, id) = holder(&env, "pipes");
    assert!(held >= 8, "the container got only {held} large pipes");
    let mut p = [0i32; 2];
    // SAFETY: pipe into a local array; fcntl on its fds; close both
    let size = unsafe {
        assert_eq!(libc::pipe(p.as_mut_ptr()), 0);
        let s = libc::fcntl(p[0], libc::F_GETPIPE_SZ);
        libc::close(p[0]);
        libc::close(p[1]);
        s
    };
    assert_eq!(size, 65536, "host root's new pipe shrank to {size} bytes");
    kill_holder(&env, c, &id);
}

// A bind is the container root's as its directory's owner's (issue #20: a 0700 `tempfile.mkdtemp`
// directory as the working directory failed with EACCES in chdir, a 0755 root-owned one was not
// writable, so code could not leave results on the host). What the container creates there belongs
// on the host to the directory's owner (host root for a root-owned one, user 1000 for theirs, as
// under runc); it can never be set-uid or set-gid; a read-only bind stays read-only.
#[test]
fn a_bind_is_the_containers_root_as_its_directorys_owners() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("uns-bind");
    let private = env.dir.join("mkdtemp");
    let shared = env.dir.join("root-0755");
    let users = env.dir.join("users");
    let ro = env.dir.join("readonly");
    for (d, mode) in [
        (&private, 0o700),
        (&shared, 0o755),
        (&users, 0o700),
        (&ro, 0o755),
    ] {
        fs::create_dir_all(d).unwrap();
        fs::set_permissions(d, fs::Permissions::from_mode(mode)).unwrap();
    }
    std::os::unix::fs::chown(&users, Some(1000), Some(1000)).unwrap();
    fs::write(private.join("task.py"), "code\n").unwrap();
    fs::set_permissions(private.join("task.py"), fs::Permissions::from_mode(0o600)).unwrap();
    let mut spec = base_spec(&[
        "sh",
        "-c",
        "cat task.py; echo r > result.txt; echo s > /shared/s; echo u > /users/u; \
         stat -c %u /users/u result.txt; \
         if chmod 4755 result.txt 2>/dev/null; then echo SETUID; fi; \
         if touch /ro/x 2>/dev/null; then echo RO-WRITABLE; fi; echo done",
    ]);
    spec["process"]["cwd"] = json!("/work");
    let m = spec["mounts"].as_array_mut().unwrap();
    m.push(json!({"destination": "/work", "type": "bind", "source": private, "options": ["rbind", "rw"]}));
    m.push(json!({"destination": "/shared", "type": "bind", "source": shared, "options": ["rbind", "rw"]}));
    m.push(json!({"destination": "/users", "type": "bind", "source": users, "options": ["rbind", "rw"]}));
    m.push(json!({"destination": "/ro", "type": "bind", "source": ro, "options": ["rbind", "ro"]}));
    let out = env.run_spec(&spec);
    out.expect_ok();
    assert_eq!(out.stdout, "code\n0\n0\ndone\n", "{out}");
    let owner = |p: &Path| std::os::unix::fs::MetadataExt::uid(&fs::metadata(p).unwrap());
    let mode = |p: &Path| std::os::unix::fs::MetadataExt::mode(&fs::metadata(p).unwrap());
    assert_eq!(
        owner(&private.join("result.txt")),
        0,
        "a root-owned directory's new file"
    );
    assert_eq!(owner(&shared.join("s")), 0);
    assert_eq!(
        owner(&users.join("u")),
        1000,
        "a user's directory's new file is the user's"
    );
    assert_eq!(
        mode(&private.join("result.txt")) & 0o6000,
        0,
        "set-id bits on the host"
    );
    assert!(!ro.join("x").exists());
}

// A writable bind of a host system directory would give the container's root its files: it is made
// read-only (and logged), whatever the caller asked.
#[test]
fn a_writable_bind_of_a_host_system_directory_is_read_only() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("uns-sysbind");
    let mut spec = base_spec(&[
        "sh",
        "-c",
        "if touch /hostshare/rxci-probe 2>/dev/null; then echo WRITABLE; else echo ro; fi",
    ]);
    spec["mounts"].as_array_mut().unwrap().push(json!({
        "destination": "/hostshare", "type": "bind", "source": "/usr/share", "options": ["rbind", "rw"]
    }));
    let out = env.run_spec(&spec);
    out.expect_ok();
    assert_eq!(out.stdout.trim(), "ro", "{out}");
    assert!(!Path::new("/usr/share/rxci-probe").exists());
}

// A caller's own user namespace (Podman --userns, Kubernetes hostUsers: false) is kept if it maps
// nothing onto host root; one that maps host uid 0 is refused.
#[test]
fn a_callers_mapping_is_kept_unless_it_maps_host_root() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("uns-caller");
    let with = |host: u32| {
        let mut spec = base_spec(&["cat", "/proc/self/uid_map"]);
        spec["linux"]["namespaces"]
            .as_array_mut()
            .unwrap()
            .push(json!({"type": "user"}));
        let m = json!([{"containerID": 0, "hostID": host, "size": 65536}]);
        spec["linux"]["uidMappings"] = m.clone();
        spec["linux"]["gidMappings"] = m;
        spec
    };
    let out = env.run_spec(&with(200_000));
    out.expect_ok();
    let f: Vec<&str> = out.stdout.split_whitespace().collect();
    assert_eq!(f, vec!["0", "200000", "65536"], "{out}");
    let out = env.run_spec(&with(0));
    assert_error(&out, &["host id 0", "userns.mode"]);
}

/// A network namespace of the host's user namespace, made with `ip netns add` (loopback only), and
/// removed when dropped.
struct HostNetns(String);

impl HostNetns {
    fn new(env: &TestEnv) -> HostNetns {
        let name = format!("rxuns-{}", env.id().rsplit('-').next().unwrap());
        let st = std::process::Command::new("ip")
            .args(["netns", "add", &name])
            .status()
            .unwrap();
        assert!(st.success(), "ip netns add {name}");
        HostNetns(name)
    }

    fn path(&self) -> String {
        format!("/run/netns/{}", self.0)
    }
}

impl Drop for HostNetns {
    fn drop(&mut self) {
        let _ = std::process::Command::new("ip")
            .args(["netns", "del", &self.0])
            .status();
    }
}

// Kubernetes' pods (CNI) and `ip netns` give a container a network namespace of the host's user
// namespace. Found through the CRI client on the user-namespace work before this fix: every pod
// failed (setns EPERM: a namespace can only be entered from its owner's user namespace or an
// ancestor), and so would the sysfs mount and the pod's network sysctls. Now the container joins it
// before its user namespace exists, its /sys is that namespace's sysfs made from outside, and the
// spec's network sysctls are written from outside.
#[test]
fn a_container_joins_a_network_namespace_the_host_owns() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("uns-netns");
    let netns = HostNetns::new(&env);
    let mut spec = base_spec(LONG_LIVED);
    for n in spec["linux"]["namespaces"].as_array_mut().unwrap() {
        if n["type"] == "network" {
            n["path"] = json!(netns.path());
        }
    }
    spec["linux"]["sysctl"] = json!({"net.ipv4.ping_group_range": "0 2147483647", "net.ipv4.ip_unprivileged_port_start": "0"});
    let c = env.start_container(&spec);
    assert_eq!(
        ns_id(format!("/proc/{}/ns/net", c.pid)),
        ns_id(netns.path()),
        "not in the joined namespace"
    );
    assert_ne!(
        ns_id(format!("/proc/{}/ns/user", c.pid)),
        ns_id("/proc/self/ns/user")
    );
    assert_ne!(host_uids(c.pid)[0], 0);
    let out = env.rloxsc(&["exec", &c.id, "sh", "-c", "ls /sys/class/net; cat /proc/sys/net/ipv4/ip_unprivileged_port_start; grep ' /sys ' /proc/self/mountinfo"]);
    out.expect_ok();
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(
        lines.first().copied(),
        Some("lo"),
        "its sysfs shows the joined namespace's devices only: {out}"
    );
    assert_eq!(
        lines.get(1).copied(),
        Some("0"),
        "the spec's network sysctl: {out}"
    );
    assert!(
        out.stdout.contains(" ro,") && out.stdout.contains("sysfs"),
        "/sys is a read-only sysfs: {out}"
    );
}

// Docker and containerd ask for net.ipv4.ping_group_range "0 2147483647" ("every group"): in the
// container's own network namespace the range names the container's gids, and one beyond its
// mapping is invalid (found through Docker: every `docker run` failed with EINVAL on this sysctl).
#[test]
fn ping_group_range_is_clamped_to_the_containers_groups() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("uns-ping");
    let mut spec = base_spec(&["cat", "/proc/sys/net/ipv4/ping_group_range"]);
    spec["linux"]["sysctl"] = json!({"net.ipv4.ping_group_range": "0 2147483647"});
    let out = env.run_spec(&spec);
    out.expect_ok();
    let f: Vec<&str> = out.stdout.split_whitespace().collect();
    assert_eq!(f, vec!["0", "65535"], "{out}");
}

// A pod's containers join the sandbox's ipc, uts and pid namespaces, which belong to the sandbox's
// user namespace: from a user namespace of their own they could not (EPERM, found through the CRI
// client before this fix). They join the sandbox's user namespace and share its block of host ids,
// which stays allocated until the last of them is deleted.
#[test]
fn containers_joining_anothers_namespaces_share_its_user_namespace() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("uns-pod");
    let sandbox = env.start_container(&base_spec(LONG_LIVED));
    let mut spec = base_spec(LONG_LIVED);
    for n in spec["linux"]["namespaces"].as_array_mut().unwrap() {
        let file = match n["type"].as_str().unwrap() {
            "ipc" => "ipc",
            "uts" => "uts",
            "pid" => "pid",
            _ => continue,
        };
        n["path"] = json!(format!("/proc/{}/ns/{file}", sandbox.pid));
    }
    let app = env.start_container(&spec);
    assert_eq!(
        ns_id(format!("/proc/{}/ns/user", app.pid)),
        ns_id(format!("/proc/{}/ns/user", sandbox.pid)),
        "the app is not in the sandbox's user namespace"
    );
    assert_eq!(
        ns_id(format!("/proc/{}/ns/ipc", app.pid)),
        ns_id(format!("/proc/{}/ns/ipc", sandbox.pid))
    );
    assert_eq!(uid_map(app.pid), uid_map(sandbox.pid));
    let base: u32 = uid_map(sandbox.pid)
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let block = Path::new("/run/rloxsc-userns").join(base.to_string());
    let owners = fs::read_to_string(&block).unwrap();
    assert!(
        owners.contains(&sandbox.id) && owners.contains(&app.id),
        "{owners}"
    );
    // an exec'd process of the app is in the shared user namespace too
    let out = env.rloxsc(&["exec", &app.id, "cat", "/proc/self/uid_map"]);
    out.expect_ok();
    assert_eq!(out.stdout, uid_map(sandbox.pid));
    // the sandbox goes first (as kubelet never does, but a caller may): the block stays the app's
    env.rloxsc(&["delete", "--force", &sandbox.id]).expect_ok();
    let owners = fs::read_to_string(&block).unwrap();
    assert!(
        !owners.contains(&sandbox.id) && owners.contains(&app.id),
        "{owners}"
    );
    env.rloxsc(&["delete", "--force", &app.id]).expect_ok();
    assert!(!block.exists(), "the block outlived its last container");
}

// Under overlayfs (a client's rootfs) the image's layers are idmapped: the image's files are the
// container root's (they showed as nobody's, 65534); missing mount points are made; a client that
// writes into the container as host root from its mount namespace (podman cp) can, and what it
// wrote is the container's at its next process.
#[test]
fn a_clients_rootfs_is_the_containers_own_and_host_writes_become_its() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("uns-overlay");
    let root = OverlayRoot::new(&env);
    let src = env.dir.join("resolv.conf");
    fs::write(&src, "nameserver 127.0.0.1\n").unwrap();
    let mut spec = base_spec(LONG_LIVED);
    spec["root"]["path"] = json!(root.merged);
    // the client's writable layer, as Podman sends it
    spec["root"]["readonly"] = json!(false);
    spec["mounts"].as_array_mut().unwrap().push(json!({
        "destination": "/etc/rxci-new/resolv.conf", "type": "bind", "source": src, "options": ["rbind", "ro"]
    }));
    spec["mounts"].as_array_mut().unwrap().push(json!({
        "destination": "/rxci-scratch", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "nodev", "strictatime", "size=1m"]
    }));
    let c = env.start_container(&spec);
    let out = env.rloxsc(&["exec", &c.id, "sh", "-c", "cat /etc/rxci-new/resolv.conf; stat -c %u /bin/busybox; echo made > /rxci-scratch/f && cat /rxci-scratch/f"]);
    out.expect_ok();
    assert_eq!(
        out.stdout, "nameserver 127.0.0.1\n0\nmade\n",
        "the image's files are not the container root's: {out}"
    );
    // as podman cp does: host root, in the container's mount namespace, writes 0600 files
    let st = std::process::Command::new("nsenter")
        .args([
            "-t",
            &c.pid.to_string(),
            "-m",
            "sh",
            "-c",
            "echo from-host > /tmp/rxci-in && chmod 600 /tmp/rxci-in && echo h > /run/rxci-run && chmod 600 /run/rxci-run",
        ])
        .status()
        .unwrap();
    assert!(st.success(), "host root cannot write into the container");
    let out = env.rloxsc(&["exec", &c.id, "sh", "-c", "cat /tmp/rxci-in /run/rxci-run"]);
    out.expect_ok();
    assert_eq!(out.stdout, "from-host\nh\n", "{out}");
}

// containerd 2.x gives a user-namespace pod's binds `idmap` with mappings: the container started,
// then every exec into it failed with libcontainer's "idmapped mount is not supported" (found
// through the CRI client), since exec reads the container's config again.
#[test]
fn exec_works_in_a_container_with_idmapped_binds() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("uns-idmap-exec");
    let mapped = env.dir.join("idmapped");
    fs::create_dir_all(&mapped).unwrap();
    fs::write(mapped.join("f"), "mapped\n").unwrap();
    let mut spec = base_spec(LONG_LIVED);
    spec["mounts"].as_array_mut().unwrap().push(json!({
        "destination": "/mapped", "type": "bind", "source": mapped,
        "options": ["rbind", "ro", "idmap"]
    }));
    let c = env.start_container(&spec);
    let out = env.rloxsc(&[
        "exec",
        &c.id,
        "sh",
        "-c",
        "cat /mapped/f; stat -c %u /mapped/f",
    ]);
    out.expect_ok();
    assert_eq!(out.stdout, "mapped\n0\n", "{out}");
}

// A pod's network namespace belongs to the host's user namespace, where the container's root holds
// no capability: nginx could not bind port 80 (EACCES, found through the CRI client). rloxsc sets
// ip_unprivileged_port_start=0 there when the container may hold CAP_NET_BIND_SERVICE.
#[test]
fn a_container_binds_low_ports_in_a_network_namespace_the_host_owns() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("uns-lowport");
    let netns = HostNetns::new(&env);
    let mut spec = base_spec(&[
        "sh",
        "-c",
        "cat /proc/sys/net/ipv4/ip_unprivileged_port_start; timeout 1 nc -l -p 80 2>&1; echo rc=$?",
    ]);
    for n in spec["linux"]["namespaces"].as_array_mut().unwrap() {
        if n["type"] == "network" {
            n["path"] = json!(netns.path());
        }
    }
    let out = env.run_spec(&spec);
    out.expect_ok();
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.first().copied(), Some("0"), "{out}");
    assert_eq!(
        lines.last().copied(),
        Some("rc=143"),
        "nc could not listen on port 80: {out}"
    );
}

// Issue #32 (1): a pod's container joins the sandbox's user namespace by path, so its spec has no id
// mappings of its own; the stdio hand-over found none and left the caller's pipes host root's, and
// nginx and httpd died opening /dev/stdout (critest PodPID, ContainerPID). The pipes now become the
// process's user through the joined namespace's mapping, for the init and an exec'd process alike.
#[test]
fn a_pod_containers_stdio_is_its_own() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("uns-pod-stdio");
    let sandbox = env.start_container(&base_spec(LONG_LIVED));
    let joined = |args: &[&str]| {
        let mut spec = base_spec(args);
        for n in spec["linux"]["namespaces"].as_array_mut().unwrap() {
            let t = n["type"].as_str().unwrap().to_string();
            if ["ipc", "uts", "pid"].contains(&t.as_str()) {
                n["path"] = json!(format!("/proc/{}/ns/{t}", sandbox.pid));
            }
        }
        spec
    };
    let reopen = [
        "sh",
        "-c",
        "echo reopened > /dev/stdout && echo too > /dev/stderr",
    ];
    // rloxsc's stdout and stderr are pipes here, as a shim's are (the test's usual capture files
    // stay the caller's, as under runc)
    let piped = |args: &[&str]| {
        let out = std::process::Command::new(rloxsc_bin())
            .arg("--root")
            .arg(&env.root)
            .args(args)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let (o, e) = (
            String::from_utf8_lossy(&out.stdout).to_string(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        );
        assert!(
            out.status.success() && o.contains("reopened") && e.contains("too"),
            "{args:?} could not reopen its stdio: {o} / {e}"
        );
    };
    let bundle = env.bundle(&joined(&reopen));
    let id = env.id();
    let _g = env.guard(&id);
    piped(&["run", "--bundle", bundle.to_str().unwrap(), &id]);

    let app = env.start_container(&joined(LONG_LIVED));
    piped(&[&["exec", &app.id][..], &reopen[..]].concat());
}
