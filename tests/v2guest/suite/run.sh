#!/bin/sh
# tests/v2guest/suite/run.sh -- guest side of rloxsc's cgroup-v2 suite.
#
# Runs INSIDE the pure-cgroup-v2 QEMU guest (tests/v2guest/init.sh runs it as root, cwd = the 9p share
# that suite/prepare.sh filled: rloxsc, rootfs/, bundles/). Busybox ash; no bash needed.
# Prints one line per check, `ok NAME` or `FAIL NAME: reason`; notes start with `# `; the last line
# is exactly `N passed, M failed`. Exits 1 if any check failed.
# Every check here exercises cgroup v2 (unified hierarchy, eBPF device program, cgroup.freeze,
# memory.events, pids.events) -- see tests/v2guest/README.md.
# shellcheck disable=SC2034  # variables set here are read by check()'s eval'ed conditions

cd "$(dirname "$0")" || exit 2
SHARE=$(pwd)
W=/tmp/v2suite                 # must match GUEST_ROOTFS in prepare.sh
ROOTDIR=/run/rloxsc
LOG=$W/rloxsc.log
CG=/sys/fs/cgroup
PORT=47123
PASSED=0
FAILED=0

ok() { echo "ok $1"; PASSED=$((PASSED + 1)); }
fail() { echo "FAIL $1: $2"; FAILED=$((FAILED + 1)); }
note() { echo "# $*"; }
# check NAME REASON-IF-FAILED 'CONDITION'   (CONDITION: shell code, eval'ed)
check() { if eval "$3"; then ok "$1"; else fail "$1" "$2"; fi; }
fail_all() { _r=$1; shift; for _c in "$@"; do fail "$_c" "$_r"; done; }   # fail_all REASON NAME...
now() { cut -d' ' -f1 /proc/uptime; }
oneline() { tr '\n' ' ' | sed 's/  */ /g; s/ $//' | cut -c1-400; }

# R NAME ARGS...: rloxsc ARGS with stdout -> $W/out/NAME.out, stderr -> $W/out/NAME.err; returns its status.
R() {
  _n=$1; shift
  rloxsc --root "$ROOTDIR" --log "$LOG" --log-format json "$@" >"$W/out/$_n.out" 2>"$W/out/$_n.err" </dev/null
}
out() { cat "$W/out/$1.out" 2>/dev/null; }
err() { tail -n 3 "$W/out/$1.err" 2>/dev/null | oneline; }
json_str() { sed -n "s/.*\"$1\": *\"\([^\"]*\)\".*/\1/p" | head -n1; }   # json_str KEY < JSON
json_num() { sed -n "s/.*\"$1\": *\(-\{0,1\}[0-9][0-9]*\).*/\1/p" | head -n1; }
json_bool() { sed -n "s/.*\"$1\": *\(true\|false\).*/\1/p" | head -n1; }
status_of() { R "state-$1" state "$1" && out "state-$1" | json_str status; }
field() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$2/status"; }   # field NAME PID
cgval() { cat "$CG/rloxsc/$1/$2" 2>/dev/null | oneline; }              # cgval ID FILE
wait_status() { # wait_status ID WANT SECONDS
  _i=0
  while [ $_i -lt $(($3 * 5)) ]; do
    [ "$(status_of "$1")" = "$2" ] && return 0
    sleep 0.2; _i=$((_i + 1))
  done
  return 1
}

T0=$(now)
mkdir -p "$W/out" /usr/local/bin || exit 2
cp "$SHARE/rloxsc" /usr/local/bin/rloxsc && chmod 755 /usr/local/bin/rloxsc || exit 2
rm -rf "$W/rootfs" "$W/bundles"
cp -a "$SHARE/rootfs" "$W/rootfs" && cp -a "$SHARE/bundles" "$W/bundles" || exit 2
B=$W/bundles

note "guest: $(uname -r), $(nproc) cpus, $(awk '/MemTotal/{print $2 $3}' /proc/meminfo)"
note "rloxsc: $(rloxsc --version 2>&1 | head -n1)"

