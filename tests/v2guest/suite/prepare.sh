#!/bin/bash
# tests/v2guest/suite/prepare.sh SHARE_DIR RLOXSC_BIN ROOTFS_DIR CARELESS_JSON
#
# Host side of rloxsc's cgroup-v2 guest suite. Fills SHARE_DIR (the directory boot.sh shares into the
# guest over 9p at the same path) with:
#   run.sh           the guest side of the suite (a copy of suite/run.sh)
#   rloxsc           the binary under test (glibc-dynamic; its libraries are in the guest image)
#   rootfs/          a copy of the demo rootfs (busybox, /bin/escape-demo, /bin/seccomp-probe)
#   bundles/NAME/config.json   the OCI specs of the checks, whose root.path is the absolute *guest*
#                    path /tmp/v2suite/rootfs (run.sh copies rootfs/ there, onto the guest's tmpfs)
# SHARE_DIR is emptied first. Needs python3 (installs it with apt-get if missing).
set -euo pipefail
[ $# -eq 4 ] || { echo "usage: $0 SHARE_DIR RLOXSC_BIN ROOTFS_DIR CARELESS_JSON" >&2; exit 2; }
SHARE=$1 BIN=$2 ROOTFS=$3 CARELESS=$4
here=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
GUEST_ROOTFS=/tmp/v2suite/rootfs   # must match W in run.sh

for f in "$BIN" "$CARELESS"; do [ -f "$f" ] || { echo "prepare: $f missing" >&2; exit 1; }; done
for f in bin/busybox bin/escape-demo bin/seccomp-probe; do
  [ -e "$ROOTFS/$f" ] || { echo "prepare: $ROOTFS/$f missing (make bundles)" >&2; exit 1; }
done
if ! command -v python3 >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3 >&2
fi

mkdir -p "$SHARE"
find "$SHARE" -mindepth 1 -maxdepth 1 -exec rm -rf {} +
cp "$here/run.sh" "$SHARE/run.sh"; chmod 755 "$SHARE/run.sh"
cp "$BIN" "$SHARE/rloxsc"; chmod 755 "$SHARE/rloxsc"
cp -a "$ROOTFS" "$SHARE/rootfs"

# the egress check's prestart hook (runs in the guest): an interface in the container's network
# namespace, as Docker's libnetwork-setkey hook moves the bridge's veth in
cat >"$SHARE/egress-hook.sh" <<'HOOK'
#!/bin/sh
pid=$(sed -n 's/.*"pid": *\([0-9]*\).*/\1/p')
[ -n "$pid" ] || exit 3
nsenter -t "$pid" -n ip link add rxd0 type dummy || exit 4
nsenter -t "$pid" -n ip addr add 10.233.0.2/24 dev rxd0 || exit 5
exec nsenter -t "$pid" -n ip link set rxd0 up
HOOK
chmod 755 "$SHARE/egress-hook.sh"

python3 - "$SHARE/bundles" "$GUEST_ROOTFS" "$CARELESS" "$SHARE/egress-hook.sh" <<'PY'
import copy, json, os, sys
out, rootfs, careless_path, egress_hook = sys.argv[1:5]

LONG_LIVED = ["sh", "-c", 'trap "exit 0" TERM; while true; do sleep 1; done']
CAPS = ["CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"]

def base(args):
    """A spec in the shape `runc spec` writes (the same as tests/common/mod.rs base_spec)."""
    return {
        "ociVersion": "1.0.2",
        "process": {
            "terminal": False, "user": {"uid": 0, "gid": 0}, "args": args,
            "env": ["PATH=/usr/sbin:/usr/bin:/sbin:/bin"], "cwd": "/",
            "capabilities": {k: list(CAPS) for k in ("bounding", "effective", "permitted", "ambient")},
            "rlimits": [{"type": "RLIMIT_NOFILE", "hard": 1024, "soft": 1024}],
            "noNewPrivileges": True,
        },
        "root": {"path": rootfs, "readonly": True},
        "hostname": "rloxsc-v2",
        "mounts": [
            {"destination": "/proc", "type": "proc", "source": "proc"},
            {"destination": "/dev", "type": "tmpfs", "source": "tmpfs",
             "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]},
            {"destination": "/dev/pts", "type": "devpts", "source": "devpts",
             "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"]},
            {"destination": "/dev/shm", "type": "tmpfs", "source": "shm",
             "options": ["nosuid", "noexec", "nodev", "mode=1777", "size=65536k"]},
            {"destination": "/dev/mqueue", "type": "mqueue", "source": "mqueue",
             "options": ["nosuid", "noexec", "nodev"]},
            {"destination": "/sys", "type": "sysfs", "source": "sysfs",
             "options": ["nosuid", "noexec", "nodev", "ro"]},
            {"destination": "/sys/fs/cgroup", "type": "cgroup", "source": "cgroup",
             "options": ["nosuid", "noexec", "nodev", "relatime", "ro"]},
        ],
        "linux": {
            "resources": {"devices": [{"allow": False, "access": "rwm"}]},
            "namespaces": [{"type": t} for t in ("pid", "network", "ipc", "uts", "mount", "cgroup")],
            "maskedPaths": ["/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys",
                            "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats",
                            "/proc/sched_debug", "/sys/firmware", "/proc/scsi"],
            "readonlyPaths": ["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"],
        },
    }

def careless(args=None):
    """bundles/demo/config.careless.json with root.path made absolute."""
    s = json.load(open(careless_path))
    s["root"]["path"] = rootfs
    if args:
        s["process"]["args"] = args
    return s

def write(name, spec):
    os.makedirs(os.path.join(out, name), exist_ok=True)
    with open(os.path.join(out, name, "config.json"), "w") as f:
        json.dump(spec, f, indent=1)

# lifecycle, outside view, pause/resume, exec, update, events: one long-lived container
write("life", base(LONG_LIVED))
# network.mode = "inbound-only" on this kernel: an interface a hook adds, so the egress filter is
# installed, read back at create and start; the payload's connection out is refused at once by the
# filter's reset (without it the dummy interface swallows the SYN and nc times out)
egress = base(["sh", "-c", "ip -o link show rxd0; nc -w 2 10.233.0.1 80 </dev/null 2>&1; echo NC-DONE"])
egress["hooks"] = {"prestart": [{"path": egress_hook}]}
write("egress", egress)
# the careless spec, hardened anyway
write("probe", careless(["/bin/seccomp-probe"]))
write("escape", careless())
# devices: the spec asks for /dev/kmsg (c 1:11) as a node *and* in the device cgroup (allow-all rules),
# plus a writable tmpfs on /tmp so that mknod there is judged by caps/the device program, not EROFS.
DEV_SCRIPT = r'''
if echo probe > /dev/null && [ "$(head -c 3 /dev/zero | wc -c)" = 3 ]; then echo "null: ok"; else echo "null: FAILED"; fi
if [ -e /dev/kmsg ]; then
  if err=$( (exec 3</dev/kmsg) 2>&1 ); then echo "kmsg: OPENED"; else echo "kmsg: denied: $err"; fi
else
  echo "kmsg: absent"
fi
for p in /tmp/m /dev/m; do
  if err=$(mknod $p c 1 1 2>&1); then echo "mknod $p: CREATED"; else echo "mknod $p: denied: $err"; fi
done
'''
dev = base(["sh", "-c", DEV_SCRIPT])
dev["linux"]["devices"] = [{"path": "/dev/kmsg", "type": "c", "major": 1, "minor": 11,
                            "fileMode": 0o666, "uid": 0, "gid": 0}]
dev["linux"]["resources"]["devices"] = [{"allow": True, "access": "rwm"}]
dev["mounts"].append({"destination": "/tmp", "type": "tmpfs", "source": "tmpfs",
                      "options": ["nosuid", "mode=1777", "size=1024k"]})
write("devices", dev)
# OOM: a memory hog under a 32 MiB limit
oom = base(["sh", "-c", "x=a; while true; do x=$x$x; done"])
oom["linux"]["resources"]["memory"] = {"limit": 32 << 20}
write("oom", oom)
# pids: more background children than the limit of 20 allows
pids = base(["sh", "-c", "for i in $(seq 60); do sleep 3 & done; wait"])
pids["linux"]["resources"]["pids"] = {"limit": 20}
write("pids", pids)
PY
echo "prepare: suite ready in $SHARE ($(du -sh "$SHARE" | cut -f1))" >&2
