# shellcheck shell=bash
# tests/clients/ctr.sh - containerd 1.6 `ctr` scenarios through rloxsc:
#   ctr -n rloxsc-ci run --runtime io.containerd.runc.v2 --runc-binary $RLOXSC IMAGE ID CMD...
# (containerd's runc v2 shim exec'ing rloxsc with --root /run/containerd/runc/rloxsc-ci).
# ctr has no `update` (1.6), no pids flag, no exit-code mapping (a failed create is exit 1 with runc
# too), and its default spec mounts no cgroupfs: limits are read on the host, /sys/fs/cgroup/*/rloxsc-ci/ID.
# ctr -t needs a terminal on its own stdin: those scenarios run it under script(1).

CTR_SCENARIOS="
contrib-containerd-config c_contrib
run-stdout c_run_stdout
exit-status c_exit_status
missing-binary c_missing_binary
exec c_exec
exec-tty c_exec_tty
ps c_ps
pause-resume c_pause
kill-rm c_kill_rm
kill-signal c_kill_signal
tty-run c_tty_run
read-only c_read_only
tmpfs c_tmpfs
bind-mount c_bind_mount
cpu c_cpu
env-workdir c_env_workdir
workdir-absent c_workdir_absent
oom c_oom
leaks-20-runs c_leaks
hostile-network-host c_hostile_network_host
hostile-seccomp-unconfined c_hostile_seccomp_unconfined
hostile-all-caps c_hostile_all_caps
hostile-privileged c_hostile_privileged
hostile-device-fuse c_hostile_device_fuse
hostile-device-kmsg c_hostile_device_kmsg
hostile-memory-64g c_hostile_memory_64g
hostile-allow-new-privs c_hostile_allow_new_privs
hostile-no-pivot c_hostile_no_pivot
hostile-join-host-pidns c_hostile_join_host_pidns
hostile-join-host-netns c_hostile_join_host_netns
hostile-bind-host-root c_hostile_bind_root
hostile-bind-containerd-sock c_hostile_bind_containerd_sock
escape-demo c_escape_demo
escape-demo-careless c_escape_demo_careless
"

CTR=(ctr -n "$CTR_NS")
CRUN=("${CTR[@]}" run --runtime io.containerd.runc.v2 --runc-binary "$RLOXSC")

c_id() { echo "$NAME_PREFIX-$1-$$"; }

# c_remove ID: kill, delete the task, delete the container
c_remove() {
    "${CTR[@]}" task kill -s SIGKILL "$1" >/dev/null 2>&1 || true
    wait_for 10 c_task_gone_or_stopped "$1" || true
    "${CTR[@]}" task rm -f "$1" >/dev/null 2>&1 || true
    "${CTR[@]}" container rm "$1" >/dev/null 2>&1 || true
}
c_task_status() { "${CTR[@]}" task ls 2>/dev/null | awk -v id="$1" '$1 == id {print $3}'; }
c_task_is() { [ "$(c_task_status "$1")" = "$2" ]; }
c_task_gone_or_stopped() { local s; s=$(c_task_status "$1"); [ -z "$s" ] || [ "$s" = STOPPED ]; }

# c_start NAME [FLAGS...]: a detached long-lived container ($PAYLOAD or RX_LONG); sets CID; removed at exit
c_start() {
    CID=$(c_id "$1"); shift
    on_exit c_remove "$CID"
    ok "${CRUN[@]}" -d "$@" "$IMG_CTR" "$CID" sh -c "${PAYLOAD:-$RX_LONG}"
    wait_for 10 c_task_is "$CID" RUNNING || fail "task $CID is not RUNNING: $(c_task_status "$CID")"
}

# c_tty CMD...: run CMD under script(1) so that it has a terminal; NULs and CRs stripped from OUT
c_tty() {
    run_cap script -qec "$(rx_quote "$@")" /dev/null
    # (script(1) with no terminal on its stdin makes the pty echo "^@" first, with runc too)
    OUT=$(printf '%s' "$OUT" | tr -d '\000' | sed 's/^\^@//')
}

c_run_stdout() {
    ok "${CRUN[@]}" --rm "$IMG_CTR" "$(c_id stdout)" sh -c 'echo hello-from-rloxsc; grep "^NoNewPrivs:" /proc/self/status'
    assert_eq "stdout" "hello-from-rloxsc" "$(printf '%s\n' "$OUT" | head -n 1)"
    assert_match "NoNewPrivs (rloxsc forces it)" '^NoNewPrivs:[[:space:]]+1$' "$OUT"
}

c_exit_status() {
    run_cap "${CRUN[@]}" --rm "$IMG_CTR" "$(c_id exit)" sh -c 'exit 42'
    assert_eq "exit status" 42 "$RC"
}

