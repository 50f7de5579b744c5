# shellcheck shell=bash
# tests/clients/podman.sh - Podman (4.3 + conmon 2.1, from Debian) scenarios through rloxsc.
# CONTAINERS_CONF is contrib/podman/containers.conf (cgroupfs, file events, capped ulimits, rloxsc in
# runtime_supports_json so it gets --log/--log-format=json); the runtime is given by path
# (`--runtime $RLOXSC`). Podman calls rloxsc without --root: its state is under /run/rloxsc.
# Cgroups: /libpod_parent/libpod-<id>.

PODMAN_SCENARIOS="
contrib-containers-conf p_contrib
run-stdout p_run_stdout
exit-status p_exit_status
stdin p_stdin
user p_user
missing-binary p_missing_binary
not-executable p_not_executable
exec p_exec
exec-tty p_exec_tty
exec-user-env-workdir p_exec_options
logs p_logs
top p_top
pause-unpause p_pause
stop-rm p_stop_rm
kill-signal p_kill_signal
restart p_restart
tty-run p_tty_run
update-memory p_update
update-clamped p_update_clamped
cpu p_cpu
pids-limit p_pids_limit
read-only p_read_only
tmpfs p_tmpfs
env-workdir p_env_workdir
cp p_cp
cp-workdir p_cp_workdir
bind-mount p_bind_mount
named-volume p_named_volume
join-container-namespaces p_join_namespaces
oom p_oom
judge-limits-annotations p_judge_limits
leaks-20-runs p_leaks
hostile-network-host p_hostile_network_host
hostile-seccomp-unconfined p_hostile_seccomp_unconfined
hostile-all-caps p_hostile_all_caps
hostile-privileged p_hostile_privileged
hostile-pids-unlimited p_hostile_pids_unlimited
hostile-device-fuse p_hostile_device_fuse
hostile-device-kmsg p_hostile_device_kmsg
hostile-memory-64g p_hostile_memory_64g
hostile-host-namespaces p_hostile_host_namespaces
hostile-ipc-host p_hostile_ipc_host
hostile-unmask-all p_hostile_unmask
hostile-bind-host-root p_hostile_bind_root
hostile-bind-rloxsc-state p_hostile_bind_state
escape-demo p_escape_demo
escape-demo-careless p_escape_demo_careless
rootless-refused p_rootless
"

PRUN=(podman run --pull=never --runtime "$RLOXSC")
p_cg() { echo "libpod_parent/libpod-$1"; }

# p_start NAME [FLAGS...]: a detached long-lived container; sets CID; removed at exit
p_start() {
    local n="$NAME_PREFIX-$1-$$"; shift
    on_exit podman rm -f -t 0 "$n"
    ok "${PRUN[@]}" -d --network=none --name "$n" "$@" "$IMG_PODMAN" sh -c "${PAYLOAD:-$RX_LONG}"
    CID=$(printf '%s\n' "$OUT" | tail -n 1)
    [[ "$CID" =~ ^[0-9a-f]{64}$ ]] || fail "podman run -d printed no container id: $OUT"
    assert_eq "State.Running" true "$(podman inspect -f '{{.State.Running}}' "$CID")"
}

p_run_stdout() {
    ok "${PRUN[@]}" --rm --network=none "$IMG_PODMAN" sh -c 'echo hello-from-rloxsc; grep "^NoNewPrivs:" /proc/self/status'
    assert_eq "stdout" "hello-from-rloxsc" "$(printf '%s\n' "$OUT" | head -n 1)"
    assert_match "NoNewPrivs (rloxsc forces it)" '^NoNewPrivs:[[:space:]]+1$' "$OUT"
}

p_exit_status() {
    run_cap "${PRUN[@]}" --rm --network=none "$IMG_PODMAN" sh -c 'exit 42'
    assert_eq "exit status" 42 "$RC"
}

p_missing_binary() {
    run_cap "${PRUN[@]}" --rm --network=none "$IMG_PODMAN" /rxci-no-such-binary
    assert_eq "exit status" 127 "$RC"
    assert_match "error names the binary" 'rxci-no-such-binary' "$ERR"
}

p_not_executable() {
    run_cap "${PRUN[@]}" --rm --network=none "$IMG_PODMAN" /etc/passwd
    assert_eq "exit status" 126 "$RC"
    assert_match "error names the file" '/etc/passwd.*permission denied' "$ERR"
}

