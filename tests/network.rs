//! The network area from outside: under the default `network.mode = "inbound-only"` a container
//! given an interface (a veth pair the test makes, moved in by a prestart hook as Docker's
//! libnetwork-setkey moves the bridge's) is reachable through it, and every TCP connection, UDP
//! datagram and DNS query it starts towards the other end is refused, judged by listeners there that
//! count what reaches them; the `egress_allow` list opens exactly its entries; `update
//! --egress-allow` narrows it on a running container; a filter changed between create and start
//! stops the start; a joined namespace (a pod's) gets the filter once. Traffic stays on the veth
//! pair between namespaces the test made (no test address is ever in the machine's own namespace).

mod common;

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use serde_json::json;

/// A veth pair between two network namespaces the test makes: the "host" end in a namespace of its
/// own (`ip netns add`, so no test address ever exists in the machine's own namespace) with
/// `10.231.N.1/24`, the container end named `peer`, moved into the container's network namespace
/// with `10.231.N.2/24` by [`Veth::hook`]. Removing the namespace removes the pair.
struct Veth {
    ns: String,
    peer: String,
    net: u8,
}

fn ip(args: &[&str]) -> bool {
    Command::new("ip")
        .args(args)
        .status()
        .expect("ip")
        .success()
}

impl Veth {
    fn new() -> Veth {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let k = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let net = 20 + ((std::process::id() as usize * 3 + k) % 200) as u8;
        let tag = format!("{:04x}{k}", std::process::id() & 0xffff);
        let v = Veth {
            ns: format!("rxn{tag}"),
            peer: format!("rxc{tag}"),
            net,
        };
        let host = format!("rxh{tag}");
        let _ = Command::new("ip")
            .args(["netns", "del", &v.ns])
            .stderr(Stdio::null())
            .status();
        let addr = format!("{}/24", v.host_ip());
        let ok = ip(&["netns", "add", &v.ns])
            && ip(&[
                "link", "add", &host, "type", "veth", "peer", "name", &v.peer,
            ])
            && ip(&["link", "set", &host, "netns", &v.ns])
            && ip(&["-n", &v.ns, "addr", "add", &addr, "dev", &host])
            && ip(&["-n", &v.ns, "link", "set", &host, "up"])
            && ip(&["-n", &v.ns, "link", "set", "lo", "up"]);
        assert!(
            ok,
            "cannot make the veth pair {host} / {} in {}",
            v.peer, v.ns
        );
        v
    }

    /// Runs `f` on a thread inside the "host" end's namespace (sockets made there stay there).
    fn in_ns<T: Send>(&self, f: impl FnOnce() -> T + Send) -> T {
        let path = format!("/run/netns/{}", self.ns);
        std::thread::scope(|s| {
            s.spawn(|| {
                let ns = std::fs::File::open(&path).expect("open the test's namespace");
                nix::sched::setns(&ns, nix::sched::CloneFlags::CLONE_NEWNET)
                    .expect("enter the test's namespace");
                f()
            })
            .join()
            .expect("the thread in the test's namespace panicked")
        })
    }

    fn host_ip(&self) -> Ipv4Addr {
        Ipv4Addr::new(10, 231, self.net, 1)
    }

    fn container_ip(&self) -> Ipv4Addr {
        Ipv4Addr::new(10, 231, self.net, 2)
    }

