# shellcheck shell=bash
# tests/clients/docker.sh - Docker (20.10, from Debian) scenarios through rloxsc.
# rloxsc is registered in dockerd's daemon.json (`runtimes.rloxsc.path`) and chosen with
# `--runtime=rloxsc`. Always --pull=never (no registry here) and --network=none (no bridge here).
# Docker 20.10 gives a runtime registered by path the state root /var/run/docker/runtime-runc/moby.

DOCKER_SCENARIOS="
contrib-daemon-json d_contrib
run-stdout d_run_stdout
exit-status d_exit_status
stdin d_stdin
user d_user
missing-binary d_missing_binary
not-executable d_not_executable
exec d_exec
exec-tty d_exec_tty
exec-user-env-workdir d_exec_options
logs d_logs
top d_top
pause-unpause d_pause
stop-rm d_stop_rm
kill-signal d_kill_signal
restart d_restart
tty-run d_tty_run
update-memory-pids d_update
update-clamped d_update_clamped
cpu d_cpu
read-only d_read_only
tmpfs d_tmpfs
env-workdir d_env_workdir
cp d_cp
cp-writable-paths d_cp_writable
workdir-output-after-exit d_workdir_after_exit
layer-commit-and-copy-after-exit d_layer_commit
bind-mount d_bind_mount
named-volume d_named_volume
init d_init
merged-usr-image-as-users-run-it d_merged_usr
join-container-namespaces d_join_namespaces
oom d_oom
leaks-20-runs d_leaks
hostile-network-host d_hostile_network_host
hostile-seccomp-unconfined d_hostile_seccomp_unconfined
hostile-all-caps d_hostile_all_caps
hostile-privileged d_hostile_privileged
hostile-pids-unlimited d_hostile_pids_unlimited
hostile-device-fuse d_hostile_device_fuse
hostile-device-kmsg d_hostile_device_kmsg
hostile-memory-64g d_hostile_memory_64g
hostile-host-namespaces d_hostile_host_namespaces
hostile-ipc-host d_hostile_ipc_host
hostile-systempaths d_hostile_systempaths
hostile-bind-host-root d_hostile_bind_root
hostile-bind-docker-sock d_hostile_bind_docker_sock
escape-demo d_escape_demo
escape-demo-careless d_escape_demo_careless
"

# docker run through rloxsc (add --rm / -d / flags after it)
DRUN=("$D" run --pull=never --runtime=rloxsc)

d_name() { echo "$NAME_PREFIX-$1-$$"; }

# d_start NAME [FLAGS...]: a detached long-lived container ($PAYLOAD or RX_LONG); sets CID (full id)
d_start() {
    local n; n=$(d_name "$1"); shift
    on_exit "$D" rm -f "$n"
    ok "${DRUN[@]}" -d --network=none --name "$n" "$@" "$IMG_DOCKER" sh -c "${PAYLOAD:-$RX_LONG}"
    CID=$OUT
    [[ "$CID" =~ ^[0-9a-f]{64}$ ]] || fail "docker run -d printed no container id: $CID"
    assert_eq "State.Running" true "$("$D" inspect -f '{{.State.Running}}' "$CID")"
}

d_run_stdout() {
    ok "${DRUN[@]}" --rm --network=none "$IMG_DOCKER" sh -c 'echo hello-from-rloxsc; grep "^NoNewPrivs:" /proc/self/status'
    assert_eq "stdout" "hello-from-rloxsc" "$(printf '%s\n' "$OUT" | head -n 1)"
    # Docker itself never sets no_new_privs: 1 here shows rloxsc ran the container
    assert_match "NoNewPrivs (rloxsc forces it)" '^NoNewPrivs:[[:space:]]+1$' "$OUT"
}

d_exit_status() {
    run_cap "${DRUN[@]}" --rm --network=none "$IMG_DOCKER" sh -c 'exit 42'
    assert_eq "exit status" 42 "$RC"
}

d_missing_binary() {
    run_cap "${DRUN[@]}" --rm --network=none "$IMG_DOCKER" /rxci-no-such-binary
    assert_eq "exit status" 127 "$RC"
    assert_match "error names the binary" 'rxci-no-such-binary' "$ERR"
}