# ---- 1. the guest is pure cgroup v2 ----------------------------------------------------------------
STAT=stat; [ -x /usr/bin/stat ] && STAT=/usr/bin/stat   # GNU stat: busybox's says UNKNOWN for cgroup2fs
fstype=$($STAT -fc %T $CG)
note "stat -fc %T /sys/fs/cgroup: $fstype (fs magic 0x$($STAT -fc %t $CG))"
note "cgroup mounts: $(awk '$3 ~ /^cgroup/ {print $3 " on " $2 " (" $4 ")"}' /proc/mounts | oneline)"
note "root subtree_control: $(cat $CG/cgroup.subtree_control)"
v1=$(awk '$3 == "cgroup"' /proc/mounts)
check pure-cgroup-v2 "/sys/fs/cgroup is $fstype; v1 mounts: ${v1:-none}" \
  '[ "$fstype" = cgroup2fs ] && [ -z "$v1" ]'

# ---- 2. lifecycle + the view from outside ----------------------------------------------------------
ID=v2-life
if R create-life create --bundle "$B/life" $ID; then
  st=$(status_of $ID)
  check lifecycle-create "state says ${st:-nothing}: $(err state-$ID)" \
    '[ "$st" = created ]'
else
  fail lifecycle-create "create exited $?: $(err create-life)"
fi
PID=$(out state-$ID | json_num pid)
note "container $ID: pid ${PID:-?}, /proc/$PID/cgroup: $(cat /proc/$PID/cgroup 2>/dev/null | oneline)"

if [ -n "$PID" ] && [ -d /proc/$PID ]; then
  nnp=$(field NoNewPrivs $PID) sec=$(field Seccomp $PID) capeff=$(field CapEff $PID)
  check outside-no-new-privs "NoNewPrivs is ${nnp:-?}" \
    '[ "$nnp" = 1 ]'
  check outside-seccomp "Seccomp is ${sec:-?}" \
    '[ "$sec" = 2 ]'
  bit21=$(( (0x${capeff:-0} >> 21) & 1 ))
  check outside-no-cap-sys-admin "CapEff $capeff has bit 21 (CAP_SYS_ADMIN)" \
    '[ -n "$capeff" ] && [ "$bit21" = 0 ]'
  same=
  for ns in pid mnt ipc uts net cgroup; do
    a=$(readlink /proc/$PID/ns/$ns) b=$(readlink /proc/self/ns/$ns)
    { [ -z "$a" ] || [ "$a" = "$b" ]; } && same="$same $ns($a)"
  done
  check outside-namespaces "shared with the guest or unreadable:$same" \
    '[ -z "$same" ]'
  cgline=$(cat /proc/$PID/cgroup)
  check outside-cgroup-path "/proc/$PID/cgroup is '$cgline'" \
    '[ "$cgline" = "0::/rloxsc/$ID" ]'
  pm=$(cgval $ID pids.max) mm=$(cgval $ID memory.max) sm=$(cgval $ID memory.swap.max)
  check outside-pids-max "pids.max is '${pm}'" \
    '[ "$pm" = 512 ]'
  check outside-memory-max "memory.max is '${mm}'" \
    '[ "$mm" = 536870912 ]'
  check outside-memory-swap-max "memory.swap.max is '${sm}'" \
    '[ "$sm" = 0 ]'
else
  fail_all "no live container init (pid '${PID}')" outside-no-new-privs outside-seccomp \
    outside-no-cap-sys-admin outside-namespaces outside-cgroup-path outside-pids-max \
    outside-memory-max outside-memory-swap-max
fi

if R start-life start $ID; then
  st=$(status_of $ID)
  check lifecycle-start "state says ${st:-nothing}" \
    '[ "$st" = running ]'
else
  fail lifecycle-start "start exited $?: $(err start-life)"
fi

