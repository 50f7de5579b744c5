# shellcheck shell=bash
# tests/clients/cri.sh - Kubernetes' path: containerd's CRI plugin with the RuntimeClass handler
# `rloxsc` (the runc v2 shim with options.BinaryName = rloxsc), driven over gRPC by cri_client.py (the
# CRI v1 RuntimeService calls kubelet makes; no crictl in Debian 12). The same scenarios run against
# two containerds: client `cri` is Debian 12's containerd 1.6 (contrib/containerd/config.toml), client
# `cri2` is containerd 2.x from Debian sid unpacked privately (contrib/containerd/config-v3.toml;
# tests/clients/containerd2.sh). rx_cri_select "$RX_CLIENT" below points the CRI_* variables at one.
#
# The suite's own containerd serves the CRI ($CRI_SOCK; rx_ensure_containerd_cri in lib.sh): CNI with
# only the loopback plugin (pods' netns hold only lo), sandbox image = the bundle rootfs running
# /bin/sleep, images imported into namespace k8s.io (never pulled), no runc on its PATH. Pods get
# cgroup_parent /rloxsc-ci-cri, so a container's v1 cgroups are /sys/fs/cgroup/<ctrl>/rloxsc-ci-cri/<id>.
# Every pod and container is checked to have been created by rloxsc (its state root
# /run/containerd/runc/k8s.io, the shim's options.json binary_name, rloxsc's --log lines, Seccomp 2
# of the init seen from the host): containerd can fall back to plain runc (contrib/README.md).
#
# lifecycle-* scenarios are one pod's life, in order, each step one CRI call; they share the pod and
# container ids through $CRI_WORK/lifecycle.env (select them together with RLOXSC_ONLY).
#
# The compatibility scenarios (volume-* ... nginx-image, at the end of the list) check what Kubernetes
# pods commonly ask for and runc gives. When one fails, its reason starts with REFUSED by rloxsc
# (rloxsc's error names a policy key), REFUSED by containerd (the handler's features lack something)
# or BUG (anything else). With RLOXSC_CRI2_HANDLER=runc, `cri2` runs the scenarios that assert no
# rloxsc hardening ($CRI_RUNTIME_NEUTRAL) through the handler runc: the baseline.

CRI_SCENARIOS="
contrib-cri-config k_contrib
contrib-example-pod k_contrib_pod
lifecycle-run-pod-sandbox k_lc_runp
lifecycle-create-container k_lc_create
lifecycle-start-container k_lc_start
lifecycle-exec-sync k_lc_exec
lifecycle-exec-sync-missing-binary k_lc_exec_missing
lifecycle-hardening k_lc_hardening
lifecycle-update-resources k_lc_update
lifecycle-stop-container k_lc_stop
lifecycle-remove-container k_lc_rm
lifecycle-stop-pod-sandbox k_lc_stopp
lifecycle-remove-pod-sandbox k_lc_rmp
exit-code-and-logs k_exit_logs
pod-shared-network k_shared_net
pod-shared-pid k_shared_pid
oom k_oom
default-handler-fails-closed k_default_handler
hostile-privileged k_hostile_privileged
hostile-host-network k_hostile_host_network
hostile-host-pid k_hostile_host_pid
hostile-host-ipc k_hostile_host_ipc
hostile-seccomp-unconfined k_hostile_unconfined
hostile-all-caps k_hostile_all_caps
hostile-devices k_hostile_devices
hostile-memory-64g-oom-adj k_hostile_memory
hostile-writable-unmasked k_hostile_writable
hostile-everything k_hostile_everything
hostile-bind-host-root k_hostile_bind_root
hostile-bind-cri-socket k_hostile_bind_sock
hostile-bind-runtime-state k_hostile_bind_state
escape-demo k_escape_demo
escape-demo-careless k_escape_demo_careless
leaks-10-pods k_leaks
volume-under-tmp k_vol_tmp_sub
volume-at-tmp k_vol_tmp
propagation-host-to-container k_prop_h2c
runtime-features k_features
mount-recursive-read-only k_rro
userns-pod k_userns
nginx-image k_nginx
httpd-image k_httpd
"
# the scenarios that hold for any runc-compatible runtime (no rloxsc hardening asserted)
CRI_RUNTIME_NEUTRAL="exit-code-and-logs pod-shared-network pod-shared-pid oom volume-under-tmp volume-at-tmp
propagation-host-to-container runtime-features mount-recursive-read-only userns-pod nginx-image httpd-image"

rx_cri_select "$RX_CLIENT"
if [ "$CRI_HANDLER" = rloxsc ]; then
    CRI2_SCENARIOS=$CRI_SCENARIOS
else
    CRI2_SCENARIOS=$(while read -r n f; do
        [ -z "$n" ] || [[ " $(echo $CRI_RUNTIME_NEUTRAL) " != *" $n "* ]] || echo "$n $f"; done <<<"$CRI_SCENARIOS")
fi

CRI=("$CRI_VENV/bin/python" "$RX_DIR/cri_client.py" --socket "$CRI_SOCK")
cri() { "${CRI[@]}" "$@"; }
CRI_BUNDLES=$CRI_STATE/io.containerd.runtime.v2.task/$CRI_NS
CRI_LC=$CRI_WORK/lifecycle.env

# ---------------------------------------------------------------------------------------------------
# helpers

# k_pod_config NAME [SECURITY-CONTEXT-JSON]: a PodSandboxConfig as kubelet sends it (own network, ipc
# and uts namespaces, pid per container), deep-merged with the given linux.security_context; prints
# its path. The uid is unique per call: containerd keeps a failed pod's name reserved.
k_pod_config() {
    local name=$1 sec=${2:-} dir="$CRI_WORK/pods/$1-$$"
    [ -n "$sec" ] || sec='{}'
    mkdir -p "$dir"
    jq -n --arg n "$NAME_PREFIX-$name" --arg uid "$name-$$-$RANDOM" --arg logdir "$dir" \
        --arg cg "/$CRI_CGROUP_PARENT" --argjson sec "$sec" '{
        metadata: {name: $n, uid: $uid, namespace: "rxci", attempt: 0},
        hostname: $n, log_directory: $logdir,
        linux: {cgroup_parent: $cg,
                security_context: ({namespace_options: {network: "POD", pid: "CONTAINER", ipc: "POD"}} * $sec)}}' \
        >"$dir/pod.json"
    echo "$dir/pod.json"
}

# k_ctr_config NAME POD-CONFIG CMD-JSON [EXTRA-JSON]: a ContainerConfig (namespace options copied
# from the pod's, as kubelet does) deep-merged with EXTRA; prints its path
k_ctr_config() {
    local extra=${4:-} f
    [ -n "$extra" ] || extra='{}'
    f="$(dirname "$2")/$1.ctr.json"
    jq -n --arg n "$1" --argjson cmd "$3" --arg img "$IMG_CRI" --slurpfile pod "$2" --argjson x "$extra" '{
        metadata: {name: $n, attempt: 0}, image: {image: $img}, command: $cmd, log_path: ($n + ".log"),
        linux: {resources: {},
                security_context: {namespace_options: $pod[0].linux.security_context.namespace_options}}} * $x' >"$f"
    echo "$f"
}

k_sh() { jq -nc --arg c "$1" '["sh", "-c", $c]'; }   # CMD-JSON running a shell snippet

# k_runp NAME [SECURITY-CONTEXT-JSON]: RunPodSandbox (handler rloxsc), the sandbox checked to run under
# rloxsc; sets POD, POD_CFG; the pod is removed at exit
k_runp() {
    POD_CFG=$(k_pod_config "$@")
    ok cri runp "$POD_CFG" "$CRI_HANDLER"
    POD=$OUT
    on_exit k_pod_remove "$POD"
    k_assert_rloxsc "$POD" "$(k_pod_pid "$POD")"
}
k_pod_remove() { cri stopp "$1"; cri rmp "$1"; }

# k_run NAME CMD-JSON [EXTRA-JSON]: CreateContainer + StartContainer in $POD; sets CID
k_run() {
    local cfg
    cfg=$(k_ctr_config "$1" "$POD_CFG" "$2" "${3:-}")
    ok cri create "$POD" "$cfg" "$POD_CFG"
    CID=$OUT
    ok cri start "$CID"
}