d_not_executable() {
    run_cap "${DRUN[@]}" --rm --network=none "$IMG_DOCKER" /etc/passwd
    assert_eq "exit status" 126 "$RC"
    assert_match "error names the file" '/etc/passwd.*permission denied' "$ERR"
}

d_stdin() {
    printf 'line-one\nline-two\n' >"$W/stdin.txt"
    RX_STDIN="$W/stdin.txt" ok "${DRUN[@]}" --rm -i --network=none "$IMG_DOCKER" sh -c 'wc -l'
    assert_eq "lines read from stdin (EOF reached)" 2 "$(echo $OUT)"
}

d_user() {
    ok "${DRUN[@]}" --rm --network=none --user 1000:1000 "$IMG_DOCKER" sh -c 'id -u; id -g; grep "^CapEff:" /proc/self/status'
    assert_eq "uid" 1000 "$(printf '%s\n' "$OUT" | sed -n 1p)"
    assert_eq "gid" 1000 "$(printf '%s\n' "$OUT" | sed -n 2p)"
    assert_match "no effective capabilities as uid 1000" '^CapEff:[[:space:]]+0+$' "$OUT"
}

d_exec_options() {
    d_start execopt
    ok "$D" exec -u 1000:1000 -w /tmp -e RXCI_X=y "$CID" sh -c 'id -u; pwd; echo "$RXCI_X"'
    assert_eq "exec -u" 1000 "$(printf '%s\n' "$OUT" | sed -n 1p)"
    assert_eq "exec -w" /tmp "$(printf '%s\n' "$OUT" | sed -n 2p)"
    assert_eq "exec -e" y "$(printf '%s\n' "$OUT" | sed -n 3p)"
}

d_logs() {
    PAYLOAD="echo to-the-log; $RX_LONG" d_start logs
    wait_for 5 bash -c '"$1" logs "$2" 2>&1 | grep -q to-the-log' _ "$D" "$CID" || fail "docker logs: $("$D" logs "$CID" 2>&1 | head -c 300)"
}

d_exec() {
    d_start exec
    ok "$D" exec "$CID" sh -c 'echo exec-ok; grep "^NoNewPrivs:" /proc/self/status; grep "^Seccomp:" /proc/self/status'
    assert_eq "exec stdout" exec-ok "$(printf '%s\n' "$OUT" | head -n 1)"
    assert_match "exec NoNewPrivs" '^NoNewPrivs:[[:space:]]+1$' "$OUT"
    assert_match "exec Seccomp" '^Seccomp:[[:space:]]+2$' "$OUT"
    run_cap "$D" exec "$CID" sh -c 'exit 7'
    assert_eq "exec exit status" 7 "$RC"
    # Docker 20.10 answers a failed exec with 126 whatever the cause (with runc too)
    run_cap "$D" exec "$CID" /rxci-no-such-binary
    assert_eq "exec of a missing binary: exit status" 126 "$RC"
    assert_match "exec error names the binary" 'rxci-no-such-binary.*no such file or directory' "$OUT$ERR"
}

d_exec_tty() {
    d_start exectty
    ok "$D" exec -t "$CID" tty
    assert_match "exec -t gets a terminal" '^/dev/pts/[0-9]+$' "$OUT"
}

d_top() {
    d_start top
    ok "$D" top "$CID"
    assert_match "docker top lists the payload" 'sleep 1000' "$OUT"
}

d_pause() {
    d_start pause
    ok "$D" pause "$CID"
    assert_eq "State.Status after pause" paused "$("$D" inspect -f '{{.State.Status}}' "$CID")"
    assert_eq "freezer.state" FROZEN "$(cat "/sys/fs/cgroup/freezer/docker/$CID/freezer.state")"
    ok "$D" unpause "$CID"
    assert_eq "State.Status after unpause" running "$("$D" inspect -f '{{.State.Status}}' "$CID")"
    assert_eq "freezer.state" THAWED "$(cat "/sys/fs/cgroup/freezer/docker/$CID/freezer.state")"
    ok "$D" exec "$CID" echo alive
}