p_stdin() {
    printf 'line-one\nline-two\n' >"$W/pstdin.txt"
    RX_STDIN="$W/pstdin.txt" ok "${PRUN[@]}" --rm -i --network=none "$IMG_PODMAN" sh -c 'wc -l'
    assert_eq "lines read from stdin (EOF reached)" 2 "$(echo $OUT)"
}

p_user() {
    ok "${PRUN[@]}" --rm --network=none --user 1000:1000 "$IMG_PODMAN" sh -c 'id -u; id -g; grep "^CapEff:" /proc/self/status'
    assert_eq "uid" 1000 "$(printf '%s\n' "$OUT" | sed -n 1p)"
    assert_eq "gid" 1000 "$(printf '%s\n' "$OUT" | sed -n 2p)"
    assert_match "no effective capabilities as uid 1000" '^CapEff:[[:space:]]+0+$' "$OUT"
}

p_exec_options() {
    p_start execopt
    ok podman exec -u 1000:1000 -w /tmp -e RXCI_X=y "$CID" sh -c 'id -u; pwd; echo "$RXCI_X"'
    assert_eq "exec -u" 1000 "$(printf '%s\n' "$OUT" | sed -n 1p)"
    assert_eq "exec -w" /tmp "$(printf '%s\n' "$OUT" | sed -n 2p)"
    assert_eq "exec -e" y "$(printf '%s\n' "$OUT" | sed -n 3p)"
}

p_logs() {
    PAYLOAD="echo to-the-log; $RX_LONG" p_start logs
    wait_for 5 bash -c 'podman logs "$1" 2>&1 | grep -q to-the-log' _ "$CID" || fail "podman logs: $(podman logs "$CID" 2>&1 | head -c 300)"
}

p_exec() {
    p_start exec
    ok podman exec "$CID" sh -c 'echo exec-ok; grep "^NoNewPrivs:" /proc/self/status; grep "^Seccomp:" /proc/self/status'
    assert_eq "exec stdout" exec-ok "$(printf '%s\n' "$OUT" | head -n 1)"
    assert_match "exec NoNewPrivs" '^NoNewPrivs:[[:space:]]+1$' "$OUT"
    assert_match "exec Seccomp" '^Seccomp:[[:space:]]+2$' "$OUT"
    run_cap podman exec "$CID" sh -c 'exit 7'
    assert_eq "exec exit status" 7 "$RC"
    run_cap podman exec "$CID" /rxci-no-such-binary
    assert_eq "exec of a missing binary: exit status" 127 "$RC"
}

p_exec_tty() {
    p_start exectty
    ok podman exec -t "$CID" tty
    assert_match "exec -t gets a terminal" '^/dev/pts/[0-9]+$' "$OUT"
}

p_top() {
    p_start top
    ok podman top "$CID"
    assert_match "podman top lists the payload" 'sleep 1000' "$OUT"
}

p_pause() {
    p_start pause
    ok podman pause "$CID"
    assert_eq "State.Status after pause" paused "$(podman inspect -f '{{.State.Status}}' "$CID")"
    assert_eq "freezer.state" FROZEN "$(cat "/sys/fs/cgroup/freezer/$(p_cg "$CID")/freezer.state")"
    ok podman unpause "$CID"
    assert_eq "State.Status after unpause" running "$(podman inspect -f '{{.State.Status}}' "$CID")"
    assert_eq "freezer.state" THAWED "$(cat "/sys/fs/cgroup/freezer/$(p_cg "$CID")/freezer.state")"
    ok podman exec "$CID" echo alive
}

p_stop_rm() {
    p_start stop
    local t0=$SECONDS
    ok podman stop -t 20 "$CID"
    [ $((SECONDS - t0)) -lt 10 ] || fail "podman stop took $((SECONDS - t0)) s: SIGTERM did not reach the payload"
    assert_eq "exit code after stop (TERM trapped)" 0 "$(podman inspect -f '{{.State.ExitCode}}' "$CID")"
    ok podman rm "$CID"
    run_cap podman container exists "$CID"
    [ "$RC" != 0 ] || fail "container still exists after podman rm"
    [ ! -e "/sys/fs/cgroup/memory/$(p_cg "$CID")" ] || fail "memory cgroup $(p_cg "$CID") left behind"
    ! "$RLOXSC" list -q | grep -x "$CID" >/dev/null || fail "rloxsc state of $CID left behind"
}