    /// A prestart hook moving the container end into the container's network namespace, with its
    /// address and a default route via the host end.
    fn hook(&self, env: &TestEnv) -> String {
        let hook = env.dir.join(format!("veth-{}.sh", self.peer));
        std::fs::write(
            &hook,
            format!(
                "#!/bin/sh\nset -e\npid=$(sed -n 's/.*\"pid\": *\\([0-9]*\\).*/\\1/p')\n\
                 ip link set {peer} netns \"$pid\"\n\
                 nsenter -t \"$pid\" -n ip addr add {ip}/24 dev {peer}\n\
                 nsenter -t \"$pid\" -n ip link set {peer} up\n\
                 nsenter -t \"$pid\" -n ip route add default via {gw}\n",
                peer = self.peer,
                ip = self.container_ip(),
                gw = self.host_ip()
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
        hook.to_str().unwrap().to_string()
    }

    fn spec(&self, env: &TestEnv, args: &[&str]) -> serde_json::Value {
        let mut spec = base_spec(args);
        spec["hooks"] = json!({"prestart": [{"path": self.hook(env)}]});
        spec
    }
}

impl Drop for Veth {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.ns]).status();
    }
}

/// A TCP listener (made in the other end's namespace) that accepts, counts and closes every connection that reaches it
/// (busybox's `nc` waits for the peer to close).
struct Listener {
    port: u16,
    count: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Listener {
    fn on(ip: Ipv4Addr) -> Listener {
        use std::sync::atomic::Ordering::SeqCst;
        let sock = TcpListener::bind((ip, 0)).expect("listen on the host end");
        sock.set_nonblocking(true).unwrap();
        let port = sock.local_addr().unwrap().port();
        let count = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (c, st) = (count.clone(), stop.clone());
        std::thread::spawn(move || {
            while !st.load(SeqCst) {
                match sock.accept() {
                    Ok((conn, _)) => {
                        c.fetch_add(1, SeqCst);
                        drop(conn);
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(20)),
                }
            }
        });
        Listener { port, count, stop }
    }

    fn port(&self) -> u16 {
        self.port
    }

    /// The connections accepted so far (and resets the count).
    fn accepted(&self) -> usize {
        self.count.swap(0, std::sync::atomic::Ordering::SeqCst)
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// A UDP socket on the other end's port 53: whether any datagram (a DNS query) reached it.
fn dns_listener(ip: Ipv4Addr) -> UdpSocket {
    let s = UdpSocket::bind((ip, 53)).expect("bind udp/53 on the host end");
    s.set_nonblocking(true).unwrap();
    s
}

fn datagrams(s: &UdpSocket) -> usize {
    let mut buf = [0u8; 1500];
    let mut n = 0;
    while s.recv_from(&mut buf).is_ok() {
        n += 1;
    }
    n
}

fn policy(env: &TestEnv, text: &str) -> String {
    let p = env.dir.join(format!("policy-{}.toml", env.id()));
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

fn tools_present() {
    for t in ["ip", "nsenter", "nft"] {
        assert!(
            Command::new("sh")
                .args(["-c", &format!("command -v {t}")])
                .stdout(Stdio::null())
                .status()
                .unwrap()
                .success(),
            "{t} missing (iproute2, util-linux, nftables: scripts/deps.sh installs them)"
        );
    }
}

/// The default policy, a container with an interface: the host reaches its listener through it;
/// its TCP connect and DNS query to the host end are refused and nothing reaches the host's
/// listeners; an `egress_allow` entry is reached, and only it.
#[test]
fn inbound_reaches_the_container_and_nothing_leaves_it() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    tools_present();
    let env = TestEnv::new("net-inbound");
    let veth = Veth::new();
    let denied = veth.in_ns(|| Listener::on(veth.host_ip()));
    let allowed = veth.in_ns(|| Listener::on(veth.host_ip()));
    let dns = veth.in_ns(|| dns_listener(veth.host_ip()));
    let gw = veth.host_ip().to_string();
    let script = format!(
        "echo INBOUND-OK | nc -l -p 8000 & \
         nc -w 3 {gw} {d} </dev/null && echo TCP-REACHED || echo TCP-REFUSED; \
         nslookup probe.test {gw} >/dev/null 2>&1 && echo DNS-ANSWERED || echo DNS-REFUSED; \
         nc -w 3 {gw} {a} </dev/null && echo ALLOWED-REACHED || echo ALLOWED-REFUSED; \
         wait",
        d = denied.port(),
        a = allowed.port()
    );
    let spec = veth.spec(&env, &["sh", "-c", &script]);
    let policy = policy(
        &env,
        &format!("[network]\negress_allow = [\"{gw}:{}\"]\n", allowed.port()),
    );
    let id = env.id();
    let _g = env.guard(&id);
    let b = env.bundle(&spec);
    let (out_path, err_path) = env.capture_paths();
    let mut run = env.command(
        &rloxsc_bin(),
        &[
            "--policy",
            &policy,
            "run",
            "--bundle",
            b.to_str().unwrap(),
            &id,
        ],
    );
    run.stdout(std::fs::File::create(&out_path).unwrap());
    run.stderr(std::fs::File::create(&err_path).unwrap());
    let mut child = run.spawn().expect("rloxsc run");
    // inbound: the other end connects to the container's address
    let inbound = veth.in_ns(|| {
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut inbound = String::new();
        while Instant::now() < deadline && !inbound.contains("INBOUND-OK") {
            let addr = SocketAddr::from((veth.container_ip(), 8000));
            if let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_secs(1)) {
                s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                let _ = s.write_all(b"\n");
                let mut buf = [0u8; 64];
                while let Ok(n) = s.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    inbound.push_str(&String::from_utf8_lossy(&buf[..n]));
                    if inbound.contains("INBOUND-OK") {
                        break;
                    }
                }
            }
            if !inbound.contains("INBOUND-OK") {
                std::thread::sleep(Duration::from_millis(200));
            }
        }
        inbound
    });
    let st = wait_child(&mut child, Duration::from_secs(90), "rloxsc run");
    let out = std::fs::read_to_string(&out_path).unwrap_or_default();
    let err = std::fs::read_to_string(&err_path).unwrap_or_default();
    assert!(st.success(), "run failed ({st}): stdout {out} stderr {err}");
    assert!(
        inbound.contains("INBOUND-OK"),
        "the host could not reach the container's listener at {}:8000 (got {inbound:?}); stdout {out} stderr {err}",
        veth.container_ip()
    );
    assert!(
        out.contains("TCP-REFUSED"),
        "TCP egress was not refused: {out}"
    );
    assert!(
        out.contains("DNS-REFUSED"),
        "DNS egress was not refused: {out}"
    );
    assert_eq!(
        denied.accepted(),
        0,
        "a connection reached the host's listener"
    );
    assert_eq!(datagrams(&dns), 0, "a DNS query reached the host's udp/53");
    assert!(
        out.contains("ALLOWED-REACHED"),
        "the allowlisted listener was not reached: {out} {err}"
    );
    assert_eq!(
        allowed.accepted(),
        1,
        "the allowlisted listener saw no connection"
    );
    env.assert_nothing_left(&id, "inbound-only run");
}

/// The outside view of the filter: `nft list table inet rloxsc` in the container's namespace.
fn filter_text(pid: &str) -> String {
    let o = Command::new("nsenter")
        .args([
            "-t", pid, "-n", "nft", "-a", "list", "table", "inet", "rloxsc",
        ])
        .output()
        .expect("nsenter nft");
    String::from_utf8_lossy(&o.stdout).to_string()
}

fn created(env: &TestEnv, spec: &serde_json::Value, policy: Option<&str>) -> (String, String) {
    let id = env.id();
    let b = env.bundle(spec);
    let pid_file = env.dir.join(format!("{id}.pid"));
    let mut args = vec![];
    if let Some(p) = policy {
        args.extend(["--policy", p]);
    }
    args.extend([
        "create",
        "--bundle",
        b.to_str().unwrap(),
        "--pid-file",
        pid_file.to_str().unwrap(),
        &id,
    ]);
    env.rloxsc(&args).expect_ok();
    let pid = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .to_string();
    (id, pid)
}

/// `update --egress-allow` on a running container: "" closes what the policy opened, a list wider
/// than the policy's is refused naming the key, and an exec'd process's connection then fails.
#[test]
fn update_narrows_egress_on_a_running_container() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    tools_present();
    let env = TestEnv::new("net-update");
    let veth = Veth::new();
    let allowed = veth.in_ns(|| Listener::on(veth.host_ip()));
    let other = veth.in_ns(|| Listener::on(veth.host_ip()));
    let gw = veth.host_ip().to_string();
    let policy = policy(
        &env,
        &format!("[network]\negress_allow = [\"{gw}:{}\"]\n", allowed.port()),
    );
    let (id, pid) = created(&env, &veth.spec(&env, LONG_LIVED), Some(&policy));
    let _g = env.guard(&id);
    env.rloxsc(&["start", &id]).expect_ok();
    let connect = |port: u16| {
        env.rloxsc(&[
            "exec",
            &id,
            "sh",
            "-c",
            &format!("nc -w 3 {gw} {port} </dev/null && echo REACHED || echo REFUSED"),
        ])
    };
    let out = connect(allowed.port());
    assert!(out.stdout.contains("REACHED"), "before update: {out}");
    assert_eq!(allowed.accepted(), 1);
    // wider than the policy: refused, nothing changed
    let out = env.rloxsc(&[
        "update",
        "--egress-allow",
        &format!("{gw}:{}", other.port()),
        &id,
    ]);
    assert_error(&out, &["wider", "network.egress_allow"]);
    // closed
    env.rloxsc(&["update", "--egress-allow", "", &id])
        .expect_ok();
    assert!(
        !filter_text(&pid).contains(&format!("dport {}", allowed.port())),
        "the allowlisted rule is still there: {}",
        filter_text(&pid)
    );
    let out = connect(allowed.port());
    assert!(out.stdout.contains("REFUSED"), "after update \"\": {out}");
    assert_eq!(
        allowed.accepted(),
        0,
        "a connection got through after update \"\""
    );
    assert_eq!(other.accepted(), 0);
    env.rloxsc(&["delete", "--force", &id]).expect_ok();
    env.assert_nothing_left(&id, "after update --egress-allow");
}