k_ctr_json() { cri inspect "$1"; }
k_pod_json() { cri inspectp "$1"; }
k_ctr_pid() { k_ctr_json "$1" | jq -r '.info.info.pid // empty'; }
k_pod_pid() { k_pod_json "$1" | jq -r '.info.info.pid // empty'; }
k_ctr_state() { k_ctr_json "$1" | jq -r '.status.state'; }
k_ctr_is() { [ "$(k_ctr_state "$1")" = "$2" ]; }

# k_log_text FILE: a CRI log file's payload ("<time> <stream> <F|P> <text>" -> "<stream> <text>")
k_log_text() { sed -E 's/^[^ ]+ (stdout|stderr) [FP] ?/\1 /' "$1" 2>/dev/null; }

# k_assert_rloxsc ID PID: pod sandbox or container ID was created by rloxsc, not by another runtime
# (with RLOXSC_CRI2_HANDLER=runc: by the handler's runc)
k_assert_rloxsc() {
    local id=$1 pid=$2 opts st
    if [ "$CRI_HANDLER" != rloxsc ]; then
        assert_eq "the shim's options.json binary_name for $id" "$CRI2_RUNC" "$(jq -r '.binary_name // empty' "$CRI_BUNDLES/$id/options.json" 2>/dev/null || true)"
        return 0
    fi
    "$RLOXSC" --root "$CRI_RUNC_ROOT" list -q | grep -x "$id" >/dev/null \
        || fail "rloxsc --root $CRI_RUNC_ROOT list does not show $id: containerd ran another runtime (options: $(cat "$CRI_BUNDLES/$id/options.json" 2>/dev/null))"
    opts=$(jq -r '.binary_name // empty' "$CRI_BUNDLES/$id/options.json" 2>/dev/null || true)
    assert_eq "the shim's options.json binary_name for $id" "$RLOXSC" "$opts"
    grep -q '"msg":"container [0-9a-f]*: .*(policy key [a-z_.]*)"' "$CRI_BUNDLES/$id/log.json" 2>/dev/null \
        || fail "no rloxsc hardening line in $CRI_BUNDLES/$id/log.json (rloxsc's --log)"
    [[ "$pid" =~ ^[0-9]+$ ]] || fail "no pid for $id: '$pid'"
    st=$(grep -E '^(Name|NoNewPrivs|Seccomp):' "/proc/$pid/status" | tr '\t' ' ')
    assert_match "Seccomp of $id's init $pid (from the host)" '^Seccomp: +2$' "$st"
    assert_match "NoNewPrivs of $id's init $pid (from the host)" '^NoNewPrivs: +1$' "$st"
}