c_missing_binary() {
    local id; id=$(c_id missing)
    on_exit c_remove "$id"
    run_cap "${CRUN[@]}" --rm "$IMG_CTR" "$id" /rxci-no-such-binary
    # ctr maps no error to 127 (exit 1 with runc as well): the runtime's message must name the binary
    [ "$RC" != 0 ] || fail "ctr run of a missing binary exited 0"
    assert_match "error names the binary" 'rxci-no-such-binary.*no such file or directory' "$ERR"
}

c_exec() {
    c_start exec
    ok "${CTR[@]}" task exec --exec-id e1 "$CID" sh -c 'echo exec-ok; grep "^NoNewPrivs:" /proc/self/status; grep "^Seccomp:" /proc/self/status'
    assert_eq "exec stdout" exec-ok "$(printf '%s\n' "$OUT" | head -n 1)"
    assert_match "exec NoNewPrivs" '^NoNewPrivs:[[:space:]]+1$' "$OUT"
    assert_match "exec Seccomp" '^Seccomp:[[:space:]]+2$' "$OUT"
    run_cap "${CTR[@]}" task exec --exec-id e2 "$CID" sh -c 'exit 7'
    assert_eq "exec exit status" 7 "$RC"
}

c_exec_tty() {
    c_start exectty
    c_tty "${CTR[@]}" task exec -t --exec-id t1 "$CID" tty
    assert_eq "ctr task exec -t: exit status" 0 "$RC"
    assert_match "exec -t gets a terminal" '^/dev/pts/[0-9]+$' "$OUT"
}

c_ps() {
    c_start ps
    ok "${CTR[@]}" task ps "$CID"
    assert_eq "ctr task ps: processes" 2 "$(printf '%s\n' "$OUT" | tail -n +2 | grep -c .)"
}

c_pause() {
    c_start pause
    ok "${CTR[@]}" task pause "$CID"
    assert_eq "task status after pause" PAUSED "$(c_task_status "$CID")"
    assert_eq "freezer.state" FROZEN "$(cat "/sys/fs/cgroup/freezer/$CTR_NS/$CID/freezer.state")"
    ok "${CTR[@]}" task resume "$CID"
    assert_eq "task status after resume" RUNNING "$(c_task_status "$CID")"
    assert_eq "freezer.state" THAWED "$(cat "/sys/fs/cgroup/freezer/$CTR_NS/$CID/freezer.state")"
}

c_kill_rm() {
    c_start kill
    ok "${CTR[@]}" task kill -s SIGTERM "$CID"
    wait_for 10 c_task_is "$CID" STOPPED \
        || fail "task not STOPPED 10 s after SIGTERM: $(c_task_status "$CID")"
    ok "${CTR[@]}" task rm "$CID"
    ok "${CTR[@]}" container rm "$CID"
    [ ! -e "/sys/fs/cgroup/memory/$CTR_NS/$CID" ] || fail "memory cgroup /$CTR_NS/$CID left behind"
    ! "$RLOXSC" --root "/run/containerd/runc/$CTR_NS" list -q | grep -x "$CID" >/dev/null || fail "rloxsc state of $CID left behind"
}

c_kill_signal() {
    PAYLOAD=$RX_SIGNALS c_start sig
    sleep 0.3
    ok "${CTR[@]}" task kill -s SIGUSR1 "$CID"
    wait_for 5 "${CTR[@]}" task exec --exec-id "s$RANDOM" "$CID" grep -q got-usr1 /tmp/rxci-usr1 \
        || fail "SIGUSR1 did not reach the payload"
    assert_eq "task status after SIGUSR1" RUNNING "$(c_task_status "$CID")"
}

c_tty_run() {
    local id; id=$(c_id tty)
    on_exit c_remove "$id"
    c_tty "${CRUN[@]}" --rm -t "$IMG_CTR" "$id" tty
    assert_eq "ctr run -t: exit status" 0 "$RC"
    assert_match "run -t gets a terminal" '^/dev/pts/[0-9]+$' "$OUT"
}

c_read_only() {
    ok "${CRUN[@]}" --rm --read-only "$IMG_CTR" "$(c_id ro)" sh -c \
        'if touch /rxci-probe 2>/dev/null; then echo root-writable; else echo root-ro; fi; echo x > /tmp/f && cat /tmp/f'
    assert_eq "root" root-ro "$(printf '%s\n' "$OUT" | head -n 1)"
    assert_eq "/tmp writable" x "$(printf '%s\n' "$OUT" | sed -n 2p)"
}