d_stop_rm() {
    d_start stop
    local t0=$SECONDS
    ok "$D" stop -t 20 "$CID"
    [ $((SECONDS - t0)) -lt 10 ] || fail "docker stop took $((SECONDS - t0)) s: SIGTERM did not reach the payload"
    assert_eq "exit code after stop (TERM trapped)" 0 "$("$D" inspect -f '{{.State.ExitCode}}' "$CID")"
    ok "$D" rm "$CID"
    run_cap "$D" inspect "$CID"
    [ "$RC" != 0 ] || fail "container still exists after docker rm"
    [ ! -e "/sys/fs/cgroup/memory/docker/$CID" ] || fail "memory cgroup /docker/$CID left behind"
    ! "$RLOXSC" --root /var/run/docker/runtime-runc/moby list -q | grep -x "$CID" >/dev/null || fail "rloxsc state of $CID left behind"
}

d_kill_signal() {
    PAYLOAD=$RX_SIGNALS d_start sig
    sleep 0.3
    ok "$D" kill -s USR1 "$CID"
    wait_for 5 "$D" exec "$CID" grep -q got-usr1 /tmp/rxci-usr1 || fail "SIGUSR1 did not reach the payload"
    assert_eq "State.Running after SIGUSR1" true "$("$D" inspect -f '{{.State.Running}}' "$CID")"
}

d_restart() {
    d_start restart
    local pid1 pid2
    pid1=$("$D" inspect -f '{{.State.Pid}}' "$CID")
    ok "$D" restart -t 10 "$CID"
    pid2=$("$D" inspect -f '{{.State.Pid}}' "$CID")
    assert_eq "State.Running after restart" true "$("$D" inspect -f '{{.State.Running}}' "$CID")"
    [ "$pid1" != "$pid2" ] || fail "docker restart kept pid $pid1"
    ok "$D" exec "$CID" sh -c 'grep "^NoNewPrivs:" /proc/1/status'
    assert_match "restarted init still hardened" '^NoNewPrivs:[[:space:]]+1$' "$OUT"
}

d_tty_run() {
    ok "${DRUN[@]}" --rm -t --network=none "$IMG_DOCKER" tty
    assert_match "run -t gets a terminal" '^/dev/pts/[0-9]+$' "$OUT"
}

d_update() {
    d_start update
    # Docker 20.10 refuses `--memory` alone on a container started without a limit ("Memory limit
    # should be smaller than already set memoryswap limit"), with runc too: give --memory-swap as well.
    ok "$D" update --memory 64m --memory-swap 64m --pids-limit 50 "$CID"
    assert_eq "memory.limit_in_bytes" 67108864 "$(cat "/sys/fs/cgroup/memory/docker/$CID/memory.limit_in_bytes")"
    assert_eq "pids.max" 50 "$(cat "/sys/fs/cgroup/pids/docker/$CID/pids.max")"
    ok "$D" exec "$CID" cat /sys/fs/cgroup/pids/pids.max
    assert_eq "pids.max seen inside" 50 "$OUT"
}

d_update_clamped() {
    d_start updclamp
    ok "$D" update --pids-limit -1 "$CID"
    assert_le "pids.max after --pids-limit -1" "$RX_PIDS_CEILING" "$(cat "/sys/fs/cgroup/pids/docker/$CID/pids.max")"
    ok "$D" update --memory 64g --memory-swap 64g "$CID"
    assert_le "memory.limit_in_bytes after --memory 64g" "$RX_MEMORY_CEILING" "$(cat "/sys/fs/cgroup/memory/docker/$CID/memory.limit_in_bytes")"
}

d_cpu() {
    d_start cpu --cpus 0.5
    assert_eq "cpu.cfs_quota_us (--cpus 0.5)" 50000 "$(cat "/sys/fs/cgroup/cpu/docker/$CID/cpu.cfs_quota_us")"
    ok "$D" update --cpus 1 "$CID"
    assert_eq "cpu.cfs_quota_us after update --cpus 1" 100000 "$(cat "/sys/fs/cgroup/cpu/docker/$CID/cpu.cfs_quota_us")"
}