# ---- 3. the eBPF device program, seen by a guest process that joins the container's cgroup ---------
# The guest's devtmpfs nodes have no nodev and the joining shell is the guest's root with every
# capability: only the container's device program can refuse. rloxsc's rule set is deny-all plus
# null/zero/full/random/urandom/tty/console/ptmx/pts, so opening kmsg (c 1:11) or /dev/net/tun
# (c 10:200; on v1 rloxsc denies the `c 10:200 rwm` libcontainer adds) must fail with EPERM.
injoin() { sh -c "echo \$\$ > $CG/rloxsc/$ID/cgroup.procs && $1" 2>&1; }   # injoin 'SHELL CODE'
denied() { case "$1" in *OPENED*|*CREATED*) return 1 ;; *"ermitted"*) return 0 ;; *) return 1 ;; esac; }
if [ -d "$CG/rloxsc/$ID" ]; then
  e=$(injoin 'echo x > /dev/null && head -c 4 /dev/urandom | wc -c')
  check device-ebpf-allows-null "in the container's cgroup /dev/null or /dev/urandom failed: $e" \
    '[ "$e" = 4 ]'
  e=$(injoin 'exec 3</dev/kmsg && echo OPENED')
  check device-ebpf-denies-kmsg "a process in the container's cgroup: $e" 'denied "$e"'
  if [ -c /dev/net/tun ]; then
    e=$(injoin 'exec 3<>/dev/net/tun && echo OPENED')
    check device-ebpf-denies-tun "a process in the container's cgroup opened /dev/net/tun (c 10:200): $e" 'denied "$e"'
  else
    note "no /dev/net/tun in the guest: device-ebpf-denies-tun not run"
  fi
  # Not a check: rloxsc's v1 verification (verify::check_devices_list) accepts `m`-only rules such as
  # libcontainer's `c *:* m` / `b *:* m`, since CAP_MKNOD is never granted and rw stays denied.
  rm -f /dev/.v2-mknod
  e=$(injoin 'mknod /dev/.v2-mknod c 1 11 && echo CREATED && exec 3</dev/.v2-mknod && echo OPENED')
  rm -f /dev/.v2-mknod
  note "mknod c 1:11 by a fully privileged process in the container's cgroup: $(echo "$e" | oneline)"
else
  fail_all "no cgroup $CG/rloxsc/$ID" device-ebpf-allows-null device-ebpf-denies-kmsg device-ebpf-denies-tun
fi

# ---- 4. pause/resume (cgroup.freeze), exec, update, events --------------------------------------------
if R pause pause $ID; then
  st=$(status_of $ID); fz=$(cgval $ID cgroup.freeze)
  check pause-freezes "state ${st:-?}, cgroup.freeze '$fz'" \
    '[ "$st" = paused ] && [ "$fz" = 1 ]'
else
  fail pause-freezes "pause exited $?: $(err pause)"
fi
if R resume resume $ID; then
  st=$(status_of $ID); fz=$(cgval $ID cgroup.freeze)
  check resume-thaws "state ${st:-?}, cgroup.freeze '$fz'" \
    '[ "$st" = running ] && [ "$fz" = 0 ]'
else
  fail resume-thaws "resume exited $?: $(err resume)"
fi

if R exec exec $ID sh -c 'grep -E "^(NoNewPrivs|Seccomp|CapEff):" /proc/self/status; cat /proc/self/cgroup'; then
  x=$(out exec | oneline)
  xs=$(out exec | awk '$1 == "Seccomp:" {print $2}') xn=$(out exec | awk '$1 == "NoNewPrivs:" {print $2}')
  check exec-seccomp "exec'd process says: $x" \
    '[ "$xs" = 2 ]'
  check exec-no-new-privs "exec'd process says: $x" \
    '[ "$xn" = 1 ]'
else
  fail_all "exec exited $?: $(err exec) $(out exec | oneline)" exec-seccomp exec-no-new-privs
fi

if R update update --memory 64m --pids-limit 50 $ID; then
  mm=$(cgval $ID memory.max) pm=$(cgval $ID pids.max) sm=$(cgval $ID memory.swap.max)
  check update-limits "memory.max '$mm' pids.max '$pm'" \
    '[ "$mm" = 67108864 ] && [ "$pm" = 50 ]'
  check update-swap-stays-0 "memory.swap.max '$sm' after update --memory 64m" \
    '[ "$sm" = 0 ]'
else
  fail_all "update exited $?: $(err update)" update-limits update-swap-stays-0
fi

if R events events --stats $ID; then
  check events-stats "output: $(out events | cut -c1-200 | oneline)" \
    'out events | grep -q "\"type\":\"stats\"" && out events | grep -q "\"pids\":{\"current\":[1-9][0-9]*,\"limit\":50}"'
else
  fail events-stats "events --stats exited $?: $(err events)"
fi

# the resources JSON Docker 20.10 and containerd's CRI send on stdin (`update --resources -`): zero
# means unset (Docker sends cpu shares/quota/period 0 and blkio weight 0 with every update)
RJ() { # RJ NAME JSON ARGS...: like R, with JSON on stdin
  _n=$1; _j=$2; shift 2; printf '%s' "$_j" >"$W/$_n.json"
  rloxsc --root "$ROOTDIR" --log "$LOG" --log-format json "$@" >"$W/out/$_n.out" 2>"$W/out/$_n.err" <"$W/$_n.json"
}
if RJ update-docker '{"memory":{"limit":67108864,"swap":134217728},"cpu":{"shares":0,"quota":0,"period":0},"pids":{"limit":40},"blockIO":{"weight":0}}' update --resources - $ID; then
  mm=$(cgval $ID memory.max) pm=$(cgval $ID pids.max) sm=$(cgval $ID memory.swap.max) cm=$(cgval $ID cpu.max)
  check update-docker-json "memory.max '$mm' pids.max '$pm' memory.swap.max '$sm' cpu.max '$cm' after docker update --memory 64m --memory-swap 128m --pids-limit 40" \
    '[ "$mm" = 67108864 ] && [ "$pm" = 40 ] && [ "$sm" = 0 ] && [ "$cm" = "max 100000" ]'