c_tmpfs() {
    ok "${CRUN[@]}" --rm --mount type=tmpfs,src=tmpfs,dst=/rxci-scratch,options=rw:nosuid:nodev "$IMG_CTR" "$(c_id tmpfs)" sh -c \
        'echo in-scratch > /rxci-scratch/f && cat /rxci-scratch/f; grep " /rxci-scratch " /proc/self/mounts | cut -d" " -f3'
    assert_eq "tmpfs writable" in-scratch "$(printf '%s\n' "$OUT" | head -n 1)"
    assert_eq "mount type" tmpfs "$(printf '%s\n' "$OUT" | tail -n 1)"
}

c_bind_mount() {
    rx_bind_dirs "$W/cbind" >/dev/null
    ok "${CRUN[@]}" --rm --mount "type=bind,src=$W/cbind-open,dst=/data,options=rbind:rw" \
        --mount "type=bind,src=$W/cbind-root,dst=/rootowned,options=rbind:rw" "$IMG_CTR" "$(c_id bind)" sh -c "$RX_BIND_PAYLOAD"
    assert_bind_works "$W/cbind" "$OUT"
}

c_cpu() {
    c_start cpu --cpus 0.5
    assert_eq "cpu.cfs_quota_us (--cpus 0.5)" 50000 "$(cat "/sys/fs/cgroup/cpu/$CTR_NS/$CID/cpu.cfs_quota_us")"
}

c_env_workdir() {
    ok "${CRUN[@]}" --rm --env RXCI_FOO=bar --cwd /tmp "$IMG_CTR" "$(c_id env)" sh -c 'echo "$RXCI_FOO"; pwd'
    assert_eq "--env" bar "$(printf '%s\n' "$OUT" | head -n 1)"
    assert_eq "--cwd" /tmp "$(printf '%s\n' "$OUT" | tail -n 1)"
}

c_workdir_absent() {
    # ctr passes --cwd as process.cwd without creating it; runc creates a missing cwd in the rootfs
    # (before the read-only remount) and runs the process there
    local id; id=$(c_id cwd)
    on_exit c_remove "$id"
    ok "${CRUN[@]}" --rm --cwd /rxci-newdir "$IMG_CTR" "$id" pwd
    assert_eq "--cwd (absent from the image)" /rxci-newdir "$OUT"
}

c_oom() {
    local id ep; id=$(c_id oom)
    on_exit c_remove "$id"
    "${CTR[@]}" events >"$W/ctr-events.$id" 2>&1 &
    ep=$!
    on_exit kill "$ep"
    sleep 0.3
    run_cap "${CRUN[@]}" --rm --memory-limit 67108864 "$IMG_CTR" "$id" sh -c 'x=a; while true; do x=$x$x; done'
    assert_eq "exit status" 137 "$RC"
    wait_for 5 grep -q "/tasks/oom {\"container_id\":\"$id\"}" "$W/ctr-events.$id" \
        || fail "no /tasks/oom event for $id: $(grep "$id" "$W/ctr-events.$id" | cut -d' ' -f6- | tr '\n' ' ' | cut -c1-400)"
}

c_leaks() {
    local i
    rx_leak_snapshot ctr | sort >"$W/leak-before.ctr"
    cat "$W/leak-before.ctr" >&2
    for i in $(seq 20); do
        ok "${CRUN[@]}" --rm "$IMG_CTR" "$(c_id "leak$i")" true
    done
    assert_no_leaks ctr "$W/leak-before.ctr"
}

# c_hostile NAME FLAGS...: the probe runs as the container's init (output to /tmp); read it with exec
# while the container runs, and its cgroup limits on the host
c_hostile() {
    local name=$1 i; shift
    CID=$(c_id "$name")
    on_exit c_remove "$CID"
    run_cap "${CRUN[@]}" -d "$@" "$IMG_CTR" "$CID" sh -c "($RX_PROBE) >/tmp/rxci-probe.out 2>&1; $RX_LONG"
    if [ "$RC" != 0 ]; then
        if rx_refused_by_rloxsc "$ERR"; then rx_note "refused by rloxsc: $(rx_last_line "$ERR")"; return 0; fi
        # containerd fell back to plain runc, which our containerd cannot find: refused loudly
        if grep -q 'failed to look up the path of "runc"\|"runc": executable file not found' <<<"$ERR"; then
            rx_note "containerd bypassed rloxsc and its fallback to plain runc failed closed: $(rx_last_line "$ERR")"
            return 0
        fi
        fail "ctr run $* failed ($RC) without rloxsc's refusal: $(rx_last_line "$ERR")"
    fi
    # containerd drops BinaryName (and runs plain runc) when it fills task options itself
    "$RLOXSC" --root "/run/containerd/runc/$CTR_NS" list -q | grep -x "$CID" >/dev/null \
        || fail "rloxsc never created $CID: containerd ran another runtime (options: $(cat "/run/containerd/io.containerd.runtime.v2.task/$CTR_NS/$CID/options.json" 2>/dev/null)); runc state: $(runc --root "/run/containerd/runc/$CTR_NS" list -q 2>/dev/null | tr '\n' ' ')"
    for i in $(seq 100); do
        run_cap "${CTR[@]}" task exec --exec-id "p$i" "$CID" cat /tmp/rxci-probe.out
        grep -q '^probe-done$' <<<"$OUT" && break
        sleep 0.2
    done
    assert_hardened "$OUT" "$CTR_NS/$CID"
}