/// A filter changed from outside between create and start (a rule removed, or the table made
/// dormant) is found by `start`'s verification: the container is removed, its payload never runs.
#[test]
fn a_filter_changed_before_start_stops_the_container() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    tools_present();
    let env = TestEnv::new("net-tamper");
    let marker = "PAYLOAD-RAN";
    for (what, tamper) in [("a rule removed", "rule"), ("the table dormant", "dormant")] {
        let veth = Veth::new();
        let (id, pid) = created(&env, &veth.spec(&env, &["echo", marker]), None);
        let _g = env.guard(&id);
        let text = filter_text(&pid);
        assert!(
            text.contains("reject with tcp reset"),
            "no filter after create: {text}"
        );
        let cmd = match tamper {
            "rule" => {
                let handle = text
                    .lines()
                    .rev()
                    .find_map(|l| l.split("# handle ").nth(1))
                    .expect("a rule handle")
                    .trim()
                    .to_string();
                format!("nft delete rule inet rloxsc egress handle {handle}")
            }
            _ => "nft add table inet rloxsc '{ flags dormant; }'".to_string(),
        };
        let ok = Command::new("nsenter")
            .args(["-t", &pid, "-n", "sh", "-c", &cmd])
            .status()
            .unwrap()
            .success();
        assert!(ok, "cannot tamper ({what}) with {cmd}");
        let out = env.rloxsc(&["start", &id]);
        assert_error(&out, &["egress", "network.mode"]);
        assert!(
            !out.stdout.contains(marker),
            "{what}: the payload ran: {out}"
        );
        assert!(
            env.state(&id).is_none(),
            "{what}: the container was not removed"
        );
        env.assert_nothing_left(&id, what);
    }
}