d_read_only() {
    ok "${DRUN[@]}" --rm --network=none --read-only "$IMG_DOCKER" sh -c \
        'if touch /rxci-probe 2>/dev/null; then echo root-writable; else echo root-ro; fi; echo x > /tmp/f && cat /tmp/f'
    assert_eq "root" root-ro "$(printf '%s\n' "$OUT" | head -n 1)"
    assert_eq "/tmp writable" x "$(printf '%s\n' "$OUT" | sed -n 2p)"
}

d_tmpfs() {
    ok "${DRUN[@]}" --rm --network=none --tmpfs /run "$IMG_DOCKER" sh -c \
        'echo in-run > /run/f && cat /run/f; grep " /run " /proc/self/mounts | cut -d" " -f3'
    assert_eq "/run writable" in-run "$(printf '%s\n' "$OUT" | head -n 1)"
    assert_eq "/run is a tmpfs" tmpfs "$(printf '%s\n' "$OUT" | tail -n 1)"
}

d_env_workdir() {
    ok "${DRUN[@]}" --rm --network=none -e RXCI_FOO=bar -w /tmp "$IMG_DOCKER" sh -c 'echo "$RXCI_FOO"; pwd'
    assert_eq "-e" bar "$(printf '%s\n' "$OUT" | head -n 1)"
    assert_eq "-w" /tmp "$(printf '%s\n' "$OUT" | tail -n 1)"
    # a workdir absent from the image: Docker creates it before calling the runtime
    ok "${DRUN[@]}" --rm --network=none -w /rxci-newdir "$IMG_DOCKER" pwd
    assert_eq "-w (new dir)" /rxci-newdir "$OUT"
}

d_cp() {
    d_start cp
    echo "rxci-data-$$" >"$W/cp-in.txt"
    # into the container: the daemon writes the container's upper layer (the root is read-only inside)
    ok "$D" cp "$W/cp-in.txt" "$CID:/etc/rxci-in.txt"
    ok "$D" exec "$CID" cat /etc/rxci-in.txt
    assert_eq "file copied in, seen inside" "rxci-data-$$" "$OUT"
    # out of the container
    ok "$D" cp "$CID:/etc/rxci-in.txt" "$W/cp-out.txt"
    assert_eq "file copied out" "rxci-data-$$" "$(cat "$W/cp-out.txt")"
    ok "$D" cp "$CID:/etc/passwd" "$W/cp-passwd"
    assert_match "image file copied out" '^root:' "$(cat "$W/cp-passwd")"
}

# what code-eval harnesses do (llm-sandbox, docker-py's put_archive/get_archive): copy code into the
# workdir and /tmp of a running container, run it there, copy its results out. Docker's archive API
# works on the rootfs in the daemon's mount namespace: rloxsc's writable paths are attached there too
d_cp_writable() {
    d_start cpw -w /work
    echo "print-me-$$" >"$W/cpw-in.txt"
    ok "$D" cp "$W/cpw-in.txt" "$CID:/work/in.txt"
    ok "$D" cp "$W/cpw-in.txt" "$CID:/tmp/in.txt"
    ok "$D" exec "$CID" sh -c 'mkdir -p /work/sub /tmp/plots && cat /work/in.txt > /work/sub/out.txt && cat /tmp/in.txt > /tmp/plots/p.txt && stat -c %u /work/in.txt && pwd'
    assert_eq "copied-in file owned by the container's root" 0 "$(printf '%s\n' "$OUT" | head -n 1)"
    assert_eq "workdir" /work "$(printf '%s\n' "$OUT" | tail -n 1)"
    ok "$D" cp "$CID:/work/sub/out.txt" "$W/cpw-out1.txt"
    assert_eq "workdir result copied out" "print-me-$$" "$(cat "$W/cpw-out1.txt")"
    ok "$D" cp "$CID:/tmp/plots/p.txt" "$W/cpw-out2.txt"
    assert_eq "/tmp result copied out" "print-me-$$" "$(cat "$W/cpw-out2.txt")"
    # a new directory tree copied in (put_archive of a directory; the daemon's mkdir -p)
    mkdir -p "$W/cpw-tree/pkg" && echo "x = 1" >"$W/cpw-tree/pkg/mod.py"
    ok "$D" cp "$W/cpw-tree" "$CID:/work/tree"
    ok "$D" exec "$CID" sh -c 'cat /work/tree/pkg/mod.py && echo y >> /work/tree/pkg/mod.py && rm -r /work/tree && echo removed'
    assert_eq "tree copied in, changed and removed inside" "x = 1;removed" "$(printf '%s\n' "$OUT" | tr '\n' ';' | sed 's/;$//')"
    # the system stays read-only
    run_cap "$D" exec "$CID" sh -c 'touch /usr/bin/rxci 2>&1 || echo ro'
    assert_match "/usr read-only" 'ro$' "$OUT"
}