p_kill_signal() {
    PAYLOAD=$RX_SIGNALS p_start sig
    sleep 0.3
    ok podman kill -s USR1 "$CID"
    wait_for 5 podman exec "$CID" grep -q got-usr1 /tmp/rxci-usr1 || fail "SIGUSR1 did not reach the payload"
    assert_eq "State.Running after SIGUSR1" true "$(podman inspect -f '{{.State.Running}}' "$CID")"
}

p_restart() {
    p_start restart
    local pid1 pid2
    pid1=$(podman inspect -f '{{.State.Pid}}' "$CID")
    ok podman restart -t 10 "$CID"
    pid2=$(podman inspect -f '{{.State.Pid}}' "$CID")
    assert_eq "State.Running after restart" true "$(podman inspect -f '{{.State.Running}}' "$CID")"
    [ "$pid1" != "$pid2" ] || fail "podman restart kept pid $pid1"
    ok podman exec "$CID" sh -c 'grep "^NoNewPrivs:" /proc/1/status'
    assert_match "restarted init still hardened" '^NoNewPrivs:[[:space:]]+1$' "$OUT"
}

p_tty_run() {
    ok "${PRUN[@]}" --rm -t --network=none "$IMG_PODMAN" tty
    assert_match "run -t gets a terminal" '^/dev/pts/[0-9]+$' "$OUT"
}

p_update() {
    # Podman 4.3's `update` has --memory but no --pids-limit (pids: see pids-limit)
    p_start update
    ok podman update --memory 64m "$CID"
    assert_eq "memory.limit_in_bytes" 67108864 "$(cat "/sys/fs/cgroup/memory/$(p_cg "$CID")/memory.limit_in_bytes")"
    ok podman exec "$CID" cat /sys/fs/cgroup/memory/memory.limit_in_bytes
    assert_eq "memory limit seen inside" 67108864 "$OUT"
}

p_update_clamped() {
    p_start updclamp
    ok podman update --memory 64g "$CID"
    assert_le "memory.limit_in_bytes after --memory 64g" "$RX_MEMORY_CEILING" "$(cat "/sys/fs/cgroup/memory/$(p_cg "$CID")/memory.limit_in_bytes")"
}

p_cpu() {
    p_start cpu --cpus 0.5
    assert_eq "cpu.cfs_quota_us (--cpus 0.5)" 50000 "$(cat "/sys/fs/cgroup/cpu/$(p_cg "$CID")/cpu.cfs_quota_us")"
    ok podman update --cpus 1 "$CID"
    assert_eq "cpu.cfs_quota_us after update --cpus 1" 100000 "$(cat "/sys/fs/cgroup/cpu/$(p_cg "$CID")/cpu.cfs_quota_us")"
}

p_pids_limit() {
    p_start pids --pids-limit 50
    assert_eq "pids.max" 50 "$(cat "/sys/fs/cgroup/pids/$(p_cg "$CID")/pids.max")"
}

p_read_only() {
    # podman --read-only also mounts /run, /tmp, /var/tmp as tmpfs with the option "tmpcopyup"
    ok "${PRUN[@]}" --rm --network=none --read-only "$IMG_PODMAN" sh -c \
        'if touch /rxci-probe 2>/dev/null; then echo root-writable; else echo root-ro; fi; echo x > /tmp/f && cat /tmp/f'
    assert_eq "root" root-ro "$(printf '%s\n' "$OUT" | head -n 1)"
    assert_eq "/tmp writable" x "$(printf '%s\n' "$OUT" | sed -n 2p)"
}

p_tmpfs() {
    # podman --tmpfs adds the mount option "tmpcopyup" (runc and crun copy the image's dir into it)
    ok "${PRUN[@]}" --rm --network=none --tmpfs /run "$IMG_PODMAN" sh -c \
        'echo in-run > /run/f && cat /run/f; grep " /run " /proc/self/mounts | cut -d" " -f3'
    assert_eq "/run writable" in-run "$(printf '%s\n' "$OUT" | head -n 1)"
    assert_eq "/run is a tmpfs" tmpfs "$(printf '%s\n' "$OUT" | tail -n 1)"
}

p_env_workdir() {
    # (Podman itself refuses a -w absent from the image, with any runtime)
    ok "${PRUN[@]}" --rm --network=none -e RXCI_FOO=bar -w /tmp "$IMG_PODMAN" sh -c 'echo "$RXCI_FOO"; pwd'
    assert_eq "-e" bar "$(printf '%s\n' "$OUT" | head -n 1)"
    assert_eq "-w" /tmp "$(printf '%s\n' "$OUT" | tail -n 1)"
}