else
  fail update-docker-json "update exited $?: $(err update-docker)"
fi
if RJ update-cpus '{"memory":{},"cpu":{"shares":0,"quota":50000,"period":100000},"blockIO":{"weight":0}}' update --resources - $ID; then
  cm=$(cgval $ID cpu.max) mm=$(cgval $ID memory.max)
  check update-docker-cpus "cpu.max '$cm' memory.max '$mm' after docker update --cpus 0.5" \
    '[ "$cm" = "50000 100000" ] && [ "$mm" = 67108864 ]'
else
  fail update-docker-cpus "update exited $?: $(err update-cpus)"
fi
if RJ update-cri '{"devices":[{"allow":false,"access":"rwm"}],"memory":{"limit":134217728,"swap":134217728},"cpu":{"shares":2,"quota":0,"period":100000,"cpus":"","mems":""},"hugepageLimits":[]}' update --resources - $ID; then
  mm=$(cgval $ID memory.max) cm=$(cgval $ID cpu.max) cw=$(cgval $ID cpu.weight) pm=$(cgval $ID pids.max)
  check update-cri-json "memory.max '$mm' cpu.max '$cm' cpu.weight '$cw' pids.max '$pm' after a CRI UpdateContainerResources" \
    '[ "$mm" = 134217728 ] && [ "$cm" = "50000 100000" ] && [ "$cw" = 1 ] && [ "$pm" = 40 ]'
else
  fail update-cri-json "update exited $?: $(err update-cri)"
fi

# ---- 5. kill + delete ----------------------------------------------------------------------------------
if R kill kill $ID TERM; then
  check lifecycle-kill "state did not become stopped within 20 s: $(status_of $ID)" \
    'wait_status $ID stopped 20'
else
  fail lifecycle-kill "kill exited $?: $(err kill)"
fi
if R delete delete $ID; then
  R state-after state $ID; rc=$?
  check lifecycle-delete "after delete: state exit $rc, cgroup dir $( [ -d $CG/rloxsc/$ID ] && echo present || echo gone), pid $PID $( [ -d /proc/$PID ] && echo alive || echo gone)" \
    '[ $rc != 0 ] && [ ! -d "$CG/rloxsc/$ID" ] && [ ! -d "/proc/$PID" ]'
else
  fail lifecycle-delete "delete exited $?: $(err delete)"
  R force delete --force $ID
fi

# ---- 6. the careless spec is hardened anyway ---------------------------------------------------------
R probe run --bundle "$B/probe" v2-probe; rc=$?
last=$(out probe | tail -n1)
check careless-seccomp-probe "exit $rc, last line '$last'; allowed: $(out probe | grep ALLOWED | oneline) $(err probe)" \
  'case "$last" in *" 0 allowed") true ;; *) false ;; esac'

nc -l -p $PORT >/dev/null 2>&1 </dev/null &
ncpid=$!
sleep 0.3
if kill -0 $ncpid 2>/dev/null; then note "listener on 127.0.0.1:$PORT (busybox nc, pid $ncpid)"; else note "no listener on $PORT: an ECONNREFUSED counts as contained too"; fi
R escape run --bundle "$B/escape" v2-escape; rc=$?
summary=$(out escape | grep '^summary:' | tail -n1)
check careless-escape-demo "exit $rc, '${summary:-no summary}'; $(out escape | grep ESCAPED | oneline) $(err escape)" \
  '[ "$summary" = "summary: 6 contained, 0 escaped" ]'
kill $ncpid 2>/dev/null; wait $ncpid 2>/dev/null

# ---- 7. devices from inside -----------------------------------------------------------------------------
R devices run --bundle "$B/devices" v2-devices; rc=$?
d=$(out devices)
note "devices container (exit $rc): $(echo "$d" | oneline) $(err devices)"
check device-null-works "$(echo "$d" | grep '^null:' | oneline)" \
  'echo "$d" | grep -qx "null: ok"'