# docker run -w /work writing its output next to itself, copied out after the container exited
d_workdir_after_exit() {
    local n; n=$(d_name wdexit)
    on_exit "$D" rm -f "$n"
    ok "${DRUN[@]}" --network=none --name "$n" -w /work "$IMG_DOCKER" sh -c 'echo result-$$ > /work/result.txt && echo t > /tmp/t.txt'
    ok "$D" cp "$n:/work/result.txt" "$W/wdexit.txt"
    assert_match "result copied out after exit" '^result-[0-9]+$' "$(cat "$W/wdexit.txt")"
    ok "$D" cp "$n:/tmp/t.txt" "$W/wdexit-tmp.txt"
    assert_eq "/tmp file copied out after exit" t "$(cat "$W/wdexit-tmp.txt")"
}

# the container's writes are in Docker's own layer as they are made, with Docker's ids: `docker diff`
# lists them while it runs, what was copied in while it ran is there after it exited, and
# `docker commit` makes an image of them that a runc container reads as its own
d_layer_commit() {
    d_start lcommit -w /work
    echo "in-$$" >"$W/lc-in.txt"
    ok "$D" cp "$W/lc-in.txt" "$CID:/work/in.txt"
    ok "$D" exec "$CID" sh -c 'echo made > /work/made.txt && touch /work/u.txt && chown 1000:1000 /work/u.txt && echo t > /tmp/t.txt'
    ok "$D" diff "$CID"
    assert_match "docker diff lists the container's write" 'A /work/made.txt' "$OUT"
    ok "$D" stop -t 1 "$CID"
    ok "$D" cp "$CID:/work/in.txt" "$W/lc-in-out.txt"
    assert_eq "copied-in file there after exit" "in-$$" "$(cat "$W/lc-in-out.txt")"
    local img="rxci-commit-$$"
    on_exit "$D" rmi -f "$img"
    ok "$D" commit "$CID" "$img"
    ok "$D" run --rm --pull=never --runtime=rxrunc --network=none "$img" sh -c 'cat /work/made.txt /work/in.txt /tmp/t.txt; stat -c "%u %g" /work/made.txt /work/u.txt /work/in.txt'
    assert_eq "committed image under runc" "made;in-$$;t;0 0;1000 1000;0 0" "$(printf '%s\n' "$OUT" | tr '\n' ';' | sed 's/;$//')"
}

d_bind_mount() {
    rx_bind_dirs "$W/dbind" >/dev/null
    ok "${DRUN[@]}" --rm --network=none -v "$W/dbind-open:/data" -v "$W/dbind-root:/rootowned" "$IMG_DOCKER" sh -c "$RX_BIND_PAYLOAD"
    assert_bind_works "$W/dbind" "$OUT"
}

d_named_volume() {
    local v="$NAME_PREFIX-vol-$$"
    on_exit "$D" volume rm -f "$v"
    ok "${DRUN[@]}" --rm --network=none -v "$v:/data" "$IMG_DOCKER" sh -c 'echo in-volume > /data/f'
    ok "${DRUN[@]}" --rm --network=none -v "$v:/data" "$IMG_DOCKER" cat /data/f
    assert_eq "volume content kept across containers" in-volume "$OUT"
}