p_cp() {
    # podman cp works in the container's mount namespace: the root is read-only there (as with
    # runc --read-only), /tmp is rloxsc's writable tmpfs
    p_start cp
    echo "rxci-data-$$" >"$W/pcp-in.txt"
    ok podman cp "$W/pcp-in.txt" "$CID:/tmp/rxci-in.txt"
    ok podman exec "$CID" cat /tmp/rxci-in.txt
    assert_eq "file copied in, seen inside" "rxci-data-$$" "$OUT"
    ok podman exec "$CID" sh -c 'echo made-inside > /tmp/rxci-made'
    ok podman cp "$CID:/tmp/rxci-made" "$W/pcp-made"
    assert_eq "file made inside, copied out" made-inside "$(cat "$W/pcp-made")"
    ok podman cp "$CID:/etc/passwd" "$W/pcp-passwd"
    assert_match "image file copied out" '^root:' "$(cat "$W/pcp-passwd")"
}

p_bind_mount() {
    rx_bind_dirs "$W/pbind" >/dev/null
    ok "${PRUN[@]}" --rm --network=none -v "$W/pbind-open:/data" -v "$W/pbind-root:/rootowned" "$IMG_PODMAN" sh -c "$RX_BIND_PAYLOAD"
    assert_bind_works "$W/pbind" "$OUT"
}

# code-eval's pattern in the workdir: copy code in, run it there, copy its result out
p_cp_workdir() {
    # (Podman refuses a -w absent from the image: the image's /mnt. A 0700 directory of host root's,
    # such as /root, gets no writable tmpfs under overlayfs: SECURITY.md, known limitations)
    p_start cpw -w /mnt
    echo "print-me-$$" >"$W/pcpw-in.txt"
    ok podman cp "$W/pcpw-in.txt" "$CID:/mnt/in.txt"
    ok podman exec "$CID" sh -c 'mkdir -p /mnt/sub && cat /mnt/in.txt > /mnt/sub/out.txt && pwd'
    assert_eq "workdir" /mnt "$OUT"
    ok podman cp "$CID:/mnt/sub/out.txt" "$W/pcpw-out.txt"
    assert_eq "workdir result copied out" "print-me-$$" "$(cat "$W/pcpw-out.txt")"
    run_cap podman exec "$CID" sh -c 'touch /usr/bin/rxci 2>&1 || echo ro'
    assert_match "/usr read-only" 'ro$' "$OUT"
}

p_named_volume() {
    local v="$NAME_PREFIX-vol-$$"
    on_exit podman volume rm -f "$v"
    ok "${PRUN[@]}" --rm --network=none -v "$v:/data" "$IMG_PODMAN" sh -c 'echo in-volume > /data/f'
    ok "${PRUN[@]}" --rm --network=none -v "$v:/data" "$IMG_PODMAN" cat /data/f
    assert_eq "volume content kept across containers" in-volume "$OUT"
}

p_join_namespaces() {
    p_start joinee
    ok "${PRUN[@]}" --rm --network="container:$CID" --pid="container:$CID" --ipc="container:$CID" "$IMG_PODMAN" \
        sh -c 'cat /proc/1/cmdline | tr "\0" " "; echo; ls /sys/class/net | tr "\n" " "'
    assert_match "pid 1 is the other container's" '^sh -c trap' "$(printf '%s\n' "$OUT" | head -n 1)"
    assert_eq "interfaces" "lo" "$(printf '%s\n' "$OUT" | tail -n 1 | sed 's/ *$//')"
}

