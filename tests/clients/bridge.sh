# shellcheck shell=bash
# tests/clients/bridge.sh - Docker with a bridge network and published ports, through rloxsc's
# default network mode (inbound-only), side by side with runc. The dockerd of these scenarios runs in
# a network namespace the suite makes (`ip netns add`), with its own bridge (10.235.0.1/24), data and
# exec roots and containerd namespace, on the suite's containerd: no test address is ever in the
# machine's own namespace, and no traffic leaves the namespaces the suite made. Its containers get
# Docker's default bridge (a veth moved in by libnetwork's prestart hook), exactly as users' do.
#
#   published-port      `-p 127.0.0.1:P:8000` reaches a server in the container (docker-proxy over the bridge)
#   egress-refused      a TCP connect and a DNS query to a listener on the bridge's gateway: refused under
#                       rloxsc, nothing reaches the listeners; the same container under runc reaches them
#                       (the control: the test can fail)
#   egress-allowlist    a runtime registered with a policy whose egress_allow lists one port reaches it,
#                       and only it
#   podman-published-port, podman-egress-refused
#                       the same through rootful Podman (4.3, CNI), run in the same namespace with a
#                       CNI bridge of the suite's own (rxbr0, 10.236.9.1/24, portmap for -p)

BRIDGE_SCENARIOS="
published-port b_published_port
egress-refused b_egress_refused
egress-allowlist b_egress_allowlist
podman-published-port b_podman_published_port
podman-egress-refused b_podman_egress_refused
"

BR_GW=10.235.0.1

# the bridge dockerd, set up once for the client (from run.sh's setup_bridge)
rx_ensure_bridge_dockerd() {
    export BR_NS=rxbr$$ BR_DIR=$W/bdocker
    export BR_SOCK=$BR_DIR/docker.sock
    mkdir -p "$BR_DIR"
    ip netns add "$BR_NS" || return 1
    echo "$BR_NS" >"$W/bridge-netns"
    ip -n "$BR_NS" link set lo up || return 1
    printf '[network]\negress_allow = ["%s:18090"]\n' "$BR_GW" >"$BR_DIR/allow.toml"
    chmod 0644 "$BR_DIR/allow.toml"
    # (the suite's containerd has no runc on its PATH: runc, the control, is registered by path)
    jq -n --arg p "$RLOXSC" --arg d "$BR_DIR" --arg pol "$BR_DIR/allow.toml" '{
        runtimes: {rloxsc: {path: $p}, "rloxsc-allow": {path: $p, runtimeArgs: ["--policy", $pol]},
                   rxrunc: {path: "/usr/sbin/runc"}},
        containerd: "/run/containerd/containerd.sock",
        "containerd-namespace": "rxbridge", "containerd-plugins-namespace": "rxbridge-plugins",
        "data-root": ($d + "/data"), "exec-root": ($d + "/exec"), pidfile: ($d + "/docker.pid"),
        hosts: ["unix://" + $d + "/docker.sock"], "storage-driver": "overlay2",
        bip: "10.235.0.1/24", iptables: false, ip6tables: false, "ip-forward": false, "ip-masq": false,
        "userland-proxy": true, "exec-opts": ["native.cgroupdriver=cgroupfs"]}' >"$BR_DIR/daemon.json" || return 1
    rx_start_daemon bridge-dockerd nsenter --net="/run/netns/$BR_NS" /usr/sbin/dockerd --config-file "$BR_DIR/daemon.json"
    wait_for 30 "$D" -H "unix://$BR_SOCK" version || { tail -n 20 "$W/bridge-dockerd.log" >&2; return 1; }
    "$D" -H "unix://$BR_SOCK" import -c 'CMD ["/bin/sh"]' "$W/rootfs.tar" "$IMG_DOCKER" >/dev/null || return 1
    # Podman: contrib's containers.conf, a CNI network of the suite's own (no masquerade)
    rx_podman_conf || return 1
    mkdir -p "$BR_DIR/cni"
    jq -n '{cniVersion: "0.4.0", name: "rxbr", plugins: [
        {type: "bridge", bridge: "rxbr0", isGateway: true, ipMasq: false, hairpinMode: true,
         ipam: {type: "host-local", routes: [{dst: "0.0.0.0/0"}],
                ranges: [[{subnet: "10.236.9.0/24", gateway: "10.236.9.1"}]]}},
        {type: "portmap", capabilities: {portMappings: true}}]}' >"$BR_DIR/cni/rxbr.conflist" || return 1
    podman import --change 'CMD ["/bin/sh"]' "$W/rootfs.tar" "$IMG_PODMAN" >/dev/null 2>&1
}

# after the daemon stopped (run.sh's cleanup): its namespace, with the bridge in it
rx_bridge_cleanup() {
    local ns
    ns=$(cat "$W/bridge-netns" 2>/dev/null) || return 0
    ip netns del "$ns" 2>/dev/null
}

BD() { "$D" -H "unix://$BR_SOCK" "$@"; }
PD() { nsenter --net="/run/netns/$BR_NS" podman --cni-config-dir "$BR_DIR/cni" "$@"; }
in_ns() { nsenter --net="/run/netns/$BR_NS" "$@"; }   # (ip netns exec would remount /sys, and lose cgroupfs)

