#!/usr/bin/env python3
"""Runs code snippets through rloxsc, one container each, on ONE shared read-only root filesystem,
and prints a summary of the run records. No daemon: every snippet is one `rloxsc run --record FILE
--timeout T` process.

    run-snippets.py [--rootfs DIR] [--jobs N] [--timeout 5s] [--memory 256M] [--pids 64] [SNIPPET...]

Each snippet gets a bundle directory of its own holding only config.json (root.path points at the
shared rootfs, so nothing is copied), the snippet (bind-mounted read-only at /snippet/main.py), its
stdout/stderr and its record. rloxsc gives each container its own empty /tmp (a size-limited tmpfs),
a read-only root, loopback-only networking, its seccomp allowlist and the pids/memory limits, whatever
config.json asks for. A snippet whose first line is `# expect: STATUS` is checked against the record's
status; the exit status is 1 if any check fails. A `# run: FLAGS` line gives the snippet rloxsc run
flags of its own (the judge limits: `--cpu-time 1s`, `--file-size 2M`).
"""
import argparse
import concurrent.futures
import glob
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def size(s):
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    s = s.strip().lower()
    return int(float(s[:-1]) * units[s[-1]]) if s[-1] in units else int(s)


def config(rootfs, snippet, memory, pids):
    return {
        "ociVersion": "1.0.2",
        "root": {"path": rootfs, "readonly": True},
        "process": {
            "user": {"uid": 65534, "gid": 65534},
            "args": ["python3", "-I", "/snippet/main.py"],
            "env": ["PATH=/usr/bin:/bin", "LANG=C.UTF-8", "HOME=/tmp"],
            "cwd": "/tmp",
        },
        "mounts": [{"destination": "/snippet/main.py", "type": "bind", "source": snippet,
                    "options": ["bind", "ro"]}],
        "linux": {
            "resources": {"memory": {"limit": memory}, "pids": {"limit": pids}},
            "namespaces": [{"type": t} for t in ("pid", "network", "ipc", "uts", "mount")],
        },
    }


def expected_status(path):
    with open(path) as f:
        first = f.readline()
    return first.split("expect:", 1)[1].strip() if "expect:" in first else None


def run_flags(path):
    """A snippet's `# run: FLAGS` line (within its first five): rloxsc run flags of its own, e.g. the
    judge limits `--cpu-time 1s` or `--file-size 2M`."""
    with open(path) as f:
        for line in f.readlines()[:5]:
            if line.startswith("# run:"):
                return line.split(":", 1)[1].split()
    return []


def run_one(a, work, i, snippet):
    name = os.path.splitext(os.path.basename(snippet))[0]
    bdir = os.path.join(work, f"{i:03d}-{name}")
    os.makedirs(bdir)
    src = os.path.join(bdir, "main.py")
    shutil.copyfile(snippet, src)
    os.chmod(src, 0o644)
    with open(os.path.join(bdir, "config.json"), "w") as f:
        json.dump(config(a.rootfs, src, size(a.memory), a.pids), f, indent=1)
    rec_path = os.path.join(bdir, "record.json")
    cid = f"code-eval-{os.getpid()}-{i:03d}"
    with open(os.path.join(bdir, "stdout"), "wb") as so, open(os.path.join(bdir, "stderr"), "wb") as se:
        rc = subprocess.run([a.rloxsc, "--root", a.state_root, "run", "--bundle", bdir, "--record", rec_path,
                             "--timeout", a.timeout, *run_flags(snippet), cid],
                            stdin=subprocess.DEVNULL, stdout=so, stderr=se).returncode
    try:
        with open(rec_path) as f:
            rec = json.load(f)
    except (OSError, ValueError):
        rec = {"status": f"no record (rloxsc exit {rc})"}
    rec["snippet"] = name
    rec["rloxsc_exit"] = rc
    rec["expect"] = expected_status(snippet)
    rec["dir"] = bdir
    out = open(os.path.join(bdir, "stdout"), errors="replace").read().strip().splitlines()
    err = open(os.path.join(bdir, "stderr"), errors="replace").read().strip().splitlines()
    rec["output"] = (out[-1] if out else (err[-1] if err else ""))[:60]
    rec["output_lines"] = len(out)
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("snippets", nargs="*")
    ap.add_argument("--rloxsc", default=os.path.join(REPO, "target/x86_64-unknown-linux-gnu/release/rloxsc"))
    ap.add_argument("--rootfs", default=os.path.join(REPO, "bundles/workload/rootfs"))
    ap.add_argument("--work", default="/var/tmp/rloxsc-code-eval")
    ap.add_argument("--state-root", default="/run/rloxsc-code-eval")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", default="5s")
    ap.add_argument("--memory", default="256M")
    ap.add_argument("--pids", type=int, default=64)
    ap.add_argument("--json", help="write all records to this file")
    a = ap.parse_args()
    a.rootfs = os.path.abspath(a.rootfs)
    if not os.path.exists(os.path.join(a.rootfs, "usr/bin/python3")):
        sys.exit(f"no python3 in {a.rootfs}: build it with `make workload-bundle`")
    snippets = a.snippets or sorted(glob.glob(os.path.join(HERE, "snippets", "*.py")))
    work = os.path.join(a.work, time.strftime("%Y%m%d-%H%M%S") + f"-{os.getpid()}")
    os.makedirs(work)
    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
        recs = list(ex.map(lambda x: run_one(a, work, *x), enumerate(snippets, 1)))
    wall = time.monotonic() - t0

    print(f"{'snippet':28s} {'status':15s} {'exit':>4s} {'sig':>4s} {'wall s':>7s} {'cpu s':>6s} "
          f"{'peak MiB':>8s}  {'check':5s} last output line")
    bad = 0
    for r in recs:
        ok = r["expect"] is None or r["expect"] == r.get("status")
        bad += not ok
        cpu = r.get("cpu_s") or ((r.get("user_cpu_s") or 0) + (r.get("system_cpu_s") or 0))
        peak = (r.get("peak_memory_bytes") or 0) / (1 << 20)
        print(f"{r['snippet']:28s} {r.get('status', '?'):15s} {str(r.get('exit_code', '')):>4s} "
              f"{str(r.get('signal') or ''):>4s} {r.get('wall_time_s', 0):7.2f} {cpu:6.2f} {peak:8.1f}  "
              f"{'ok' if ok else 'FAIL':5s} {r['output']}")
    counts = {}
    for r in recs:
        counts[r.get("status")] = counts.get(r.get("status"), 0) + 1
    print(f"\n{len(recs)} snippets in {wall:.1f} s ({a.jobs} at a time, timeout {a.timeout}, memory "
          f"{a.memory}, pids {a.pids}): " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
    print(f"records, stdout and stderr of each run: {work}/")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(recs, f, indent=1)
    if bad:
        print(f"{bad} snippet(s) did not end with their expected status", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