# k_left ID: what is left of container ID (rloxsc state, cgroups, bundle), one line each; nothing if gone
k_left() {
    local id=$1 d
    if "$RLOXSC" --root "$CRI_RUNC_ROOT" list -q | grep -x "$id" >/dev/null; then echo "rloxsc state of $id"; fi
    for d in /sys/fs/cgroup/*/"$CRI_CGROUP_PARENT/$id"; do
        [ ! -e "$d" ] || echo "cgroup $d"
    done
    [ ! -e "$CRI_BUNDLES/$id" ] || echo "bundle $CRI_BUNDLES/$id"
}
k_gone() { [ -z "$(k_left "$1")" ]; }
# k_assert_gone ID: nothing of ID is left (within 10 s: containerd deletes an exited task on its own)
k_assert_gone() {
    wait_for 10 k_gone "$1" || fail "left behind: $(k_left "$1" | tr '\n' ' ')"
}

# k_refused WHAT: the last run_cap failed with rloxsc's refusal (naming the policy key), passed back
# through containerd; the refused container left nothing behind
k_refused() {
    local id
    [ "$RC" != 0 ] || fail "$1 was accepted: it must be refused"
    rx_refused_by_rloxsc "$ERR" || fail "$1 failed without rloxsc's refusal (policy key): $(rx_last_line "$ERR")"
    rx_note "refused by rloxsc, as expected: $(rx_last_line "$ERR")"
    id=$(printf '%s\n' "$ERR" | grep -o 'refusing to create container \\\?"[0-9a-f]\{64\}' | grep -o '[0-9a-f]\{64\}' | head -n 1 || true)
    [ -z "$id" ] || k_assert_gone "$id"
}

k_lc_load() {
    [ -f "$CRI_LC" ] || fail "no pod: lifecycle-run-pod-sandbox did not pass (lifecycle-* run in order, together)"
    # shellcheck source=/dev/null
    source "$CRI_LC"
}
k_lc_need_ctr() { k_lc_load; [ -n "${CID:-}" ] || fail "no container: lifecycle-create-container did not pass"; }

# ---------------------------------------------------------------------------------------------------
# configuration

k_contrib() {
    # the running containerd took contrib/containerd/config.toml's (1.6) or config-v3.toml's (2.x)
    # handler and CRI settings
    ok cri status
    local st=$OUT
    assert_eq "RuntimeReady" true "$(jq -r '.status.conditions[] | select(.type == "RuntimeReady") | .status' <<<"$st")"
    assert_eq "NetworkReady (CNI loopback config loaded)" true "$(jq -r '.status.conditions[] | select(.type == "NetworkReady") | .status' <<<"$st")"
    assert_eq "handler rloxsc: runtime type" io.containerd.runc.v2 "$(jq -r '.info.config.containerd.runtimes.rloxsc.runtimeType' <<<"$st")"
    assert_eq "handler rloxsc: options.BinaryName" "$RLOXSC" "$(jq -r '.info.config.containerd.runtimes.rloxsc.options.BinaryName' <<<"$st")"
    assert_eq "restrict_oom_score_adj" true "$(jq -r '.info.config.restrictOOMScoreAdj' <<<"$st")"
    if [ "$CRI_CONTAINERD_MAJOR" = 1 ]; then
        assert_eq "sandbox image" "$IMG_CRI_PAUSE" "$(jq -r '.info.config.sandboxImage' <<<"$st")"
    else
        # (2.x: the images plugin's pinned sandbox image is not in the CRI status)
        assert_eq "the test's default handler (runc, not on containerd's PATH)" rxci-default "$(jq -r '.info.config.containerd.defaultRuntimeName' <<<"$st")"
    fi
    ok cri version
    assert_eq "CRI API version" v1 "$(jq -r .runtime_api_version <<<"$OUT")"
    assert_match "containerd version" "^$CRI_CONTAINERD_MAJOR\\." "$(jq -r .runtime_version <<<"$OUT")"
    # contrib/kubernetes/runtimeclass.yaml: RuntimeClass rloxsc with handler rloxsc, pods naming it
    ok python3 -c '
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
rc = [d for d in docs if d["kind"] == "RuntimeClass"]
pods = [d for d in docs if d["kind"] == "Pod"]
assert len(rc) == 1 and rc[0]["handler"] == "rloxsc" and rc[0]["metadata"]["name"] == "rloxsc", rc
assert pods and all(p["spec"]["runtimeClassName"] == "rloxsc" for p in pods), pods
print("runtimeclass.yaml ok")' "$RX_REPO/contrib/kubernetes/runtimeclass.yaml"
}

# the example Pod of contrib/kubernetes/runtimeclass.yaml, turned into CRI requests as kubelet does
# (command, memory and cpu limits, readOnlyRootFilesystem, allowPrivilegeEscalation, capabilities),
# with the suite's image instead of busybox from a registry
k_contrib_pod() {
    k_runp example
    local cfg="$CRI_WORK/example.ctr.json" st log
    python3 - "$RX_REPO/contrib/kubernetes/runtimeclass.yaml" "$IMG_CRI" "$POD_CFG" >"$cfg" <<'PY' || fail "cannot translate the example Pod"
import json, re, sys, yaml
pod = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] == "Pod"][0]
assert pod["spec"]["runtimeClassName"] == "rloxsc"
c = pod["spec"]["containers"][0]
lim = c.get("resources", {}).get("limits", {})
def mem(v):
    m = re.fullmatch(r"(\d+)(Ki|Mi|Gi)?", str(v))
    return int(m.group(1)) * {None: 1, "Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30}[m.group(2)]
def millicpu(v):
    v = str(v)
    return int(v[:-1]) if v.endswith("m") else int(float(v) * 1000)
sc = c.get("securityContext", {})
res = {}
if "memory" in lim:
    res["memory_limit_in_bytes"] = mem(lim["memory"])
if "cpu" in lim:
    res.update(cpu_period=100000, cpu_quota=millicpu(lim["cpu"]) * 100, cpu_shares=millicpu(lim["cpu"]) * 1024 // 1000)
ns = json.load(open(sys.argv[3]))["linux"]["security_context"]["namespace_options"]
print(json.dumps({
    "metadata": {"name": c["name"], "attempt": 0}, "image": {"image": sys.argv[2]},
    "command": c.get("command", []), "args": c.get("args", []), "log_path": c["name"] + ".log",
    "linux": {"resources": res, "security_context": {
        "namespace_options": ns,
        "readonly_rootfs": bool(sc.get("readOnlyRootFilesystem")),
        "no_new_privs": sc.get("allowPrivilegeEscalation") is False,
        "capabilities": {"add_capabilities": sc.get("capabilities", {}).get("add", []),
                         "drop_capabilities": sc.get("capabilities", {}).get("drop", [])}}}}))
PY
    cat "$cfg" >&2
    ok cri create "$POD" "$cfg" "$POD_CFG"
    CID=$OUT
    ok cri start "$CID"
    wait_for 20 k_ctr_is "$CID" CONTAINER_EXITED || fail "the example Pod's container did not end: $(k_ctr_state "$CID")"
    st=$(k_ctr_json "$CID")
    assert_eq "exit code" 0 "$(jq -r .status.exit_code <<<"$st")"
    log=$(k_log_text "$(jq -r .status.log_path <<<"$st")")
    printf '%s\n' "$log" >&2
    assert_match "Seccomp" '^stdout Seccomp:[[:space:]]+2$' "$log"
    assert_match "NoNewPrivs" '^stdout NoNewPrivs:[[:space:]]+1$' "$log"
    assert_match "CapEff (capabilities: drop ALL)" '^stdout CapEff:[[:space:]]+0+$' "$log"
    assert_match "interfaces" '^stdout lo$' "$log"
    assert_eq "interfaces" 1 "$(grep -c '^stdout [a-z]*[0-9]*$' <<<"$log")"
}

# ---------------------------------------------------------------------------------------------------
# one pod's life, a CRI call per scenario

k_lc_runp() {
    rm -f "$CRI_LC"
    rx_leak_snapshot cri | sort >"$CRI_WORK/leak-before.lifecycle"
    POD_CFG=$(k_pod_config lifecycle)
    ok cri runp "$POD_CFG" "$CRI_HANDLER"
    POD=$OUT
    printf 'POD=%q\nPOD_CFG=%q\n' "$POD" "$POD_CFG" >"$CRI_LC"
    ok cri inspectp "$POD"
    local st=$OUT pid netns
    assert_eq "PodSandboxStatus state" SANDBOX_READY "$(jq -r .status.state <<<"$st")"
    assert_eq "runtime handler" "$CRI_HANDLER" "$(jq -r '.info.info.runtimeHandler // .status.runtime_handler' <<<"$st")"
    pid=$(jq -r .info.info.pid <<<"$st")
    k_assert_rloxsc "$POD" "$pid"
    # the sandbox joined containerd's pinned netns (by path); CNI left only lo in it
    netns=$(jq -r '.info.info.runtimeSpec.linux.namespaces[] | select(.type == "network") | .path' <<<"$st")
    assert_match "sandbox netns path" '^/var/run/netns/cni-' "$netns"
    assert_eq "sandbox's netns is containerd's pinned one" "$(stat -L -c %i "$netns")" "$(stat -L -c %i "/proc/$pid/ns/net")"
    [ "$(readlink "/proc/$pid/ns/net")" != "$(readlink /proc/$$/ns/net)" ] || fail "the sandbox is in the host's netns"
    assert_eq "interfaces in the pod's netns" "lo" "$(awk -F: 'NR > 2 { gsub(/ /, "", $1); print $1 }' "/proc/$pid/net/dev" | tr '\n' ' ' | sed 's/ $//')"
    assert_eq "cgroup of the sandbox" "/$CRI_CGROUP_PARENT/$POD" "$(jq -r .info.info.runtimeSpec.linux.cgroupsPath <<<"$st")"
    [ -d "/sys/fs/cgroup/pids/$CRI_CGROUP_PARENT/$POD" ] || fail "no pids cgroup for the sandbox"
    assert_eq "sandbox pids.max (rloxsc's default)" 512 "$(cat "/sys/fs/cgroup/pids/$CRI_CGROUP_PARENT/$POD/pids.max")"
}

k_lc_create() {
    k_lc_load
    local cfg
    cfg=$(k_ctr_config app "$POD_CFG" "$(k_sh "echo hello-from-cri; echo to-stderr >&2; $RX_LONG")")
    ok cri create "$POD" "$cfg" "$POD_CFG"
    CID=$OUT
    printf 'CID=%q\n' "$CID" >>"$CRI_LC"
    assert_eq "ContainerStatus state" CONTAINER_CREATED "$(k_ctr_state "$CID")"
    # CreateContainer makes containerd's container only: no task, so rloxsc has not run yet
    ! "$RLOXSC" --root "$CRI_RUNC_ROOT" list -q | grep -x "$CID" >/dev/null || fail "rloxsc has state for $CID before StartContainer"
}

k_lc_start() {
    k_lc_need_ctr
    ok cri start "$CID"
    assert_eq "ContainerStatus state" CONTAINER_RUNNING "$(k_ctr_state "$CID")"
    local st pid ppid log n
    st=$(k_ctr_json "$CID"); pid=$(jq -r .info.info.pid <<<"$st"); ppid=$(k_pod_pid "$POD")
    k_assert_rloxsc "$CID" "$pid"
    # the app container joined the sandbox's net, ipc and uts namespaces by /proc/<pause>/ns/* paths,
    # and has its own pid namespace (kubelet's default) and cgroup namespace (rloxsc's)
    assert_match "namespace paths in the spec containerd sent" "/proc/$ppid/ns/net" "$(jq -c .info.info.runtimeSpec.linux.namespaces <<<"$st")"
    for n in net ipc uts; do
        assert_eq "$n namespace shared with the sandbox" "$(readlink "/proc/$ppid/ns/$n")" "$(readlink "/proc/$pid/ns/$n")"
    done
    for n in pid mnt cgroup; do
        [ "$(readlink "/proc/$ppid/ns/$n")" != "$(readlink "/proc/$pid/ns/$n")" ] || fail "$n namespace shared with the sandbox"
        [ "$(readlink "/proc/$$/ns/$n")" != "$(readlink "/proc/$pid/ns/$n")" ] || fail "$n namespace is the host's"
    done
    # the container's stdout and stderr, in the CRI log file containerd writes
    log=$(jq -r .status.log_path <<<"$st")
    assert_eq "log path" "$(jq -r .log_directory "$POD_CFG")/app.log" "$log"
    # (containerd copies the two streams separately: their order in the file is not the order written)
    wait_for 10 grep -q 'stderr F to-stderr' "$log" || fail "no stderr line in $log: $(cat "$log" 2>/dev/null)"
    wait_for 10 grep -q 'stdout F hello-from-cri' "$log" || fail "no stdout line in $log: $(cat "$log" 2>/dev/null)"
    assert_eq "the container's stdout (log file)" "stdout hello-from-cri" "$(k_log_text "$log" | grep '^stdout ' || true)"
    assert_eq "the container's stderr (log file)" "stderr to-stderr" "$(k_log_text "$log" | grep '^stderr ' || true)"
}

k_lc_exec() {
    k_lc_need_ctr
    ok cri exec "$CID" sh -c 'echo exec-ok; echo exec-err >&2; grep -E "^(NoNewPrivs|Seccomp):" /proc/self/status'
    assert_eq "ExecSync stdout" exec-ok "$(printf '%s\n' "$OUT" | head -n 1)"
    assert_eq "ExecSync stderr" exec-err "$ERR"
    assert_match "exec NoNewPrivs" '^NoNewPrivs:[[:space:]]+1$' "$OUT"
    assert_match "exec Seccomp" '^Seccomp:[[:space:]]+2$' "$OUT"
    run_cap cri exec "$CID" sh -c 'echo before-exit; exit 7'
    assert_eq "ExecSync exit code" 7 "$RC"
    assert_eq "ExecSync stdout of the failing command" before-exit "$OUT"
    run_cap cri exec "$CID" false
    assert_eq "ExecSync exit code of false" 1 "$RC"
}

k_lc_exec_missing() {
    k_lc_need_ctr
    run_cap cri exec "$CID" /rxci-no-such-binary arg
    assert_eq "ExecSync of a missing binary: an RPC error" 125 "$RC"
    assert_match "the error names the binary" '/rxci-no-such-binary.*no such file or directory' "$ERR"
    # the container is unharmed
    assert_eq "ContainerStatus state" CONTAINER_RUNNING "$(k_ctr_state "$CID")"
    ok cri exec "$CID" true
}

k_lc_hardening() {
    k_lc_need_ctr
    run_cap cri exec --timeout 60 "$CID" sh -c "$RX_PROBE"
    assert_hardened "$OUT" "$CRI_CGROUP_PARENT/$CID"
    ok cri exec "$CID" sh -c 'if touch /rxci-probe 2>/dev/null; then echo root-writable; else echo root-ro; fi; echo x >/tmp/f && cat /tmp/f'
    assert_eq "root file system" root-ro "$(printf '%s\n' "$OUT" | head -n 1)"
    assert_eq "/tmp writable (rloxsc's tmpfs)" x "$(printf '%s\n' "$OUT" | tail -n 1)"
}

k_cg() { cat "/sys/fs/cgroup/$1/$CRI_CGROUP_PARENT/$CID/$2"; }

k_lc_update() {
    k_lc_need_ctr
    assert_eq "pids.max before (rloxsc's default)" 512 "$(k_cg pids pids.max)"
    echo '{"memory_limit_in_bytes": 67108864, "cpu_period": 100000, "cpu_quota": 50000, "cpu_shares": 512}' >"$CRI_WORK/upd1.json"
    ok cri update "$CID" "$CRI_WORK/upd1.json"
    assert_eq "memory.limit_in_bytes" 67108864 "$(k_cg memory memory.limit_in_bytes)"
    assert_eq "memory.memsw.limit_in_bytes (swap never above memory)" 67108864 "$(k_cg memory memory.memsw.limit_in_bytes)"
    assert_eq "cpu.cfs_quota_us" 50000 "$(k_cg cpu cpu.cfs_quota_us)"
    assert_eq "cpu.shares" 512 "$(k_cg cpu cpu.shares)"
    assert_eq "pids.max kept" 512 "$(k_cg pids pids.max)"
    # above rloxsc's ceiling (16 GiB): clamped, never applied
    echo '{"memory_limit_in_bytes": 68719476736}' >"$CRI_WORK/upd2.json"
    ok cri update "$CID" "$CRI_WORK/upd2.json"
    assert_eq "memory.limit_in_bytes (64 GiB asked)" "$RX_MEMORY_CEILING" "$(k_cg memory memory.limit_in_bytes)"
    assert_le "memory.memsw.limit_in_bytes" "$RX_MEMORY_CEILING" "$(k_cg memory memory.memsw.limit_in_bytes)"
    grep -q 'update: memory limit 68719476736 -> 17179869184 (ceiling) (policy key limits.memory)' "$CRI_BUNDLES/$CID/log.json" \
        || fail "rloxsc's --log does not record the clamp"
    # pids: the CRI has no pids field; cgroup v2 keys reach the runtime through `unified`. rloxsc never
    # lifts pids.max (here: "max" and a value above its 4096 ceiling, on cgroup v1)
    for v in max 100000; do
        jq -n --arg v "$v" '{memory_limit_in_bytes: 134217728, unified: {"pids.max": $v}}' >"$CRI_WORK/upd3.json"
        run_cap cri update "$CID" "$CRI_WORK/upd3.json"
        assert_le "pids.max after unified pids.max=$v (RC $RC)" "$RX_PIDS_CEILING" "$(k_cg pids pids.max)"
        assert_eq "pids.max after unified pids.max=$v" 512 "$(k_cg pids pids.max)"
    done
    assert_eq "memory.limit_in_bytes (last update)" 134217728 "$(k_cg memory memory.limit_in_bytes)"
    # the container still works under the new limits
    ok cri exec "$CID" cat /sys/fs/cgroup/memory/memory.limit_in_bytes
    assert_eq "memory limit seen inside" 134217728 "$OUT"
}

k_lc_stop() {
    k_lc_need_ctr
    local st
    ok cri stop "$CID" 10
    st=$(k_ctr_json "$CID")
    assert_eq "ContainerStatus state" CONTAINER_EXITED "$(jq -r .status.state <<<"$st")"
    assert_eq "exit code (SIGTERM handled)" 0 "$(jq -r '.status.exit_code // 0' <<<"$st")"
    assert_eq "reason" Completed "$(jq -r .status.reason <<<"$st")"
    # the shim deleted the task: rloxsc's state, the cgroups and the bundle are gone
    k_assert_gone "$CID"
}

k_lc_rm() {
    k_lc_need_ctr
    ok cri rm "$CID"
    ok cri ps
    ! jq -r '.containers[]?.id' <<<"$OUT" | grep -x "$CID" >/dev/null || fail "ListContainers still lists $CID"
    run_cap cri inspect "$CID"
    assert_match "ContainerStatus after RemoveContainer" 'code = NOT_FOUND' "$ERR"
}

k_lc_stopp() {
    k_lc_load
    local st pid netns
    st=$(k_pod_json "$POD"); pid=$(jq -r .info.info.pid <<<"$st")
    netns=$(jq -r '.info.info.runtimeSpec.linux.namespaces[] | select(.type == "network") | .path' <<<"$st")
    ok cri stopp "$POD"
    assert_eq "PodSandboxStatus state" SANDBOX_NOTREADY "$(k_pod_json "$POD" | jq -r .status.state)"
    k_assert_gone "$POD"
    ! kill -0 "$pid" 2>/dev/null || [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" = Z ] || fail "the sandbox's process $pid still runs"
    [ ! -e "$netns" ] || fail "the pod's netns $netns is still there"
}

k_lc_rmp() {
    k_lc_load
    ok cri rmp "$POD"
    ok cri pods
    ! jq -r '.items[]?.id' <<<"$OUT" | grep -x "$POD" >/dev/null || fail "ListPodSandbox still lists $POD"
    rm -f "$CRI_LC"
    assert_no_leaks cri "$CRI_WORK/leak-before.lifecycle"
}

# ---------------------------------------------------------------------------------------------------
# more of what kubelet does

k_exit_logs() {
    k_runp exit
    k_run app "$(k_sh 'echo out-line; echo err-line >&2; exit 3')"
    wait_for 20 k_ctr_is "$CID" CONTAINER_EXITED || fail "container not EXITED: $(k_ctr_state "$CID")"
    local st log
    st=$(k_ctr_json "$CID")
    assert_eq "exit code" 3 "$(jq -r '.status.exit_code // 0' <<<"$st")"
    assert_eq "reason" Error "$(jq -r .status.reason <<<"$st")"
    log=$(jq -r .status.log_path <<<"$st")
    assert_eq "stdout (log file)" "stdout out-line" "$(k_log_text "$log" | grep '^stdout ' || true)"
    assert_eq "stderr (log file)" "stderr err-line" "$(k_log_text "$log" | grep '^stderr ' || true)"
    k_assert_gone "$CID"
}

# two containers of a pod share its network namespace (loopback included) under rloxsc
k_shared_net() {
    k_runp net
    # (the server's stdin must stay open: busybox nc closes the connection at EOF on its stdin)
    k_run server "$(k_sh "sleep 1000 | nc -l -p 18080 >/tmp/got & $RX_LONG")"
    local a=$CID b pa pb
    k_run client "$(k_sh "$RX_LONG")"
    b=$CID
    pa=$(k_ctr_pid "$a"); pb=$(k_ctr_pid "$b")
    k_assert_rloxsc "$a" "$pa"; k_assert_rloxsc "$b" "$pb"
    assert_eq "the two containers' netns" "$(readlink "/proc/$pa/ns/net")" "$(readlink "/proc/$pb/ns/net")"
    assert_eq "and the sandbox's" "$(readlink "/proc/$(k_pod_pid "$POD")/ns/net")" "$(readlink "/proc/$pa/ns/net")"
    wait_for 5 cri exec "$a" sh -c 'netstat -ltn | grep -q ":18080 "' || fail "the server does not listen"
    ok cri exec "$b" sh -c 'echo over-the-pods-lo | nc -w 2 127.0.0.1 18080'
    wait_for 5 cri exec "$a" grep -q over-the-pods-lo /tmp/got || fail "the server got nothing over the pod's loopback"
}

# shareProcessNamespace: the containers join the sandbox's pid namespace by path
k_shared_pid() {
    k_runp pid '{"namespace_options": {"pid": "POD"}}'
    k_run a "$(k_sh "$RX_LONG")"
    local a=$CID
    k_run b "$(k_sh "$RX_LONG")"
    k_assert_rloxsc "$CID" "$(k_ctr_pid "$CID")"
    assert_eq "pid namespace of the container and the sandbox" "$(readlink "/proc/$(k_pod_pid "$POD")/ns/pid")" "$(readlink "/proc/$(k_ctr_pid "$CID")/ns/pid")"
    ok cri exec "$CID" ps -o pid,args
    assert_match "the sandbox's process, seen from a container" '^ *1 /bin/sleep 1000000' "$OUT"
    [ "$(printf '%s\n' "$OUT" | grep -c 'sleep 1000$')" = 2 ] || fail "both containers' processes should be visible"
    # stopping one container of a shared pid namespace: the shim's `kill --all` takes its processes
    # (the shim sends `kill --all ID 9` when an init exits in a pid namespace it joined; as runc does,
    # rloxsc signals what is left in the stopped container's cgroup, or containerd logs "failed to
    # kill init's children" and waits 2 s for the container's stdout to close)
    ok cri stop "$a" 10
    k_assert_gone "$a"
    ! grep -F "$a" "$W/$CRI_DAEMON.log" | grep "failed to kill init's children" >/dev/null \
        || fail "containerd: $(grep "$a" "$W/$CRI_DAEMON.log" | grep "failed to kill init's children" | tail -n 1 | cut -c1-300)"
    ok cri exec "$CID" ps -o pid,args
    [ "$(printf '%s\n' "$OUT" | grep -c 'sleep 1000$')" = 1 ] || fail "the stopped container's processes are left: $OUT"
}

k_oom() {
    k_runp oom
    k_run hog "$(k_sh 'x=a; while true; do x=$x$x; done')" '{"linux": {"resources": {"memory_limit_in_bytes": 67108864}}}'
    wait_for 60 k_ctr_is "$CID" CONTAINER_EXITED || fail "container not EXITED: $(k_ctr_state "$CID")"
    local st; st=$(k_ctr_json "$CID")
    assert_eq "exit code" 137 "$(jq -r '.status.exit_code // 0' <<<"$st")"
    assert_eq "reason (kubelet's OOMKilled)" OOMKilled "$(jq -r .status.reason <<<"$st")"
}

# a pod without a runtime handler goes to containerd's default (runc), which is not on the suite's
# containerd's PATH: it fails loudly, so no scenario here could have run under plain runc unnoticed
k_default_handler() {
    local cfg
    cfg=$(k_pod_config default)
    run_cap cri runp "$cfg"
    if [ "$RC" = 0 ]; then on_exit k_pod_remove "$OUT"; fail "a pod ran under containerd's default runtime (runc) though runc is not on its PATH"; fi
    assert_match "the failure names runc" '"runc": executable file not found|failed to look up the path of "runc"|runc: no such file' "$ERR"
}

# ---------------------------------------------------------------------------------------------------
# hostile pods: what a careless or hostile PodSpec asks for. EXPECT is "hardened" (the probe run with
# ExecSync shows rloxsc's containment) or "refused" (rloxsc's error comes back through the CRI)

# k_hostile NAME EXPECT POD-SECURITY-CONTEXT CONTAINER-EXTRA
k_hostile() {
    local name=$1 expect=$2 cfg pid
    POD_CFG=$(k_pod_config "$name" "$3")
    run_cap cri runp "$POD_CFG" "$CRI_HANDLER"
    if [ "$RC" != 0 ]; then
        [ "$expect" = refused ] || fail "RunPodSandbox failed: $(rx_last_line "$ERR")"
        k_refused "RunPodSandbox"; return 0
    fi
    POD=$OUT
    on_exit k_pod_remove "$POD"
    k_assert_rloxsc "$POD" "$(k_pod_pid "$POD")"
    cfg=$(k_ctr_config "$name" "$POD_CFG" "$(k_sh "$RX_LONG")" "$4")
    ok cri create "$POD" "$cfg" "$POD_CFG"
    CID=$OUT
    run_cap cri start "$CID"
    if [ "$RC" != 0 ]; then
        [ "$expect" = refused ] || fail "StartContainer failed: $(rx_last_line "$ERR")"
        k_refused "StartContainer"; return 0
    fi
    [ "$expect" = hardened ] || fail "$name was accepted: rloxsc must refuse it"
    pid=$(k_ctr_pid "$CID")
    k_assert_rloxsc "$CID" "$pid"
    run_cap cri exec --timeout 60 "$CID" sh -c "$RX_PROBE"
    assert_hardened "$OUT" "$CRI_CGROUP_PARENT/$CID"
    HOSTILE_PID=$pid
}

k_hostile_privileged() {
    # containerd allows a privileged container only in a privileged sandbox
    k_hostile privileged hardened '{"privileged": true}' '{"linux": {"security_context": {"privileged": true}}}'
}
k_hostile_host_network() {
    k_hostile hostnet hardened '{"namespace_options": {"network": "NODE"}}' ''
    # no CNI for a host-network pod: the sandbox's spec had no netns; rloxsc gave each its own
    [ "$(readlink "/proc/$(k_pod_pid "$POD")/ns/net")" != "$(readlink /proc/$$/ns/net)" ] || fail "the sandbox is in the host's netns"
}
k_hostile_host_pid()     { k_hostile hostpid hardened '{"namespace_options": {"pid": "NODE"}}' ''; }
# hostIPC: containerd binds the host's /dev/shm into the sandbox; rloxsc refuses binds from the host's /dev
k_hostile_host_ipc()     { k_hostile hostipc refused '{"namespace_options": {"ipc": "NODE"}}' ''; }
k_hostile_unconfined() {
    k_hostile unconfined hardened '{"seccomp": {"profile_type": "Unconfined"}}' \
        '{"linux": {"security_context": {"seccomp": {"profile_type": "Unconfined"}}}}'
}
k_hostile_all_caps() {
    k_hostile caps hardened '' '{"linux": {"security_context": {"capabilities": {"add_capabilities": ["ALL"]}}}}'
}
k_hostile_devices() {
    k_hostile devices hardened '' '{"devices": [
        {"host_path": "/dev/kmsg", "container_path": "/dev/kmsg", "permissions": "rwm"},
        {"host_path": "/dev/fuse", "container_path": "/dev/fuse", "permissions": "rwm"}]}'
}
k_hostile_memory() {
    k_hostile memory hardened '' '{"linux": {"resources": {"memory_limit_in_bytes": 68719476736, "oom_score_adj": -998}}}'
    assert_eq "memory.limit_in_bytes (64 GiB asked)" "$RX_MEMORY_CEILING" "$(k_cg memory memory.limit_in_bytes)"
    local adj; adj=$(cat "/proc/$HOSTILE_PID/oom_score_adj")
    [ "$adj" -ge 0 ] || fail "oom_score_adj $adj < 0"
}
k_hostile_writable() {
    k_hostile writable hardened '' '{"linux": {"security_context": {"readonly_rootfs": false, "no_new_privs": false,
        "run_as_user": {"value": 0}, "masked_paths": [], "readonly_paths": []}}}'
    ok cri exec "$CID" sh -c 'touch /rxci-probe 2>/dev/null && echo root-writable || echo root-ro'
    assert_eq "root file system" root-ro "$OUT"
}
k_hostile_everything() {
    k_hostile everything hardened '{"privileged": true, "namespace_options": {"network": "NODE", "pid": "NODE"},
        "seccomp": {"profile_type": "Unconfined"}}' \
        '{"devices": [{"host_path": "/dev/kmsg", "container_path": "/dev/kmsg", "permissions": "rwm"}],
          "linux": {"resources": {"memory_limit_in_bytes": 68719476736, "oom_score_adj": -998},
                    "security_context": {"privileged": true, "readonly_rootfs": false, "no_new_privs": false,
                        "capabilities": {"add_capabilities": ["ALL"]}, "seccomp": {"profile_type": "Unconfined"},
                        "masked_paths": [], "readonly_paths": []}}}'
}
k_hostile_bind_root() {
    k_hostile bindroot refused '' '{"mounts": [{"host_path": "/", "container_path": "/host"}]}'
}
# the CRI socket itself: a pod that can reach it can start privileged pods
k_hostile_bind_sock() {
    k_hostile bindsock refused '' "$(jq -nc --arg s "$CRI_SOCK" '{mounts: [{host_path: $s, container_path: "/rxci.sock"}]}')"
}
k_hostile_bind_state() {
    k_hostile bindstate refused '' '{"mounts": [{"host_path": "/run/containerd", "container_path": "/rxci-state"}]}'
}

# /bin/escape-demo as the container's command; its output read from the CRI log file
k_escape() {
    k_runp "$1" "$2"
    k_run demo '["/bin/escape-demo"]' "$3"
    wait_for 120 k_ctr_is "$CID" CONTAINER_EXITED || fail "escape-demo did not end: $(k_ctr_state "$CID")"
}
k_escape_demo() {
    rx_with_listener k_escape demo '' ''
    OUT=$(k_log_text "$(k_ctr_json "$CID" | jq -r .status.log_path)" | sed -E 's/^(stdout|stderr) //')
    printf '%s\n' "$OUT" >&2
    assert_escape_demo "$OUT"
}
k_escape_demo_careless() {
    rx_with_listener k_escape demo2 '{"privileged": true, "namespace_options": {"network": "NODE"}}' \
        '{"linux": {"security_context": {"privileged": true, "capabilities": {"add_capabilities": ["ALL"]}}}}'
    OUT=$(k_log_text "$(k_ctr_json "$CID" | jq -r .status.log_path)" | sed -E 's/^(stdout|stderr) //')
    printf '%s\n' "$OUT" >&2
    assert_escape_demo "$OUT"
}

# ---------------------------------------------------------------------------------------------------
# 10 pods' whole lives (half stopped container by container, half by StopPodSandbox alone, as kubelet
# does when it kills a pod): nothing left (cgroups, rloxsc state, mounts, netns, CNI cache, shims, processes)

k_leaks() {
    local i pod cfg cid
    rx_leak_snapshot cri | sort >"$CRI_WORK/leak-before"
    cat "$CRI_WORK/leak-before" >&2
    for i in $(seq 10); do
        cfg=$(k_pod_config "leak$i")
        ok cri runp "$cfg" "$CRI_HANDLER"
        pod=$OUT
        ok cri create "$pod" "$(k_ctr_config app "$cfg" "$(k_sh "$RX_LONG")")" "$cfg"
        cid=$OUT
        ok cri start "$cid"
        ok cri exec "$cid" true
        if [ $((i % 2)) = 0 ]; then
            ok cri stop "$cid" 10
            ok cri rm "$cid"
        fi
        ok cri stopp "$pod"
        ok cri rmp "$pod"
    done
    assert_no_leaks cri "$CRI_WORK/leak-before"
}

# ---------------------------------------------------------------------------------------------------
# compatibility: what common pods ask for and runc gives (containerd 2.x asks more of the runtime than
# 1.6). A failure's reason says who stopped it: "REFUSED by rloxsc" (its error names a policy key),
# "REFUSED by containerd" (the handler's features lack it) or "BUG" (anything else).

# k_why TEXT: who stopped the request whose error is TEXT
k_why() {
    if rx_refused_by_rloxsc "$1"; then
        printf 'REFUSED by rloxsc (%s)' "$(grep -o 'policy key [A-Za-z0-9_.-]*' <<<"$1" | head -n 1)"
    elif grep -Eqi 'not supported|does not support|unsupported' <<<"$1"; then
        printf "REFUSED by containerd (not in the handler's features)"
    else
        printf 'BUG (the error names no policy key)'
    fi
}
# k_short TEXT: a CRI error without containerd's wrapping (from the runtime's own message on)
k_short() {
    printf '%s\n' "$1" | sed '/^[[:space:]]*$/d' | tail -n 1 | sed -E 's/^rpc error: code = [A-Za-z]+ desc = //;
        s/.*OCI runtime create failed: //; s/.*failed to generate spec: //; s/failed to create container: exec process failed with error error in executing process : //' | cut -c1-600
}
# k_step WHAT CMD...: run CMD (captured); if it fails, the scenario fails with k_why's verdict
k_step() {
    local what=$1; shift
    run_cap "$@"
    [ "$RC" = 0 ] || fail "$(k_why "$ERR$OUT"): $what: $(k_short "$ERR$OUT")"
}
# k_step_runp NAME [SECURITY-CONTEXT-JSON]: as k_runp, the failure classified
k_step_runp() {
    POD_CFG=$(k_pod_config "$@")
    k_step RunPodSandbox cri runp "$POD_CFG" "$CRI_HANDLER"
    POD=$OUT
    on_exit k_pod_remove "$POD"
    k_assert_rloxsc "$POD" "$(k_pod_pid "$POD")"
}
# k_step_run NAME CMD-JSON [EXTRA-JSON]: as k_run, the failures classified; sets CID. The spec
# containerd made at CreateContainer is logged through the jq filter $K_SPEC (if set).
# K_NO_ASSERT=1: the caller checks the container itself (it may have exited already)
k_step_run() {
    local cfg
    cfg=$(k_ctr_config "$1" "$POD_CFG" "$2" "${3:-}")
    k_step CreateContainer cri create "$POD" "$cfg" "$POD_CFG"
    CID=$OUT
    [ -z "${K_SPEC:-}" ] || k_spec_note "$CID" ".info.info.runtimeSpec | $K_SPEC"
    k_step StartContainer cri start "$CID"
    [ "${K_NO_ASSERT:-0}" = 1 ] || k_assert_rloxsc "$CID" "$(k_ctr_pid "$CID")"
}
# k_diag_spec POD-CONFIG JQ-FILTER: (containerd 2.x) the spec containerd sends for that pod's sandbox,
# seen by running it once more through the argv-recording handler (whose wrapper keeps each bundle's
# config.json); for the log, when the pod failed under rloxsc before any spec could be inspected
k_diag_spec() {
    [ "$CRI_CONTAINERD_MAJOR" = 2 ] || return 0
    local id f
    run_cap cri runp "$1" rxci-argv
    [ "$RC" != 0 ] || on_exit k_pod_remove "$OUT"
    f=$(ls -t "$CRI_WORK"/specs/*.json 2>/dev/null | head -n 1 || true)
    [ -n "$f" ] || { rx_note "(no spec captured by the argv-recording handler)"; return 0; }
    rx_note "spec of the sandbox sent by containerd 2.x (via handler rxci-argv): $(jq -c "$2" "$f" | head -c 2000)"
}
# k_spec_note ID JQ-ARGS...: what containerd put in the OCI spec of ID (a filter on .runtimeSpec), logged
k_spec_note() {
    local id=$1; shift
    rx_note "spec of $id sent by containerd $CRI_CONTAINERD_MAJOR.x: $(k_ctr_json "$id" | jq -c "$@" 2>/dev/null | head -c 2000)"
}

# a hostPath volume at DEST (/tmp/x, /tmp): the host's files are there inside, and what the container
# writes there reaches the host (rloxsc's /tmp scratch tmpfs must not hide a volume under /tmp)
k_vol_check() {
    local name=$1 dst=$2 src
    src=$CRI_WORK/vols/$name-$$
    mkdir -p "$src"
    # open to every user, as an emptyDir is: under rloxsc the container's root is not host root, so
    # a root-owned 0755 hostPath directory is readable but not writable (userns.mode, on purpose)
    chmod 1777 "$src"
    echo rxci-volume-content >"$src/f"
    k_step_runp "$name"
    K_SPEC='.mounts | map(select(.destination | startswith("/tmp")))' \
        k_step_run app "$(k_sh "$RX_LONG")" "$(jq -nc --arg s "$src" --arg d "$dst" '{mounts: [{host_path: $s, container_path: $d}]}')"
    run_cap cri exec "$CID" sh -c "cat $dst/f; echo written-inside >$dst/g; awk '\$5 ~ \"^/tmp\" { for (i = 7; \$i != \"-\"; i++); print \"mnt\", \$5, \$(i + 1), \$4 }' /proc/self/mountinfo"
    [ "$(printf '%s\n' "$OUT" | head -n 1)" = rxci-volume-content ] \
        || fail "BUG: the hostPath volume at $dst is hidden inside the container (mounts there: $(grep '^mnt ' <<<"$OUT" | tr '\n' ';'))"
    assert_eq "written at $dst inside, read on the host" written-inside "$(cat "$src/g" 2>/dev/null)"
}
k_vol_tmp_sub() { k_vol_check vol-tmp-x /tmp/x; }
k_vol_tmp()     { k_vol_check vol-tmp /tmp; }

# mountPropagation: HostToContainer. containerd wants the host path on a shared (or slave) mount,
# makes the mount rslave and the spec's rootfsPropagation rslave; a mount made on the host under the
# volume after the start must appear inside
k_prop_h2c() {
    local src=$CRI_WORK/prop-$$
    mkdir -p "$src"
    mount --bind "$src" "$src"
    on_exit umount -l "$src"
    mount --make-shared "$src"
    echo before >"$src/f"
    k_step_runp prop
    K_SPEC='{rootfsPropagation: .linux.rootfsPropagation, mount: (.mounts | map(select(.destination == "/prop")))}' \
        k_step_run app "$(k_sh "$RX_LONG")" \
        "$(jq -nc --arg s "$src" '{mounts: [{host_path: $s, container_path: "/prop", propagation: "PROPAGATION_HOST_TO_CONTAINER"}]}')"
    ok cri exec "$CID" cat /prop/f
    assert_eq "the volume's file inside" before "$OUT"
    mkdir -p "$src/late"
    mount -t tmpfs -o size=1m rxci-late "$src/late"
    on_exit umount -l "$src/late"
    echo late >"$src/late/f"
    wait_for 5 cri exec "$CID" grep -qx late /prop/late/f \
        || fail "BUG: a mount made on the host after the start did not reach the container (HostToContainer): $(cri exec "$CID" sh -c 'grep " /prop" /proc/self/mountinfo' 2>&1 | tr '\n' ';')"
}

# containerd 2.x asks each handler's runtime for its features (the runc shim runs `<runtime> features`)
# and reports per handler whether recursive read-only mounts and user namespaces work (CRI Status,
# runtime_handlers: what kubelet reads for recursiveReadOnly volumes and hostUsers: false). 1.6 asks nothing.
k_features() {
    local st h rro userns want_rro want_userns f
    ok cri status
    st=$OUT
    rx_note "runtime_handlers: $(jq -c .runtime_handlers <<<"$st")"
    if [ "$CRI_CONTAINERD_MAJOR" = 1 ]; then
        assert_eq "runtime handlers with features (containerd 1.6 does not ask the runtime)" 0 \
            "$(jq '[.runtime_handlers[]? | select(.features)] | length' <<<"$st")"
        return 0
    fi
    h=$(jq -c --arg h "$CRI_HANDLER" '.runtime_handlers[] | select(.name == $h)' <<<"$st")
    [ -n "$h" ] || fail "no runtime handler $CRI_HANDLER in the CRI status"
    jq -e .features <<<"$h" >/dev/null || fail "BUG: containerd could not read the features of handler $CRI_HANDLER (its log: $(grep -i 'introspect' "$W/$CRI_DAEMON.log" | tail -n 1 | cut -c1-300))"
    rro=$(jq -r '.features.recursive_read_only_mounts' <<<"$h"); userns=$(jq -r '.features.user_namespaces' <<<"$h")
    if [ "$CRI_HANDLER" = rloxsc ]; then
        # containerd ran `rloxsc features` (the argv-recording handler, same binary, shows the call)
        grep -qx features "$CRI_WORK/argv.log" || fail "containerd did not call '<runtime> features' ($CRI_WORK/argv.log: $(head -c 300 "$CRI_WORK/argv.log" 2>/dev/null))"
        ok "$RLOXSC" features
        f=$OUT
        want_rro=$(jq -r '.mountOptions // [] | index("rro") != null' <<<"$f")
        want_userns=$(jq -r '(.linux.namespaces // [] | index("user") != null) and (.linux.mountExtensions.idmap.enabled == true)' <<<"$f")
        assert_eq "recursive_read_only_mounts reported = rro in rloxsc's mountOptions" "$want_rro" "$rro"
        assert_eq "user_namespaces reported = user namespace + idmap in rloxsc's features" "$want_userns" "$userns"
        # every argv of one pod's life under rloxsc, through the argv-recording handler (for the log)
        k_argv_pod
    fi
    [ "$rro" = true ] || fail "REFUSED by containerd (not in the handler's features): handler $CRI_HANDLER: recursive_read_only_mounts=false ('rro' not in '$CRI_HANDLER features' mountOptions); user_namespaces=$userns"
    [ "$userns" = true ] || fail "REFUSED by containerd (not in the handler's features): handler $CRI_HANDLER: user_namespaces=false (features need namespace user and linux.mountExtensions.idmap.enabled); recursive_read_only_mounts=$rro"
}
# k_argv_pod: one pod's life through the handler rxci-argv (rloxsc behind a wrapper recording argv)
k_argv_pod() {
    local cfg pod cid
    : >"$CRI_WORK/argv.log"
    cfg=$(k_pod_config argv)
    ok cri runp "$cfg" rxci-argv
    pod=$OUT
    on_exit k_pod_remove "$pod"
    ok cri create "$pod" "$(k_ctr_config app "$cfg" "$(k_sh "$RX_LONG")")" "$cfg"
    cid=$OUT
    ok cri start "$cid"
    ok cri exec "$cid" true
    echo '{"memory_limit_in_bytes": 67108864}' >"$CRI_WORK/argv-upd.json"
    ok cri update "$cid" "$CRI_WORK/argv-upd.json"
    ok cri stop "$cid" 10
    ok cri rm "$cid"
    ok cri stopp "$pod"
    ok cri rmp "$pod"
    rx_note "argv of one pod's life (runp, create, start, exec, update, stop, rm, stopp, rmp):"
    sed -E 's/[0-9a-f]{64}/ID/g; s#/[^ ]*/(log\.json|init\.pid|[0-9a-f]+\.pid|config\.json)#.../\1#g' "$CRI_WORK/argv.log" | sort | uniq -c | sed 's/^/  /' >&2
}