# the judge limits through Podman's --annotation (tightening only): the CPU time of the whole
# container (eight busy workers, 1 s of CPU in all: killed, exit 137, long before the 20 s of
# Podman's own --timeout) and RLIMIT_FSIZE for every process, exec'd ones included
p_judge_limits() {
    local t0 n="$NAME_PREFIX-fsize-$$"
    t0=$(date +%s)
    run_cap "${PRUN[@]}" --rm --network=none --timeout 20 --annotation run.rloxsc.cpu_time=1s "$IMG_PODMAN" \
        sh -c 'for i in 1 2 3 4 5 6 7 8; do (while :; do :; done) & done; wait'
    assert_eq "exit status of a container whose CPU time ran out" 137 "$RC"
    assert_le "seconds it ran (eight workers, 1 s of CPU on $(nproc) CPUs)" 10 "$(( $(date +%s) - t0 ))"
    on_exit podman rm -f -t 0 "$n"
    ok "${PRUN[@]}" -d --name "$n" --network=none --annotation run.rloxsc.file_size=2M "$IMG_PODMAN" sleep 60
    run_cap podman exec "$n" sh -c 'dd if=/dev/zero of=/tmp/big bs=1M count=5 2>/dev/null; wc -c </tmp/big'
    assert_eq "the file an exec'd process grew past the limit" 2097152 "$(printf '%s\n' "$OUT" | tail -n 1 | tr -d ' ')"
    assert_match "the init's RLIMIT_FSIZE from outside" "Max file size +2097152 +2097152" \
        "$(cat "/proc/$(podman inspect -f '{{.State.Pid}}' "$n")/limits")"
}

# Rootless Podman (an ordinary user with subordinate ids, the runtime given by path, as a user without
# root runs it): runc runs the container there (the baseline, no limits: cgroup v1 gives the user no
# controllers); rloxsc refuses it with the cause, what the host needs and the policy keys, never the
# old "refusing the state root /run/rloxsc: the directory / ..." (issue #30), and makes nothing.
p_rootless() {
    local u=rxrootless xdg uid out
    command -v newuidmap >/dev/null || rx_install_packages uidmap || fail "apt-get install uidmap failed"
    id "$u" >/dev/null 2>&1 || ok useradd -m -s /bin/bash "$u"
    on_exit userdel -r -f "$u"
    # rootless Podman leaves its "podman pause" process (holding the user's namespace) behind: every
    # process of this user is one this scenario started, stopped by pid before the user goes
    on_exit p_stop_user_processes "$u"
    grep -q "^$u:" /etc/subuid || ok usermod --add-subuids 200000-265535 --add-subgids 200000-265535 "$u"
    uid=$(id -u "$u")
    xdg=$(mktemp -d /tmp/rloxsc-rootless-xdg.XXXXXX)
    on_exit rm -rf "$xdg"
    chown "$u" "$xdg"
    chmod 0700 "$xdg"
    install -m 0644 "$W/rootfs.tar" "$xdg.tar"
    on_exit rm -f "$xdg.tar"
    ok su - "$u" -c "XDG_RUNTIME_DIR=$xdg podman import --change 'CMD [\"/bin/sh\"]' $xdg.tar localhost/rxrootless:1"
    ok su - "$u" -c "XDG_RUNTIME_DIR=$xdg podman --runtime /usr/sbin/runc run --rm --network=none localhost/rxrootless:1 cat /proc/self/uid_map"
    assert_match "runc's rootless container: root is the user" "^ *0 +$uid +1\b" "$OUT"
    rx_leak_snapshot podman | sort >"$W/leak-before.rootless"
    run_cap su - "$u" -c "XDG_RUNTIME_DIR=$xdg podman --runtime $RLOXSC run --rm --network=none localhost/rxrootless:1 true"
    [ "$RC" != 0 ] || fail "rootless Podman ran a container under rloxsc (exit 0)"
    out="$ERR$OUT"
    assert_match "the refusal names the cause" "without the host's root: rloxsc runs as root of a user namespace" "$out"
    assert_match "... what the host needs" "cgroup v2 with systemd's Delegate=yes" "$out"
    assert_match "... this host's cgroups" "this host's cgroups are v1" "$out"
    assert_match "... and the policy keys" "policy keys limits.pids, limits.memory" "$out"
    assert_no_match "no word of the state root" "/run/rloxsc|the directory / " "$out"
    assert_no_leaks podman "$W/leak-before.rootless"
}

# p_stop_user_processes USER: SIGKILLs each process of USER, by pid (the scenario made the user)
p_stop_user_processes() {
    local uid pid
    uid=$(id -u "$1") || return 0
    for pid in $(ps -eo pid=,uid= | awk -v u="$uid" '$2 == u {print $1}'); do
        kill -KILL "$pid" 2>/dev/null
    done
}

