#!/usr/bin/env python3
"""tests/clients/docker_sdk_archive.py - the SWE-bench-style pattern with the docker SDK, one JSON line per step.

    docker_sdk_archive.py --backend docker|podman --runtime NAME --image IMAGE [--url unix:///...] [--cli PATH]

What evaluation harnesses built on the docker SDK do (SWE-bench's is the model): create and start a
long-lived container (`sleep infinity`, working dir /work), put_archive a script and its input into the
working dir, exec_run the script, get_archive its results from the working dir and from /tmp, stop the
container and get_archive them again after it exited; and the CLI's `run -w /work IMAGE sh -c 'echo x
> out.txt'` followed by `cp` of out.txt after the container exited (Podman: -w /sandbox, the image's
WORKDIR, since Podman 4.3 refuses a -w directory the image lacks).

Backends: docker talks to dockerd (the runtime chosen per container: `runtime=NAME`); podman talks to
Podman's Docker-compatible API with the same SDK calls (Podman 4.3 ignores a per-container runtime
there: the service behind --url must have been started with CONTAINERS_CONF whose [engine] runtime is
NAME), and its CLI part is `podman run --runtime NAME` (CONTAINERS_CONF from the environment). Every
container is checked to have been run by NAME.

Each step prints {"name", "ok", "detail", "secs"}; a step whose prerequisite failed is reported failed
("not run: ..."). Containers carry the label rxci=codeeval and have no network (network_mode none).
Exit status 0 when the steps ran (whatever their result), 2 on a usage error.
"""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
import tarfile
import tempfile
import time
import traceback
import uuid
from pathlib import Path

LABELS = {"rxci": "codeeval"}
WORKDIR = "/work"
CLI_PODMAN_WORKDIR = "/sandbox"  # the image's WORKDIR (see cli_run_cp)
STEPS = [
    "sdk-create-start",
    "sdk-put-archive",
    "sdk-exec-run",
    "sdk-get-archive-workdir",
    "sdk-get-archive-tmp",
    "sdk-get-archive-workdir-after-exit",
    "sdk-get-archive-tmp-after-exit",
    "cli-run-workdir-cp-after-exit",
]