check device-kmsg-unusable "$(echo "$d" | grep '^kmsg:' | oneline)" \
  'echo "$d" | grep -Eq "^kmsg: (absent|denied: .*ermitted)"'
check device-mknod-fails "$(echo "$d" | grep '^mknod' | oneline)" \
  'echo "$d" | grep -q "^mknod /tmp/m: denied" && echo "$d" | grep -q "^mknod /dev/m: denied"'

# ---- 8. OOM (memory.max, memory.events) ----------------------------------------------------------------
R oom run --record "$W/oom.json" --timeout 120s --bundle "$B/oom" v2-oom; rc=$?
rec=$(cat "$W/oom.json" 2>/dev/null | oneline)
note "oom record: $rec"
check oom-exit-137 "exit $rc: $(err oom)" \
  '[ $rc = 137 ]'
check oom-record-status "record: ${rec:-none}" \
  '[ "$(echo "$rec" | json_str status)" = oom_killed ] && [ "$(echo "$rec" | json_bool oom_killed)" = true ]'
check oom-kill-counted "record oom_kills: $(echo "$rec" | json_num oom_kills)" \
  '[ "$(echo "$rec" | json_num oom_kills)" -ge 1 ] 2>/dev/null'
# (from the whole record: the one-line note is cut at 400 characters, before `cgroup`)
full=$(tr '\n' ' ' < "$W/oom.json" 2>/dev/null)
check oom-record-says-v2 "record cgroup: $(echo "$full" | json_str cgroup)" \
  '[ "$(echo "$full" | json_str cgroup)" = v2 ]'

# ---- 9. pids (pids.max, pids.events) --------------------------------------------------------------------
R pids run --record "$W/pids.json" --timeout 120s --bundle "$B/pids" v2-pids; rc=$?
rec=$(cat "$W/pids.json" 2>/dev/null | oneline)
note "pids record (exit $rc): $rec"
check pids-limit-hit "record: ${rec:-none} $(err pids)" \
  '[ "$(echo "$rec" | json_str status)" = pids_limit_hit ] && [ "$(echo "$rec" | json_bool pids_limit_hit)" = true ]'

# ---- 9b. network.mode = "inbound-only": the egress filter on this kernel -------------------------------
R egress run --bundle "$B/egress" v2-egress; rc=$?
check egress-filter "exit $rc: $(out egress | oneline) $(err egress)" \
  '[ $rc = 0 ] && out egress | grep -q rxd0 && out egress | grep -q "Connection refused"'

# ---- 10. nothing left --------------------------------------------------------------------------------
left=$(find $CG/rloxsc -mindepth 1 -maxdepth 1 -type d 2>/dev/null | oneline)
check no-cgroups-left "left under $CG/rloxsc: $left" \
  '[ -z "$left" ]'
R list list -q; rc=$?
l=$(out list | oneline)
check list-empty "list -q exited $rc, printed '$l' $(err list)" \
  '[ $rc = 0 ] && [ -z "$l" ]'

# ---- 11. rloxsc's sealed re-exec worked in the guest (read-only bind mount under /run/rloxsc-sealed) ----
sealed=$(awk '$5 ~ "^/run/rloxsc-sealed/" {print $5 " " $6}' /proc/self/mountinfo | oneline)
fallbacks=$(grep -c 'trying an overlay\|memfd' "$LOG" 2>/dev/null)
note "sealed re-exec: mounts: ${sealed:-none}; overlay/memfd fallbacks in the log: ${fallbacks:-0}"
check sealed-reexec "mounts under /run/rloxsc-sealed: ${sealed:-none}; fallbacks logged: ${fallbacks:-0}" \
  'echo "$sealed" | grep -Eq "^/run/rloxsc-sealed/rloxsc-[^ ]* ro(,|$)" && [ "${fallbacks:-0}" = 0 ]'
warns=$(grep -E '"level":"(WARN|ERROR|warn|error)"' "$LOG" 2>/dev/null | grep -v 'does not exist' | tail -n 3 | oneline)
[ -n "$warns" ] && note "last warnings/errors in the rloxsc log: $warns"
cp "$LOG" "$SHARE/rloxsc.log" 2>/dev/null
note "suite wall time in the guest: $(awk -v a="$T0" -v b="$(now)" 'BEGIN{printf "%.1f", b - a}') s"
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