p_oom() {
    # Debian 12's conmon 2.1.6 writes its "oom" marker into its CURRENT DIRECTORY, while Podman 4.3.1
    # looks for it in the container's bundle dir: with any runtime, `podman run` from elsewhere reports
    # OOMKilled=false. So: create, then start from the bundle dir (conmon inherits podman's cwd).
    local n="$NAME_PREFIX-oom-$$" id b
    on_exit podman rm -f -t 0 "$n"
    ok podman create --pull=never --runtime "$RLOXSC" --name "$n" --network=none --memory 64m "$IMG_PODMAN" \
        sh -c 'x=a; while true; do x=$x$x; done'
    id=$(printf '%s\n' "$OUT" | tail -n 1)
    b=$(podman inspect -f '{{.StaticDir}}' "$id")
    [ -d "$b" ] || fail "bundle dir $b of $id not found"
    run_cap bash -c 'cd "$1" && exec podman start -a "$2"' _ "$b" "$id"
    assert_eq "exit status" 137 "$RC"
    assert_eq "OOMKilled ExitCode" "true 137" "$(podman inspect -f '{{.State.OOMKilled}} {{.State.ExitCode}}' "$id")"
}

p_leaks() {
    local i
    rx_leak_snapshot podman | sort >"$W/leak-before.podman"
    cat "$W/leak-before.podman" >&2
    for i in $(seq 20); do
        ok "${PRUN[@]}" --rm --network=none "$IMG_PODMAN" true
    done
    assert_no_leaks podman "$W/leak-before.podman"
}

p_hostile() {
    local net=(--network=none)
    [[ " $* " == *" --network="* ]] && net=()
    run_cap "${PRUN[@]}" --rm "${net[@]}" "$@" "$IMG_PODMAN" sh -c "$RX_PROBE"
    if [ "$RC" != 0 ]; then
        rx_refused_by_rloxsc "$ERR" || fail "podman run $* failed ($RC) without rloxsc's refusal: $(rx_last_line "$ERR")"
        rx_note "refused by rloxsc: $(rx_last_line "$ERR")"
        return 0
    fi
    assert_hardened "$OUT"
}

p_hostile_network_host()       { p_hostile --network=host; }
p_hostile_seccomp_unconfined() { p_hostile --security-opt seccomp=unconfined --security-opt apparmor=unconfined; }
p_hostile_all_caps() {
    local c args=()
    for c in $RX_ALL_CAPS; do args+=(--cap-add "$c"); done
    p_hostile "${args[@]}"
}
p_hostile_privileged()         { p_hostile --privileged; }
p_hostile_pids_unlimited()     { p_hostile --pids-limit -1; }
p_hostile_device_fuse()        { p_hostile --device /dev/fuse; }
p_hostile_device_kmsg()        { p_hostile --device /dev/kmsg; }
p_hostile_memory_64g()         { p_hostile --memory 64g; }

p_hostile_host_namespaces()    { p_hostile --pid=host --uts=host --cgroupns=host; }
p_hostile_ipc_host()           { p_hostile --ipc=host; }
p_hostile_unmask()             { p_hostile --security-opt unmask=ALL; }
p_hostile_bind_root() {
    run_cap "${PRUN[@]}" --rm --network=none -v /:/host "$IMG_PODMAN" ls /host
    assert_refused "-v /:/host"
}
p_hostile_bind_state() {
    # rloxsc's own state directory (Podman calls rloxsc without --root: /run/rloxsc)
    [ -d /run/rloxsc ] || skip "/run/rloxsc does not exist yet"
    run_cap "${PRUN[@]}" --rm --network=none -v /run/rloxsc:/rxci-state "$IMG_PODMAN" ls /rxci-state
    assert_refused "-v /run/rloxsc:/rxci-state"
}

p_escape_demo() {
    rx_with_listener run_cap "${PRUN[@]}" --rm --network=none "$IMG_PODMAN" /bin/escape-demo
    assert_escape_demo "$OUT"
}

p_escape_demo_careless() {
    rx_with_listener run_cap "${PRUN[@]}" --rm --network=host --privileged --security-opt seccomp=unconfined \
        --pids-limit -1 "$IMG_PODMAN" /bin/escape-demo
    assert_escape_demo "$OUT"
}

# podman runs with contrib/podman/containers.conf (path substituted)
p_contrib() {
    ok podman info --format '{{.Host.CgroupManager}} {{.Host.EventLogger}}'
    assert_eq "cgroup manager, events logger" "cgroupfs file" "$OUT"
    ok podman run --rm --pull=never --network=none --runtime rloxsc "$IMG_PODMAN" sh -c 'grep "^NoNewPrivs:" /proc/self/status'
    assert_match "--runtime rloxsc (by name, from [engine.runtimes])" '^NoNewPrivs:[[:space:]]+1$' "$OUT"
}