d_init() {
    # Docker binds its docker-init (tini) into the container as pid 1
    [ -x /usr/bin/docker-init ] || skip "no /usr/bin/docker-init (Debian package tini)"
    ok "${DRUN[@]}" --rm --network=none --init "$IMG_DOCKER" sh -c 'cat /proc/1/comm; grep "^NoNewPrivs:" /proc/self/status'
    assert_eq "pid 1" docker-init "$(printf '%s\n' "$OUT" | head -n 1)"
    assert_match "still hardened" '^NoNewPrivs:[[:space:]]+1$' "$OUT"
}

# What users of Debian/Ubuntu/python images do (issue #20, each failed before the filesystem model):
# --init on a merged-/usr image (/sbin a symlink to usr/sbin: docker-init's mount target is made
# under it), the 0700 /root as HOME (read, and written: ~/.gitconfig, ~/.cache), a root-owned 0700
# host directory (tempfile.mkdtemp's) and a 0755 one as `-v DIR:/work -w /work`, the result left
# on the host.
d_merged_usr() {
    [ -x /usr/bin/docker-init ] || skip "no /usr/bin/docker-init (Debian package tini)"
    local img=rloxsc-ci-merged-usr:latest r=$W/merged-usr-rootfs
    rm -rf "$r"; cp -a "${RLOXSC_TEST_ROOTFS:-$RX_REPO/bundles/demo/rootfs}" "$r"
    mkdir -p "$r/usr/sbin"
    cp -a "$r/sbin/." "$r/usr/sbin/" 2>/dev/null; rm -rf "$r/sbin"; ln -s usr/sbin "$r/sbin"
    mkdir -p "$r/root"; chmod 0700 "$r/root"; echo image-profile >"$r/root/.profile"; chmod 0600 "$r/root/.profile"
    on_exit "$D" image rm -f "$img"
    tar --numeric-owner -C "$r" -cf - . | "$D" import -c 'ENV HOME=/root' -c 'CMD ["/bin/sh"]' - "$img" >/dev/null \
        || fail "docker import of the merged-/usr image failed"
    ok "${DRUN[@]}" --rm --network=none --init "$img" sh -c \
        'cat /proc/1/comm; cat /root/.profile; echo "[user] name = x" > "$HOME/.gitconfig" && mkdir -p ~/.cache/pip && echo home-written; grep "^NoNewPrivs:" /proc/self/status'
    assert_eq "pid 1 on a merged-/usr image" docker-init "$(printf '%s\n' "$OUT" | head -n 1)"
    assert_match "the 0700 /root is the container root's" '^image-profile$' "$OUT"
    assert_match "HOME is writable" '^home-written$' "$OUT"
    assert_match "still hardened" '^NoNewPrivs:[[:space:]]+1$' "$OUT"
    local mode wd
    for mode in 0700 0755; do
        wd=$(mktemp -d "$W/mkdtemp.XXXXXX"); chmod "$mode" "$wd"
        ok "${DRUN[@]}" --rm --network=none -v "$wd:/work" -w /work "$img" sh -c 'echo result > result.txt && pwd'
        assert_eq "the workdir of a $mode root-owned host directory" /work "$OUT"
        assert_eq "the result left in the $mode host directory" result "$(cat "$wd/result.txt" 2>/dev/null)"
        assert_eq "the result is the directory owner's on the host" 0 "$(stat -c %u "$wd/result.txt" 2>/dev/null || echo missing)"
    done
}

d_join_namespaces() {
    # --network/--pid/--ipc=container:ID: join another container's namespaces (not the host's)
    d_start joinee --ipc=shareable
    ok "${DRUN[@]}" --rm --network="container:$CID" --pid="container:$CID" --ipc="container:$CID" "$IMG_DOCKER" \
        sh -c 'cat /proc/1/cmdline | tr "\0" " "; echo; ls /sys/class/net | tr "\n" " "'
    assert_match "pid 1 is the other container's" '^sh -c trap' "$(printf '%s\n' "$OUT" | head -n 1)"
    assert_eq "interfaces" "lo" "$(printf '%s\n' "$OUT" | tail -n 1 | sed 's/ *$//')"
}