SCRIPT = """\
import json, pathlib, sys
total = sum(json.loads(pathlib.Path("input.json").read_text())["values"])
status = []
for path, text in (("/tmp/result-tmp.txt", f"tmp-total={total}\\n"), ("result.txt", f"total={total}\\n")):
    try:
        pathlib.Path(path).write_text(text)
        status.append(f"{path}:written")
    except OSError as e:
        status.append(f"{path}:{e.strerror}")
print("ran", total, " ".join(status))
sys.exit(0 if all(s.endswith(":written") for s in status) else 1)
"""


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def short(text, n=300):
    text = (text or "").replace("\n", "\\n")
    return text if len(text) <= n else text[: n // 2] + " ... " + text[-n // 2 :]


class Fail(Exception):
    pass


def expect(cond, msg):
    if not cond:
        raise Fail(msg)


def tar_of(files):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, content in files.items():
            data = content.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            info.mtime = int(time.time())
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def file_from_archive(chunks, want_name):
    raw = b"".join(chunks)
    with tarfile.open(fileobj=io.BytesIO(raw), mode="r") as tar:
        for m in tar.getmembers():
            if m.isfile() and Path(m.name).name == want_name:
                return tar.extractfile(m).read().decode()
    raise Fail(f"no {want_name} in the archive")


class Run:
    def __init__(self, args):
        import docker

        self.args = args
        self.client = docker.DockerClient(base_url=args.url) if args.url else docker.from_env()
        self.container = None
        self.results = {}

    def runtime_of(self, cid):
        if self.args.backend == "docker":
            self.client.containers.get(cid).reload()
            return self.client.containers.get(cid).attrs["HostConfig"].get("Runtime")
        # Podman's compat inspect does not name the OCI runtime; its libpod inspect does
        out = subprocess.run(["podman", "inspect", "--format", "{{.OCIRuntime}}", cid], capture_output=True, text=True)
        return out.stdout.strip() or f"(podman inspect: {short(out.stderr, 200)})"

    def step(self, name, fn, needs=()):
        """Run one step; needs: (result key, why it is missing) pairs that must hold first."""
        t0 = time.monotonic()
        missing = [why for key, why in needs if not self.results.get(key)]
        if missing:
            ok, detail = False, f"not run: {'; '.join(missing)}"
        else:
            try:
                detail = fn()
                ok = True
            except Fail as e:
                ok, detail = False, str(e)
            except Exception as e:  # noqa: BLE001 - the client's error is the step's result
                log(traceback.format_exc())
                ok, detail = False, f"{type(e).__name__}: {short(str(e), 400)}"
        self.results[name] = ok
        res = {"name": name, "ok": ok, "detail": detail, "secs": round(time.monotonic() - t0, 1)}
        log(f"--- {name}: {'ok' if ok else 'FAILED'} ({res['secs']}s): {detail}")
        print(json.dumps(res), flush=True)

    # -- steps ------------------------------------------------------------------------------------

    def create_start(self):
        kw = {
            "image": self.args.image,
            "command": ["sleep", "infinity"],
            "working_dir": WORKDIR,
            "detach": True,
            "network_mode": "none",
            "labels": dict(LABELS),
            "name": f"rxci-codeeval-sdk-{uuid.uuid4().hex[:8]}",
        }
        if self.args.backend == "docker":
            kw["runtime"] = self.args.runtime
        self.container = self.client.containers.create(**kw)
        self.container.start()
        self.container.reload()
        expect(self.container.status == "running", f"status {self.container.status}")
        rt = self.runtime_of(self.container.id)
        expect(rt == self.args.runtime, f"run by runtime '{rt}', not '{self.args.runtime}'")
        return f"{self.container.name} running (sleep infinity, working dir {WORKDIR}), runtime {rt}"

    def put_archive(self):
        files = {"run.py": SCRIPT, "input.json": json.dumps({"values": [1, 2, 3, 36]})}
        ok = self.container.put_archive(WORKDIR, tar_of(files))
        expect(ok, "put_archive returned False")
        r = self.container.exec_run(["cat", f"{WORKDIR}/input.json"])
        expect(r.exit_code == 0 and b"36" in r.output, f"the input is not visible inside: exit {r.exit_code}, {short(r.output.decode(errors='replace'))}")
        return f"run.py and input.json put into {WORKDIR}, visible inside"

    def exec_run(self):
        r = self.container.exec_run(["python3", "run.py"], workdir=WORKDIR, demux=True)
        out = (r.output[0] or b"").decode(errors="replace")
        err = (r.output[1] or b"").decode(errors="replace")
        self.results["wrote-tmp"] = "/tmp/result-tmp.txt:written" in out
        self.results["wrote-workdir"] = "result.txt:written" in out.replace("/tmp/result-tmp.txt:written", "")
        want = "ran 42 /tmp/result-tmp.txt:written result.txt:written\n"
        expect(r.exit_code == 0 and out == want, f"exit {r.exit_code}, stdout '{short(out)}', stderr '{short(err)}'")
        return "exec_run python3 run.py (workdir /work): exit 0, wrote /tmp/result-tmp.txt and /work/result.txt"

    def get(self, path, want_name, want, when):
        def fn():
            bits, stat = self.container.get_archive(path)
            got = file_from_archive(bits, want_name)
            expect(got == want, f"{path}: '{short(got)}', want '{short(want)}'")
            return f"get_archive {path} {when}: {stat.get('size')} bytes, content right"

        return fn

    def stop(self):
        self.container.stop(timeout=3)
        self.container.reload()
        return self.container.status

    def cli_run_cp(self):
        cli = self.args.cli or ("/usr/bin/docker" if self.args.backend == "docker" else "podman")
        name = f"rxci-codeeval-cli-{uuid.uuid4().hex[:8]}"
        # Docker creates a -w directory the image lacks; Podman 4.3 refuses one ("workdir "/work" does not
        # exist on container"), with any runtime: there the image's own WORKDIR is given
        wd = WORKDIR if self.args.backend == "docker" else CLI_PODMAN_WORKDIR
        run = [cli, "run", "--pull=never", "--network=none", "--runtime", self.args.runtime, "--label", "rxci=codeeval",
               "--name", name, "-w", wd, self.args.image, "sh", "-c", "echo x > out.txt"]
        try:
            p = subprocess.run(run, capture_output=True, text=True, timeout=120)
            expect(p.returncode == 0, f"{cli} run exited {p.returncode}: {short(p.stderr or p.stdout)}")
            rt = self.runtime_of(name)
            expect(rt == self.args.runtime, f"run by runtime '{rt}', not '{self.args.runtime}'")
            with tempfile.TemporaryDirectory() as d:
                p = subprocess.run([cli, "cp", f"{name}:{wd}/out.txt", f"{d}/out.txt"], capture_output=True, text=True, timeout=60)
                expect(p.returncode == 0, f"{cli} cp exited {p.returncode}: {short(p.stderr or p.stdout)}")
                got = Path(d, "out.txt").read_text()
                expect(got == "x\n", f"out.txt copied out: '{short(got)}'")
            return f"{Path(cli).name} run -w {wd} ... 'echo x > out.txt': exit 0; {Path(cli).name} cp after exit: 'x'"
        finally:
            subprocess.run([cli, "rm", "-f", name], capture_output=True, timeout=60)

    def main(self):
        try:
            started = [("sdk-create-start", "no container")]
            wrote_w = [("wrote-workdir", f"the script did not write {WORKDIR}/result.txt")]
            wrote_t = [("wrote-tmp", "the script did not write /tmp/result-tmp.txt")]
            stopped = [("stopped", "the container did not stop")]
            self.step("sdk-create-start", self.create_start)
            self.step("sdk-put-archive", self.put_archive, needs=started)
            self.step("sdk-exec-run", self.exec_run, needs=[("sdk-put-archive", "put_archive failed")])
            self.step("sdk-get-archive-workdir", self.get(f"{WORKDIR}/result.txt", "result.txt", "total=42\n", "while running"), needs=wrote_w)
            self.step("sdk-get-archive-tmp", self.get("/tmp/result-tmp.txt", "result-tmp.txt", "tmp-total=42\n", "while running"), needs=wrote_t)
            status = None
            if self.container is not None:
                try:
                    status = self.stop()
                except Exception as e:  # noqa: BLE001
                    log(f"stop failed: {e}")
                    status = f"stop failed: {e}"
            self.results["stopped"] = status == "exited"
            if status != "exited":
                log(f"container not exited after stop: {status}")
            self.step("sdk-get-archive-workdir-after-exit", self.get(f"{WORKDIR}/result.txt", "result.txt", "total=42\n", "after exit"),
                      needs=wrote_w + stopped)
            self.step("sdk-get-archive-tmp-after-exit", self.get("/tmp/result-tmp.txt", "result-tmp.txt", "tmp-total=42\n", "after exit"),
                      needs=wrote_t + stopped)
        finally:
            if self.container is not None:
                try:
                    self.container.remove(force=True)
                except Exception as e:  # noqa: BLE001
                    log(f"remove failed: {e}")
        self.step("cli-run-workdir-cp-after-exit", self.cli_run_cp)
        return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--backend", choices=["docker", "podman"])
    ap.add_argument("--runtime")
    ap.add_argument("--image")
    ap.add_argument("--url", help="the daemon's socket (default: DOCKER_HOST or /var/run/docker.sock)")
    ap.add_argument("--cli", help="the CLI for the run+cp step (default /usr/bin/docker or podman)")
    ap.add_argument("--list", action="store_true", help="print the step names and exit")
    args = ap.parse_args()
    if args.list:
        print("\n".join(STEPS))
        return 0
    if not (args.backend and args.runtime and args.image):
        ap.error("--backend, --runtime and --image are required")
    return Run(args).main()


if __name__ == "__main__":
    sys.exit(main())