# recursiveReadOnly: Enabled (CRI Mount.recursive_read_only, with readonly): a mount below the
# volume is read-only too (a plain read-only bind leaves submounts writable). containerd 1.6 predates
# the field and sends a plain read-only rbind (kubelet would not ask it: it reports no handler
# features): there the submount must not end up writable, and rloxsc refusing the mount is fine.
k_rro() {
    local src=$CRI_WORK/rro-$$ cfg
    mkdir -p "$src/sub"
    mount -t tmpfs -o size=1m rxci-rro "$src/sub"
    on_exit umount -l "$src/sub"
    echo top >"$src/f"; echo sub >"$src/sub/f"
    k_step_runp rro
    if [ "$CRI_CONTAINERD_MAJOR" = 1 ]; then
        cfg=$(k_ctr_config app "$POD_CFG" "$(k_sh "$RX_LONG")" \
            "$(jq -nc --arg s "$src" '{mounts: [{host_path: $s, container_path: "/rro", readonly: true, recursive_read_only: true}]}')")
        k_step CreateContainer cri create "$POD" "$cfg" "$POD_CFG"
        CID=$OUT
        k_spec_note "$CID" '.info.info.runtimeSpec.mounts | map(select(.destination == "/rro"))'
        run_cap cri start "$CID"
        if [ "$RC" != 0 ]; then
            rx_refused_by_rloxsc "$ERR" || fail "$(k_why "$ERR"): StartContainer: $(k_short "$ERR")"
            rx_note "containerd 1.6 sent a plain read-only rbind; rloxsc refused the writable submount: $(rx_last_line "$ERR")"
            return 0
        fi
        k_assert_rloxsc "$CID" "$(k_ctr_pid "$CID")"
    else
        K_SPEC='.mounts | map(select(.destination == "/rro"))' k_step_run app "$(k_sh "$RX_LONG")" \
            "$(jq -nc --arg s "$src" '{mounts: [{host_path: $s, container_path: "/rro", readonly: true, recursive_read_only: true}]}')"
    fi
    ok cri exec "$CID" sh -c 'cat /rro/f /rro/sub/f; for d in /rro /rro/sub; do if touch $d/x 2>/dev/null; then echo "$d writable"; else echo "$d ro"; fi; done'
    assert_eq "the volume's files" "top sub" "$(printf '%s\n' "$OUT" | head -n 2 | tr '\n' ' ' | sed 's/ $//')"
    assert_eq "the volume's top (read-only)" "/rro ro" "$(printf '%s\n' "$OUT" | sed -n 3p)"
    assert_eq "the mount below it (recursively read-only)" "/rro/sub ro" "$(printf '%s\n' "$OUT" | sed -n 4p)"
}