/// With no interface but loopback nothing can leave, and no filter is installed (no cost); the
/// container runs under the default policy.
#[test]
fn a_loopback_only_namespace_needs_no_filter() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    tools_present();
    let env = TestEnv::new("net-lo");
    let (id, pid) = created(&env, &base_spec(LONG_LIVED), None);
    let _g = env.guard(&id);
    assert_eq!(
        filter_text(&pid),
        "",
        "a filter in a loopback-only namespace"
    );
    env.rloxsc(&["start", &id]).expect_ok();
    env.rloxsc(&["delete", "--force", &id]).expect_ok();
}

/// A network namespace joined by path (a pod's, made by the test with an interface in it) gets the
/// filter from the first container; a second one with the same policy finds and keeps it; no one
/// container's `update --egress-allow` changes it; one with another allowlist is refused, naming
/// the key.
#[test]
fn a_joined_namespace_gets_one_filter() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    tools_present();
    let env = TestEnv::new("net-pod");
    let mut holder = Command::new("unshare")
        .args([
            "--net",
            "sh",
            "-c",
            "ip link add dummy0 type dummy 2>/dev/null || ip link add dummy0 type veth peer name rlx1; ip link set dummy0 up; exec sleep 60",
        ])
        .spawn()
        .expect("unshare");
    std::thread::sleep(Duration::from_millis(500));
    let ns = format!("/proc/{}/ns/net", holder.id());
    let joined = |args: &[&str], annotations: Option<serde_json::Value>| {
        let mut spec = base_spec(args);
        for n in spec["linux"]["namespaces"].as_array_mut().unwrap() {
            if n["type"] == "network" {
                n["path"] = json!(ns);
            }
        }
        if let Some(a) = annotations {
            spec["annotations"] = a;
        }
        spec
    };
    let policy = policy(&env, "[network]\negress_allow = [\"192.0.2.0/24\"]\n");
    let id = env.id();
    let _g = env.guard(&id);
    let b = env.bundle(&joined(&["echo", "FIRST"], None));
    let out = env.rloxsc(&[
        "--policy",
        &policy,
        "run",
        "--bundle",
        b.to_str().unwrap(),
        &id,
    ]);
    out.expect_ok();
    let pid = holder.id().to_string();
    let text = filter_text(&pid);
    assert!(
        text.contains("192.0.2.0/24") && text.contains("policy drop"),
        "the joined namespace has no filter: {text}"
    );
    let id2 = env.id();
    let _g2 = env.guard(&id2);
    let b = env.bundle(&joined(&["echo", "SECOND"], None));
    let out = env.rloxsc(&[
        "--policy",
        &policy,
        "run",
        "--bundle",
        b.to_str().unwrap(),
        &id2,
    ]);
    out.expect_ok();
    assert!(out.stdout.contains("SECOND"), "{out}");
    // the shared filter is no one container's to update
    let (id4, _) = created(&env, &joined(LONG_LIVED, None), Some(&policy));
    let _g4 = env.guard(&id4);
    env.rloxsc(&["start", &id4]).expect_ok();
    let out = env.rloxsc(&["update", "--egress-allow", "", &id4]);
    assert_error(
        &out,
        &["shares a network namespace", "network.egress_allow"],
    );
    assert!(
        filter_text(&holder.id().to_string()).contains("192.0.2.0/24"),
        "a refused update changed the shared filter"
    );
    env.rloxsc(&["delete", "--force", &id4]).expect_ok();
    let id3 = env.id();
    let _g3 = env.guard(&id3);
    let b = env.bundle(&joined(
        &["echo", "THIRD"],
        Some(json!({"run.rloxsc.egress_allow": "192.0.2.1"})),
    ));
    let out = env.rloxsc(&[
        "--policy",
        &policy,
        "run",
        "--bundle",
        b.to_str().unwrap(),
        &id3,
    ]);
    let _ = holder.kill();
    let _ = holder.wait();
    assert_error(&out, &["another egress filter", "network.egress_allow"]);
    assert!(!out.stdout.contains("THIRD"), "{out}");
}