c_hostile_network_host()       { c_hostile host --net-host; }
# ctr applies no seccomp profile unless --seccomp is given: its default is the unconfined caller
c_hostile_seccomp_unconfined() { c_hostile unconfined; }
c_hostile_all_caps() {
    local c args=()
    for c in $RX_ALL_CAPS; do args+=(--cap-add "CAP_$c"); done
    c_hostile caps "${args[@]}"
}
c_hostile_privileged()         { c_hostile priv --privileged; }
c_hostile_device_fuse()        { c_hostile fuse --device /dev/fuse; }
c_hostile_device_kmsg()        { c_hostile kmsg --device /dev/kmsg; }
c_hostile_memory_64g()         { c_hostile mem --memory-limit 68719476736; }

c_hostile_allow_new_privs()    { c_hostile nnp --allow-new-privs; }
c_hostile_no_pivot()           { c_hostile nopivot --no-pivot; }
c_hostile_join_host_pidns()    { c_hostile hostpid --with-ns "pid:/proc/$$/ns/pid"; }
c_hostile_join_host_netns()    { c_hostile hostnet --with-ns "network:/proc/$$/ns/net"; }
c_hostile_bind_root() {
    local id; id=$(c_id bindroot)
    on_exit c_remove "$id"
    run_cap "${CRUN[@]}" --rm --mount type=bind,src=/,dst=/host,options=rbind:rw "$IMG_CTR" "$id" ls /host
    assert_refused "--mount src=/,dst=/host"
}
c_hostile_bind_containerd_sock() {
    local id; id=$(c_id bindsock)
    on_exit c_remove "$id"
    run_cap "${CRUN[@]}" --rm --mount type=bind,src=/run/containerd/containerd.sock,dst=/rxci.sock,options=rbind:rw "$IMG_CTR" "$id" ls -l /rxci.sock
    assert_refused "--mount src=/run/containerd/containerd.sock"
}

c_escape_demo() {
    rx_with_listener run_cap "${CRUN[@]}" --rm "$IMG_CTR" "$(c_id demo)" /bin/escape-demo
    assert_escape_demo "$OUT"
}

c_escape_demo_careless() {
    rx_with_listener run_cap "${CRUN[@]}" --rm --net-host --privileged "$IMG_CTR" "$(c_id demo2)" /bin/escape-demo
    assert_escape_demo "$OUT"
}

# containerd parses contrib/containerd/config.toml: the CRI handler rloxsc is runc v2 exec'ing $RLOXSC
c_contrib() {
    sed "s#BinaryName = \"/usr/local/bin/rloxsc\"#BinaryName = \"$RLOXSC\"#" \
        "$RX_REPO/contrib/containerd/config.toml" >"$W/containerd-contrib.toml"
    ok containerd --config "$W/containerd-contrib.toml" config dump
    local rt opts
    rt=$(printf '%s\n' "$OUT" | sed -n '/runtimes\.rloxsc\]$/,/^ *\[/p')
    opts=$(printf '%s\n' "$OUT" | sed -n '/runtimes\.rloxsc\.options\]$/,/^ *\[/p')
    assert_match "handler rloxsc: runtime_type" 'runtime_type = "io.containerd.runc.v2"' "$rt"
    assert_match "handler rloxsc: BinaryName" "BinaryName = \"$RLOXSC\"" "$opts"
    assert_match "restrict_oom_score_adj" 'restrict_oom_score_adj = true' "$OUT"
    # contrib/kubernetes/runtimeclass.yaml names the same handler
    ok python3 -c '
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
rc = [d for d in docs if d["kind"] == "RuntimeClass"]
pods = [d for d in docs if d["kind"] == "Pod"]
assert len(rc) == 1 and rc[0]["handler"] == "rloxsc" and rc[0]["metadata"]["name"] == "rloxsc", rc
assert pods and all(p["spec"]["runtimeClassName"] == "rloxsc" for p in pods), pods
print("runtimeclass.yaml ok")' "$RX_REPO/contrib/kubernetes/runtimeclass.yaml"
}