# hostUsers: false: the pod in a user namespace of its own (NamespaceOption.userns_options mode POD
# with kubelet's kind of mapping: 65536 ids from a multiple of 65536); root inside is not root outside
k_userns() {
    local map='[{"host_id": 1310720, "container_id": 0, "length": 65536}]' pid sec
    sec=$(jq -nc --argjson m "$map" '{namespace_options: {userns_options: {mode: "POD", uids: $m, gids: $m}}}')
    POD_CFG=$(k_pod_config userns "$sec")
    run_cap cri runp "$POD_CFG" "$CRI_HANDLER"
    if [ "$RC" != 0 ]; then
        local err="$ERR$OUT"
        k_diag_spec "$(k_pod_config userns-diag "$sec")" \
            '{uidMappings: .linux.uidMappings, gidMappings: .linux.gidMappings, namespaces: .linux.namespaces, mounts: [.mounts[] | select(.type == "bind") | {destination, source, options}]}'
        # (and what the failed sandbox left behind, if anything)
        local id left=
        id=$(grep -o 'failed to start sandbox \\\?"[0-9a-f]\{64\}' <<<"$err" | grep -o '[0-9a-f]\{64\}' | head -n 1 || true)
        if [ -n "$id" ] && ! wait_for 10 k_gone "$id"; then left="; left behind: $(k_left "$id" | tr '\n' ' ')"; fi
        fail "$(k_why "$err"): RunPodSandbox: $(k_short "$err")$left"
    fi
    POD=$OUT
    on_exit k_pod_remove "$POD"
    k_assert_rloxsc "$POD" "$(k_pod_pid "$POD")"
    K_SPEC='.linux | {uidMappings, gidMappings, namespaces}' k_step_run app "$(k_sh "$RX_LONG")"
    if [ "$CRI_CONTAINERD_MAJOR" = 1 ]; then
        # containerd 1.6 predates userns_options: the pod runs without a user namespace, as with runc
        # (kubelet would not ask it: it reports no handler features); rloxsc gives the pod a user
        # namespace of its own anyway (userns.mode), runc none
        ok cri exec "$CID" cat /proc/self/uid_map
        if [ "$CRI_HANDLER" = rloxsc ]; then
            assert_match "uid_map inside (containerd 1.6 ignores userns_options; rloxsc's own block)" '^ *0 +[1-9][0-9]* +65536$' "$OUT"
            rx_note "containerd 1.6 ignored userns_options: rloxsc's own user namespace ($(tr -s ' ' <<<"$OUT"))"
        else
            assert_match "uid_map inside (containerd 1.6 ignores userns_options)" '^ *0 +0 +4294967295$' "$OUT"
            rx_note "containerd 1.6 ignored userns_options: no user namespace"
        fi
        return 0
    fi
    ok cri exec "$CID" sh -c 'cat /proc/self/uid_map; id -u; echo x >/tmp/f && cat /tmp/f'
    assert_match "uid_map inside" '^ *0 +1310720 +65536$' "$(printf '%s\n' "$OUT" | head -n 1)"
    assert_eq "uid inside" 0 "$(printf '%s\n' "$OUT" | sed -n 2p)"
    assert_eq "/tmp writable inside" x "$(printf '%s\n' "$OUT" | sed -n 3p)"
    pid=$(k_ctr_pid "$CID")
    assert_eq "the container's uid seen from the host" 1310720 "$(awk '/^Uid:/ { print $2 }' "/proc/$pid/status")"
    [ "$(readlink "/proc/$pid/ns/user")" != "$(readlink /proc/$$/ns/user)" ] || fail "the container is in the host's user namespace"
    assert_eq "the sandbox's and the container's user namespace" "$(readlink "/proc/$(k_pod_pid "$POD")/ns/user")" "$(readlink "/proc/$pid/ns/user")"
}