# br_listen PORT FILE [ADDRESS]: a TCP listener on the gateway (or ADDRESS), in the daemon's namespace, that accepts, counts
# (one line per connection in FILE) and closes; and a UDP one on port 53. Stopped at the scenario's end.
br_listen() {
    in_ns /usr/bin/python3 -c '
import socket, sys, threading
port, f = int(sys.argv[1]), sys.argv[2]
t = socket.socket(); t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); t.bind((sys.argv[3], port)); t.listen(8)
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind((sys.argv[3], 53))
def udp():
    while True:
        u.recvfrom(2048); open(f, "a").write("udp\n")
threading.Thread(target=udp, daemon=True).start()
open(f + ".ready", "w").write(str(__import__("os").getpid()))
while True:
    c, _ = t.accept(); open(f, "a").write("tcp\n"); c.close()
' "$1" "$2" "${3:-$BR_GW}" >"$2.log" 2>&1 &
    on_exit kill $!
    wait_for 10 test -s "$2.ready" || fail "the listener on ${3:-$BR_GW}:$1 did not start: $(tail -n 2 "$2.log")"
    on_exit kill "$(cat "$2.ready")"
}

b_published_port() {
    local c=$NAME_PREFIX-pub got=
    on_exit BD rm -f "$c"
    ok BD run -d --pull=never --runtime=rloxsc --name "$c" -p 127.0.0.1:18081:8000 "$IMG_DOCKER" \
        sh -c 'while true; do echo HELLO-PUBLISHED | nc -l -p 8000; done'
    for _ in $(seq 50); do
        got=$(in_ns python3 -c '
import socket
s = socket.create_connection(("127.0.0.1", 18081), timeout=2); s.settimeout(2)
print(s.recv(64).decode().strip())' 2>/dev/null) && [ "$got" = HELLO-PUBLISHED ] && break
        sleep 0.2
    done
    assert_eq "what the published port answered" HELLO-PUBLISHED "$got"
    run_cap in_ns ip -o addr show docker0
    assert_match "the container is on Docker's bridge" "$BR_GW" "$OUT"
}

# br_probe RUNTIME FILE PORT: a container of RUNTIME connects to the gateway's PORT and asks it a DNS query
br_probe() {
    run_cap BD run --rm --pull=never --runtime="$1" "$IMG_DOCKER" sh -c \
        "nc -w 3 $BR_GW $3 </dev/null 2>&1; echo nc-rc=\$?; nslookup probe.test $BR_GW 2>&1 | tail -n 2; echo PROBE-DONE"
    assert_match "the probe ran" PROBE-DONE "$OUT"
}

b_egress_refused() {
    local f=$W/egress-$$.count
    br_listen 18089 "$f"
    br_probe rloxsc "$f" 18089
    sleep 1
    assert_eq "connections and datagrams from the rloxsc container that reached the gateway" "" "$(cat "$f" 2>/dev/null)"
    assert_match "the connect was refused" "refused|Connection refused" "$OUT"
    # control: runc's container reaches both listeners (so the check above can fail)
    br_probe rxrunc "$f" 18089
    sleep 1
    assert_match "runc's container reached the TCP listener" tcp "$(cat "$f" 2>/dev/null)"
    assert_match "runc's container's DNS query reached udp/53" udp "$(cat "$f" 2>/dev/null)"
}

b_egress_allowlist() {
    local f=$W/allow-$$.count g=$W/deny-$$.count
    br_listen 18090 "$f"
    br_probe rloxsc-allow "$f" 18090
    assert_eq "the allowlisted port was reached once" tcp "$(cat "$f" 2>/dev/null)"
}

b_podman_published_port() {
    local c=$NAME_PREFIX-ppub got=
    on_exit PD rm -f -t 0 "$c"
    ok PD run -d --runtime rloxsc --name "$c" --network rxbr -p 127.0.0.1:18082:8000 "$IMG_PODMAN" \
        sh -c 'while true; do echo HELLO-PODMAN | nc -l -p 8000; done'
    for _ in $(seq 50); do
        got=$(in_ns /usr/bin/python3 -c '
import socket
s = socket.create_connection(("127.0.0.1", 18082), timeout=2); s.settimeout(2)
print(s.recv(64).decode().strip())' 2>/dev/null) && [ "$got" = HELLO-PODMAN ] && break
        sleep 0.2
    done
    assert_eq "what Podman's published port answered" HELLO-PODMAN "$got"
}

b_podman_egress_refused() {
    local f=$W/pegress-$$.count
    # (the CNI bridge exists once a container used the network: it is made by the first run)
    ok PD run --rm --runtime rloxsc --network rxbr "$IMG_PODMAN" true
    br_listen 18091 "$f" 10.236.9.1
    run_cap PD run --rm --runtime rloxsc --network rxbr "$IMG_PODMAN" sh -c \
        'nc -w 3 10.236.9.1 18091 </dev/null 2>&1; echo PROBE-DONE'
    assert_match "the probe ran" PROBE-DONE "$OUT"
    sleep 1
    assert_eq "connections from the rloxsc container that reached the gateway" "" "$(cat "$f" 2>/dev/null)"
    assert_match "the connect was refused" "refused" "$OUT"
    run_cap PD run --rm --runtime runc --network rxbr "$IMG_PODMAN" sh -c \
        'nc -w 3 10.236.9.1 18091 </dev/null 2>&1; echo PROBE-DONE'
    sleep 1
    assert_match "runc's container reached the TCP listener (the control)" tcp "$(cat "$f" 2>/dev/null)"
}