d_oom() {
    local n; n=$(d_name oom)
    on_exit "$D" rm -f "$n"
    run_cap "${DRUN[@]}" --name "$n" --network=none --memory 64m "$IMG_DOCKER" sh -c 'x=a; while true; do x=$x$x; done'
    assert_eq "exit status" 137 "$RC"
    assert_eq "OOMKilled ExitCode" "true 137" "$("$D" inspect -f '{{.State.OOMKilled}} {{.State.ExitCode}}' "$n")"
}

d_leaks() {
    local i
    rx_leak_snapshot docker | sort >"$W/leak-before.docker"
    cat "$W/leak-before.docker" >&2
    for i in $(seq 20); do
        ok "${DRUN[@]}" --rm --network=none "$IMG_DOCKER" true
    done
    assert_no_leaks docker "$W/leak-before.docker"
}

# d_hostile FLAGS...: run the probe with hostile flags: hardened anyway, or refused by rloxsc
d_hostile() {
    local net=(--network=none)
    [[ " $* " == *" --network="* ]] && net=()
    run_cap "${DRUN[@]}" --rm "${net[@]}" "$@" "$IMG_DOCKER" sh -c "$RX_PROBE"
    if [ "$RC" != 0 ]; then
        rx_refused_by_rloxsc "$ERR" || fail "docker run $* failed ($RC) without rloxsc's refusal: $(rx_last_line "$ERR")"
        rx_note "refused by rloxsc: $(rx_last_line "$ERR")"
        return 0
    fi
    assert_hardened "$OUT"
}

d_hostile_network_host()      { d_hostile --network=host; }
d_hostile_seccomp_unconfined() { d_hostile --security-opt seccomp=unconfined --security-opt apparmor=unconfined; }
d_hostile_all_caps() {
    # Docker 20.10 does not know BPF, PERFMON, CHECKPOINT_RESTORE ("unknown capability"): all the others
    local c args=()
    for c in $RX_ALL_CAPS; do
        case $c in BPF|PERFMON|CHECKPOINT_RESTORE) continue ;; esac
        args+=(--cap-add "$c")
    done
    d_hostile "${args[@]}"
}
d_hostile_privileged()        { d_hostile --privileged; }
d_hostile_pids_unlimited()    { d_hostile --pids-limit -1; }
d_hostile_device_fuse()       { d_hostile --device /dev/fuse; }
d_hostile_device_kmsg()       { d_hostile --device /dev/kmsg; }
d_hostile_memory_64g()        { d_hostile --memory 64g --memory-swap 64g; }

d_hostile_host_namespaces()   { d_hostile --pid=host --uts=host --cgroupns=host; }
# --ipc=host makes Docker bind the host's /dev/shm: hardened, or refused by rloxsc
d_hostile_ipc_host()          { d_hostile --ipc=host; }
d_hostile_systempaths()       { d_hostile --security-opt systempaths=unconfined; }
d_hostile_bind_root() {
    run_cap "${DRUN[@]}" --rm --network=none -v /:/host "$IMG_DOCKER" ls /host
    assert_refused "-v /:/host"
}
d_hostile_bind_docker_sock() {
    run_cap "${DRUN[@]}" --rm --network=none -v /var/run/docker.sock:/rxci.sock "$IMG_DOCKER" ls -l /rxci.sock
    assert_refused "-v /var/run/docker.sock:/rxci.sock"
}

d_escape_demo() {
    rx_with_listener run_cap "${DRUN[@]}" --rm --network=none "$IMG_DOCKER" /bin/escape-demo
    assert_escape_demo "$OUT"
}

# the careless caller: host network, every privilege, no seccomp, no pids limit
d_escape_demo_careless() {
    rx_with_listener run_cap "${DRUN[@]}" --rm --network=host --privileged --security-opt seccomp=unconfined \
        --pids-limit -1 "$IMG_DOCKER" /bin/escape-demo
    assert_escape_demo "$OUT"
}

# dockerd runs with contrib/docker/daemon.json (path substituted): the runtime is registered
d_contrib() {
    ok "$D" info --format '{{json .Runtimes}}'
    assert_eq "runtime rloxsc registered at" "$RLOXSC" "$(printf '%s' "$OUT" | jq -r '.rloxsc.path')"
    ok "$D" info --format '{{.CgroupDriver}}'
    assert_eq "cgroup driver" cgroupfs "$OUT"
}