# k_web_image NAME CMD-JSON URL-PATH TEXT DIRS: a web server from the web servers' image (no volumes,
# no securityContext) must keep running and serve TEXT at URL-PATH on the pod's loopback; under
# rloxsc the DIRS (its system files) stay read-only
k_web_image() {
    local name=$1 cmd=$2 path=$3 text=$4 dirs=$5 web st log
    cri images | jq -e --arg i "$IMG_CRI_NGINX" '[.images[].repo_tags[]] | index($i)' >/dev/null \
        || skip "no image $IMG_CRI_NGINX in the CRI (the setup could not build it: $RX_NGINX_CACHE)"
    k_step_runp "$name"
    K_NO_ASSERT=1 k_step_run web "$cmd" "$(jq -nc --arg i "$IMG_CRI_NGINX" '{image: {image: $i}}')"
    web=$CID
    sleep 2
    if ! k_ctr_is "$web" CONTAINER_RUNNING; then
        st=$(k_ctr_json "$web")
        log=$(k_log_text "$(jq -r .status.log_path <<<"$st")" | tail -n 5 | tr '\n' ';')
        fail "BUG: the $name image exited ($(jq -r '.status.state + " exit " + (.status.exit_code | tostring)' <<<"$st")): $log"
    fi
    k_assert_rloxsc "$web" "$(k_ctr_pid "$web")"
    k_step_run client "$(k_sh "$RX_LONG")"
    wait_for 10 cri exec "$CID" sh -c "wget -q -O - http://127.0.0.1$path | grep -q '$text'" \
        || fail "BUG: $name does not serve on the pod's loopback: $(cri exec "$CID" wget -q -O - "http://127.0.0.1$path" 2>&1 | tail -n 2 | tr '\n' ' ')"
    ok cri exec "$web" sh -c "for d in $dirs; do if touch \$d/.rxci 2>/dev/null; then echo \"\$d writable\"; else echo \"\$d ro\"; fi; done"
    if [ "$CRI_HANDLER" = rloxsc ]; then
        assert_no_match "system files writable under rloxsc" ' writable$' "$OUT"
    fi
}

# an nginx-style image: Debian's nginx-light, the image's command `nginx -g "daemon off;"` (the image
# also holds apache2, whose index.html Debian's nginx would serve first: ask for nginx's own page)
k_nginx() {
    k_web_image nginx '[]' /index.nginx-debian.html "Welcome to nginx" "/ /etc /usr /usr/sbin /var/www/html"
}

# an httpd-style image: Debian's apache2 from the same rootfs, `apache2ctl -D FOREGROUND` (it makes
# its run and lock directories under /run, logs to /var/log/apache2, binds port 80)
k_httpd() {
    k_web_image httpd '["apache2ctl", "-D", "FOREGROUND"]' / "Apache2 Debian Default Page" "/ /etc /etc/apache2 /usr /usr/sbin /var/www/html"
}
