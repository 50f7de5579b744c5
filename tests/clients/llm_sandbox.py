#!/usr/bin/env python3
"""tests/clients/llm_sandbox.py - llm-sandbox used as its users use it, one JSON line per scenario.

    llm_sandbox.py --backend docker|podman --runtime NAME [--url unix:///...] [--only REGEX] [--jobs N] [--list]

Each scenario opens its own llm-sandbox session (SandboxSession, ArtifactSandboxSession or
InteractiveSandboxSession, llm-sandbox's default Python image, found locally), does one thing a
code-eval user does, and prints {"name", "ok", "detail", "secs"} on stdout (everything else goes to
stderr). Exit status 0 when every scenario ran (whatever its result), 2 on a usage error.

How the runtime is chosen, as llm-sandbox's users would:
  - docker: `runtime_configs={"runtime": NAME}` (the daemon's registered runtime of that name);
  - podman: Podman 4.3's REST API ignores a per-container runtime, so the service the driver talks
    to (--url) must have been started with CONTAINERS_CONF whose [engine] runtime is NAME.
Every session's container is inspected after it is opened: the scenario fails if it was not run by
NAME (HostConfig.Runtime for Docker, OCIRuntime for Podman).

Containers get the label rxci=codeeval (the test suite's cleanup removes leftovers by it). For Podman
the driver passes network_mode "none" (its default network would be a bridge with NAT); for Docker it
passes nothing (the suite's dockerd has no bridge: the default network mode gives only lo).

Scenarios named contained-* check rloxsc's containment through llm-sandbox's execute_command with the
image's own /usr/bin/python3 (so they do not depend on the session's venv): they are expected to fail
under runc.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import hashlib
import json
import logging
import re
import shlex
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path

# this file is named like the package it drives: keep its own directory off the import path
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

IMAGE_WORKDIR = "/sandbox"
VENV = "/sandbox/.sandbox-venv"
LABELS = {"rxci": "codeeval"}
# interfaces a fresh netns may hold besides lo: fallback devices of loaded tunnel modules (lib.sh)
FALLBACK_NETDEVS = {"lo", "sit0", "tunl0", "ip6tnl0", "gre0", "gretap0", "erspan0", "ip6gre0", "ip6_vti0", "ip_vti0"}
PIDS_CEILING = 4096
SCENARIO_ALARM = 120  # seconds: a scenario still running after this is reported as hung

SCENARIOS: list[tuple[str, object]] = []


def scenario(name):
    def reg(fn):
        SCENARIOS.append((name, fn))
        return fn

    return reg


class Fail(Exception):
    """A scenario's expectation did not hold (its message is the detail)."""


class Hung(BaseException):
    """SIGALRM: the scenario ran past SCENARIO_ALARM."""


def expect(cond, msg):
    if not cond:
        raise Fail(msg)


def short(text, n=300):
    text = (text or "").replace("\n", "\\n")
    return text if len(text) <= n else text[: n // 2] + " ... " + text[-n // 2 :]


def desc(r):
    return f"exit {r.exit_code}, stdout '{short(r.stdout, 200)}', stderr '{short(r.stderr, 300)}'"


def log(*a):
    print(*a, file=sys.stderr, flush=True)


class _Truncate(logging.Formatter):
    def format(self, record):
        return short(super().format(record), 600)


def verbose_logging():
    """llm-sandbox's own log (verbose=True: every command it runs, every copy), timed, to stderr."""
    h = logging.StreamHandler(sys.stderr)
    h.setFormatter(_Truncate("%(asctime)s.%(msecs)03d %(levelname)s %(message)s", "%H:%M:%S"))
    lg = logging.getLogger("llm_sandbox.core.session_base")  # BaseSession's logger
    lg.addHandler(h)  # (llm-sandbox adds no handler of its own when one is there)
    lg.setLevel(logging.DEBUG)


# ------------------------------------------------------------------------------------------------
# sessions


class Env:
    def __init__(self, args):
        self.backend = args.backend
        self.runtime = args.runtime
        self.url = args.url
        self._client = None

    def client(self):
        if self._client is None:
            if self.backend == "docker":
                import docker

                self._client = docker.DockerClient(base_url=self.url) if self.url else docker.from_env()
            else:
                from podman import PodmanClient

                self._client = PodmanClient(base_url=self.url) if self.url else PodmanClient.from_env()
        return self._client

    def runtime_configs(self, **extra):
        rc = {"labels": dict(LABELS)}
        if self.backend == "docker":
            rc["runtime"] = self.runtime
        else:
            rc["network_mode"] = "none"
        rc.update(extra)
        return rc

    def kwargs(self, **runtime_extra):
        return {
            "backend": self.backend,
            "client": self.client(),
            "lang": "python",
            "verbose": True,
            "runtime_configs": self.runtime_configs(**runtime_extra),
        }

    def check_runtime(self, container):
        """Fail unless the session's container was run by the runtime under test."""
        container.reload()
        attrs = container.attrs
        if self.backend == "docker":
            got = (attrs.get("HostConfig") or {}).get("Runtime")
        else:
            got = attrs.get("OCIRuntime")
        expect(got == self.runtime, f"the session's container was run by runtime '{got}', not '{self.runtime}'")


@contextlib.contextmanager
def opened(env, factory="session", **kw):
    """Open an llm-sandbox session (with-statement, as its docs show) and check its runtime."""
    from llm_sandbox import ArtifactSandboxSession, InteractiveSandboxSession, SandboxSession

    runtime_extra = kw.pop("runtime_extra", {})
    args = env.kwargs(**runtime_extra)
    args.update(kw)
    if factory == "session":
        s = SandboxSession(**args)
    elif factory == "artifact":
        s = ArtifactSandboxSession(**args)
    else:
        s = InteractiveSandboxSession(**args)
    with s as session:
        env.check_runtime(session.container)
        yield session


def sh(session, code):
    """execute_command with the image's python3 (not the session's venv)."""
    return session.execute_command(f"/usr/bin/python3 -c {shlex.quote(code)}")


# ------------------------------------------------------------------------------------------------
# scenarios: llm-sandbox's normal usage


@scenario("hello-world")
def s_hello(env):
    with opened(env) as s:
        r = s.run("print('hello world')")
        expect(r.exit_code == 0 and r.stdout == "hello world\n", desc(r))
        return "stdout 'hello world'"


@scenario("computation")
def s_computation(env):
    code = (
        "import hashlib, math\n"
        "from fractions import Fraction\n"
        "print(sum(i * i for i in range(10**6)))\n"
        "print(hashlib.sha256(b'rloxsc' * 1000).hexdigest())\n"
        "print(sum(Fraction(1, k) for k in range(1, 30)))\n"
        "print(len(str(math.factorial(500))))\n"
    )
    from fractions import Fraction
    import math

    want = "\n".join([
        str(sum(i * i for i in range(10**6))),
        hashlib.sha256(b"rloxsc" * 1000).hexdigest(),
        str(sum(Fraction(1, k) for k in range(1, 30))),
        str(len(str(math.factorial(500)))),
    ]) + "\n"
    with opened(env) as s:
        r = s.run(code)
        expect(r.exit_code == 0 and r.stdout == want, f"want '{short(want)}'; {desc(r)}")
        return "4 results as computed on the host"


@scenario("exit-code")
def s_exit_code(env):
    with opened(env) as s:
        r = s.run("import sys\nprint('before exit')\nsys.exit(3)")
        expect(r.exit_code == 3 and r.stdout == "before exit\n", desc(r))
        return "exit code 3, stdout kept"


@scenario("exception-traceback")
def s_exception(env):
    with opened(env) as s:
        r = s.run("def inner():\n    raise ValueError('boom from the sandbox')\n\ninner()\n")
        expect(r.exit_code == 1, desc(r))
        for want in ("Traceback (most recent call last)", "in inner", "ValueError: boom from the sandbox"):
            expect(want in r.stderr, f"stderr lacks '{want}': {desc(r)}")
        return "exit 1, traceback on stderr"


@scenario("output-1mib")
def s_output(env):
    with opened(env) as s:
        r = s.run("import sys\nsys.stdout.write('0123456789abcdef' * 65536)\nsys.stdout.flush()\n")
        expect(r.exit_code == 0, desc(r))
        expect(r.stdout == "0123456789abcdef" * 65536, f"stdout has {len(r.stdout)} characters, not 1048576 (or differs)")
        return "1048576 bytes of stdout, intact"


@scenario("stdlib-imports")
def s_stdlib(env):
    code = r'''
import asyncio, csv, ctypes, datetime, decimal, io, json, multiprocessing, socket, sqlite3, ssl
import subprocess, tempfile, threading, unittest, uuid, xml.etree.ElementTree as ET, zlib, hashlib

def sq(x):
    return x * x

assert json.loads(json.dumps({"a": [1, 2]})) == {"a": [1, 2]}
db = sqlite3.connect(":memory:"); db.execute("create table t (x)"); db.executemany("insert into t values (?)", [(1,), (2,)])
assert db.execute("select sum(x) from t").fetchone()[0] == 3
assert zlib.decompress(zlib.compress(b"x" * 1000)) == b"x" * 1000
assert str(decimal.Decimal("1.1") + decimal.Decimal("2.2")) == "3.3"
assert asyncio.run(asyncio.sleep(0, result=7)) == 7
assert subprocess.run(["echo", "sub"], capture_output=True, text=True).stdout == "sub\n"
with multiprocessing.Pool(2) as pool:
    assert pool.map(sq, range(5)) == [0, 1, 4, 9, 16]
with tempfile.TemporaryDirectory() as d:
    open(d + "/f", "w").write("t")
a, b = socket.socketpair(); a.sendall(b"ping"); assert b.recv(4) == b"ping"
t = threading.Thread(target=lambda: None); t.start(); t.join()
assert ET.fromstring("<a><b/></a>").find("b") is not None
assert ctypes.CDLL(None).getpid() > 0
print("stdlib-ok", ssl.OPENSSL_VERSION.split()[0], uuid.uuid4().version)
'''
    with opened(env) as s:
        r = s.run(code)
        expect(r.exit_code == 0 and r.stdout.startswith("stdlib-ok"), desc(r))
        return "json sqlite3 zlib decimal asyncio subprocess multiprocessing.Pool tempfile socketpair threads ctypes: " + r.stdout.strip()


def _write(path, text):
    Path(path).write_text(text, encoding="utf-8")
    return str(path)


@scenario("copy-in")
def s_copy_in(env):
    with tempfile.TemporaryDirectory() as d, opened(env) as s:
        src = _write(Path(d) / "data.csv", "x,y\n1,2\n3,4\n5,6\n")
        s.copy_to_runtime(src, "/sandbox/data.csv")
        r = s.run("import csv\nrows = list(csv.DictReader(open('/sandbox/data.csv')))\nprint(sum(int(r['x']) * int(r['y']) for r in rows))\n")
        expect(r.exit_code == 0 and r.stdout == "44\n", desc(r))
        return "copy_to_runtime /sandbox/data.csv, read by the code"


@scenario("copy-in-subdir")
def s_copy_in_subdir(env):
    with tempfile.TemporaryDirectory() as d, opened(env) as s:
        src = _write(Path(d) / "notes.txt", "alpha\nbeta\ngamma\n")
        # a directory that does not exist yet: llm-sandbox runs `mkdir -p` (exec), then put_archive
        s.copy_to_runtime(src, "/sandbox/inputs/nested/notes.txt")
        r = s.run("print(open('/sandbox/inputs/nested/notes.txt').read().split()[::-1])")
        expect(r.exit_code == 0 and r.stdout == "['gamma', 'beta', 'alpha']\n", desc(r))
        return "copy_to_runtime into the new /sandbox/inputs/nested/"


@scenario("copy-out-workdir")
def s_copy_out_workdir(env):
    code = (
        "import json\nfrom pathlib import Path\n"
        "here = Path(__file__).parent\n"
        "(here / 'result.txt').write_text('result-next-to-the-code\\n')\n"
        "(here / 'out').mkdir(exist_ok=True)\n"
        "(here / 'out' / 'summary.json').write_text(json.dumps({'rows': 3}))\n"
        "print(here)\n"
    )
    with tempfile.TemporaryDirectory() as d, opened(env) as s:
        r = s.run(code)
        expect(r.exit_code == 0 and r.stdout == f"{IMAGE_WORKDIR}\n", desc(r))
        s.copy_from_runtime("/sandbox/result.txt", f"{d}/result.txt")
        got = Path(d, "result.txt").read_text()
        expect(got == "result-next-to-the-code\n", f"copied out '{short(got)}'")
        s.copy_from_runtime("/sandbox/out", f"{d}/outdir")
        got = json.loads(Path(d, "outdir", "out", "summary.json").read_text())
        expect(got == {"rows": 3}, f"copied out directory: {got}")
        return "copy_from_runtime of a file and a directory written next to the code"


@scenario("copy-out-tmp")
def s_copy_out_tmp(env):
    code = (
        "import json, os\n"
        "os.makedirs('/tmp/sandbox_output', exist_ok=True)\n"
        "json.dump({'answer': 42}, open('/tmp/sandbox_output/result.json', 'w'))\n"
        "open('/tmp/result-in-tmp.txt', 'w').write('tmp-result\\n')\n"
        "print('written')\n"
    )
    with tempfile.TemporaryDirectory() as d, opened(env) as s:
        r = s.run(code)
        expect(r.exit_code == 0 and r.stdout == "written\n", desc(r))
        s.copy_from_runtime("/tmp/sandbox_output/result.json", f"{d}/result.json")
        got = json.loads(Path(d, "result.json").read_text())
        expect(got == {"answer": 42}, f"copied out {got}")
        s.copy_from_runtime("/tmp/result-in-tmp.txt", f"{d}/r.txt")
        got = Path(d, "r.txt").read_text()
        expect(got == "tmp-result\n", f"copied out '{short(got)}'")
        return "copy_from_runtime of /tmp/sandbox_output/result.json and /tmp/result-in-tmp.txt"


@scenario("session-reuse")
def s_session_reuse(env):
    step = (
        "import json, os\n"
        "p = '/sandbox/state.json'\n"
        "n = json.load(open(p))['n'] + 1 if os.path.exists(p) else 1\n"
        "json.dump({'n': n}, open(p, 'w'))\n"
        "print(n)\n"
    )
    with opened(env) as s:
        seen = []
        for _ in range(3):
            r = s.run(step)
            expect(r.exit_code == 0, f"run {len(seen) + 1}: {desc(r)}")
            seen.append(r.stdout.strip())
        expect(seen == ["1", "2", "3"], f"state across runs: {seen}")
        r = s.execute_command("ls /sandbox")
        n_code = len([f for f in r.stdout.split() if f.endswith(".py")])
        expect(r.exit_code == 0 and n_code >= 3, f"the three code files are not all in /sandbox: {desc(r)}")
        return f"3 runs in one session, state on disk 1->2->3, {n_code} code files kept in /sandbox"


@scenario("streaming")
def s_streaming(env):
    chunks = []
    code = "import time\nfor i in range(5):\n    print(f'tick {i}', flush=True)\n    time.sleep(0.4)\n"
    with opened(env) as s:
        t0 = time.monotonic()
        r = s.run(code, on_stdout=lambda c: chunks.append((time.monotonic() - t0, c)))
        total = time.monotonic() - t0
        got = "".join(c for _, c in chunks)
        expect(all(f"tick {i}" in r.stdout for i in range(5)), desc(r))
        expect(got == r.stdout, f"callback chunks '{short(got)}' != stdout '{short(r.stdout)}'")
        first = chunks[0][0] if chunks else float("nan")
        expect(len(chunks) >= 2 and first < total - 1.0, f"not streamed: {len(chunks)} chunk(s), first at {first:.1f}s of {total:.1f}s")
        # (llm-sandbox reports exit code 0 in streaming mode: exec_run(stream=True) has no exit code)
        return f"{len(chunks)} chunks via on_stdout, first at {chunks[0][0]:.1f}s of {total:.1f}s"


@scenario("timeout")
def s_timeout(env):
    from llm_sandbox.exceptions import SandboxTimeoutError

    with opened(env) as s:
        t0 = time.monotonic()
        try:
            r = s.run("print('looping', flush=True)\nwhile True:\n    pass\n", timeout=3)
        except SandboxTimeoutError:
            elapsed = time.monotonic() - t0
        else:
            raise Fail(f"no SandboxTimeoutError after {time.monotonic() - t0:.1f}s: {desc(r)}")
        expect(elapsed < 15, f"SandboxTimeoutError only after {elapsed:.1f}s (timeout 3)")
        r = s.run("print('alive after timeout')")
        expect(r.exit_code == 0 and r.stdout == "alive after timeout\n", f"session after the timeout: {desc(r)}")
        ps = s.execute_command("ps -eo args")
        still = sum(1 for line in ps.stdout.splitlines() if ".sandbox-venv/bin/python /sandbox/" in line)
        return (f"SandboxTimeoutError after {elapsed:.1f}s, session usable after it; "
                f"{still} timed-out loop(s) still running in the container (llm-sandbox kills nothing for a session it created)")


@scenario("limits-memory-hog")
def s_memory_hog(env):
    hog = "chunks = []\nfor i in range(64):\n    chunks.append('x' * (32 * 1024 * 1024))\nprint('survived', len(chunks))\n"
    with opened(env, runtime_extra={"mem_limit": "256m"}) as s:
        r = s.run(hog)
        expect(r.exit_code != 0 and "survived" not in r.stdout, f"2 GiB allocated under mem_limit 256m: {desc(r)}")
        how = "OOM-killed (137)" if r.exit_code == 137 else ("MemoryError" if "MemoryError" in r.stderr else f"exit {r.exit_code}")
        r2 = s.run("print('alive')")
        expect(r2.exit_code == 0 and r2.stdout == "alive\n", f"session after the hog: {desc(r2)}")
        return f"hog {how} under mem_limit 256m, session alive after it"


@scenario("limits-fork-bomb")
def s_fork_bomb(env):
    bomb = (
        "import os, time\n"
        "pids, err = [], None\n"
        "for i in range(2000):\n"
        "    try:\n"
        "        pid = os.fork()\n"
        "    except OSError as e:\n"
        "        err = e.errno\n"
        "        break\n"
        "    if pid == 0:\n"
        "        time.sleep(60)\n"
        "        os._exit(0)\n"
        "    pids.append(pid)\n"
        "for p in pids:\n"
        "    os.kill(p, 9)\n"
        "for p in pids:\n"
        "    os.waitpid(p, 0)\n"
        "print(len(pids), err)\n"
    )
    with opened(env, runtime_extra={"pids_limit": 128}) as s:
        r = s.run(bomb)
        expect(r.exit_code == 0, desc(r))
        n, err = r.stdout.split()
        expect(err == "11" and int(n) < 128, f"fork stopped after {n} children with errno {err} (pids_limit 128: want EAGAIN=11 before 128)")
        r2 = s.run("print('alive')")
        expect(r2.exit_code == 0 and r2.stdout == "alive\n", f"session after the fork bomb: {desc(r2)}")
        return f"fork failed with EAGAIN after {n} children under pids_limit 128, session alive"


@scenario("plot-capture")
def s_plots(env):
    code = (
        "import matplotlib.pyplot as plt\n"
        "plt.plot([1, 2, 3], [1, 4, 9]); plt.title('line'); plt.show()\n"
        "plt.bar(['a', 'b'], [3, 5]); plt.title('bars'); plt.show()\n"
        "print('plotted')\n"
    )
    with opened(env, "artifact", enable_plotting=True) as s:
        r = s.run(code)
        expect(r.exit_code == 0 and "plotted" in r.stdout, desc(r))
        expect(len(r.plots) == 2, f"{len(r.plots)} plots captured, not 2 (stderr '{short(r.stderr)}')")
        for p in r.plots:
            raw = base64.b64decode(p.content_base64)
            expect(p.format.value == "png" and raw[:8] == b"\x89PNG\r\n\x1a\n", f"plot format {p.format}, header {raw[:8]!r}")
        r2 = s.run("import matplotlib.pyplot as plt\nplt.plot([0, 1]); plt.show()\n", clear_plots=True)
        expect(r2.exit_code == 0 and len(r2.plots) == 1, f"after clear_plots: {len(r2.plots)} plots, not 1 ({desc(r2)})")
        return f"2 PNG plots captured from /tmp/sandbox_plots ({sum(len(p.content_base64) for p in r.plots)} base64 chars), 1 after clear_plots"


@scenario("interactive-ipython")
def s_interactive(env):
    from llm_sandbox import KernelType

    with opened(env, "interactive", kernel_type=KernelType.IPYTHON, timeout=60) as s:
        r1 = s.run("value = 21 * 2")
        expect(r1.exit_code == 0, f"cell 1: {desc(r1)}")
        r2 = s.run("print(value)")
        expect(r2.exit_code == 0 and "42" in r2.stdout, f"cell 2: {desc(r2)}")
        r3 = s.run("%who")
        expect("value" in r3.stdout, f"%who: {desc(r3)}")
        r4 = s.run("1 / 0")
        expect(r4.exit_code == 1, f"a failing cell: {desc(r4)}")
        return "IPython runner: state kept across cells (value=42), %who, a failing cell reports exit 1"


@scenario("session-venv")
def s_venv(env):
    with opened(env) as s:
        r = s.execute_command(f"cat {VENV}/pyvenv.cfg")
        expect(r.exit_code == 0 and "include-system-site-packages = true" in r.stdout, f"no venv at {VENV}: {desc(r)}")
        r = s.run("import sys, matplotlib\nprint(sys.prefix)\nprint(sys.executable)\n")
        expect(r.exit_code == 0 and r.stdout.split("\n")[:2] == [VENV, f"{VENV}/bin/python"], desc(r))
        return f"the session's venv {VENV} (created without network, system site-packages) runs the code"


@scenario("libraries-preinstalled")
def s_libraries(env):
    with opened(env) as s:
        r = s.run("import matplotlib\nprint('mpl', matplotlib.__version__)", libraries=["matplotlib"])
        expect(r.exit_code == 0 and r.stdout.startswith("mpl "), desc(r))
        return f"run(libraries=['matplotlib']): the venv's pip finds it installed (no network), {r.stdout.strip()}"


# ------------------------------------------------------------------------------------------------
# containment (must hold under rloxsc; expected to fail under runc)


@scenario("contained-rootfs-readonly")
def s_contained_ro(env):
    code = (
        "import errno, os\n"
        "for p in ('/usr/bin/rxci-probe', '/etc/rxci-probe'):\n"
        "    try:\n"
        "        os.close(os.open(p, os.O_WRONLY | os.O_CREAT, 0o644)); os.unlink(p); print(p, 'WRITABLE')\n"
        "    except OSError as e:\n"
        "        print(p, errno.errorcode.get(e.errno, e.errno))\n"
    )
    with opened(env) as s:
        r = sh(s, code)
        expect(r.exit_code == 0, desc(r))
        lines = r.stdout.split("\n")[:2]
        expect(lines == ["/usr/bin/rxci-probe EROFS", "/etc/rxci-probe EROFS"], f"writes to /usr/bin and /etc: {lines}")
        return "writes to /usr/bin and /etc fail with EROFS"


@scenario("contained-pids")
def s_contained_pids(env):
    with opened(env) as s:
        r = s.execute_command("cat /sys/fs/cgroup/pids/pids.max")
        v = r.stdout.strip()
        if r.exit_code == 0 and v:
            expect(v.isdigit() and int(v) <= PIDS_CEILING, f"pids.max inside is {v} (must be <= {PIDS_CEILING})")
            return f"pids.max {v}"
        # unreadable: fork until failure, bounded
        code = (
            "import os, time\npids = []\n"
            f"for i in range({PIDS_CEILING + 16}):\n"
            "    try:\n        pid = os.fork()\n    except OSError:\n        break\n"
            "    if pid == 0:\n        time.sleep(60); os._exit(0)\n"
            "    pids.append(pid)\n"
            "for p in pids: os.kill(p, 9)\nfor p in pids: os.waitpid(p, 0)\nprint(len(pids))\n"
        )
        r = sh(s, code)
        expect(r.exit_code == 0 and int(r.stdout.split()[0]) < PIDS_CEILING, f"pids.max unreadable; forked {desc(r)}")
        return f"pids.max unreadable; fork failed after {r.stdout.strip()} children"


@scenario("contained-network-lo-only")
def s_contained_net(env):
    with opened(env) as s:
        r = s.execute_command("ls /sys/class/net")
        devs = set(r.stdout.split())
        expect(r.exit_code == 0 and "lo" in devs and devs <= FALLBACK_NETDEVS, f"interfaces: {sorted(devs)} ({desc(r)})")
        return f"interfaces {sorted(devs)}"


@scenario("contained-seccomp")
def s_contained_seccomp(env):
    with opened(env) as s:
        r = s.execute_command("cat /proc/self/status")
        m = re.search(r"^Seccomp:\s*(\d+)", r.stdout, re.M)
        nnp = re.search(r"^NoNewPrivs:\s*(\d+)", r.stdout, re.M)
        expect(m and m.group(1) == "2", f"Seccomp: {m.group(1) if m else 'missing'} ({desc(r)})")
        return f"Seccomp 2, NoNewPrivs {nnp.group(1) if nnp else '?'}"


# ------------------------------------------------------------------------------------------------


def run_one(env, name, fn):
    t0 = time.monotonic()

    def on_alarm(*_):
        raise Hung()

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(SCENARIO_ALARM)
    try:
        detail = fn(env)
        ok = True
    except Fail as e:
        ok, detail = False, str(e)
    except Hung:
        ok, detail = False, f"still running after {SCENARIO_ALARM}s"
    except Exception as e:  # noqa: BLE001 - any error of the client is the scenario's result
        log(traceback.format_exc())
        ok, detail = False, f"{type(e).__name__}: {short(str(e), 400)}"
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    return {"name": name, "ok": ok, "detail": detail, "secs": round(time.monotonic() - t0, 1)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--backend", choices=["docker", "podman"])
    ap.add_argument("--runtime", help="the runtime the containers must be run by (docker: its registered name)")
    ap.add_argument("--url", help="the daemon's socket (docker: default DOCKER_HOST; podman: CONTAINER_HOST)")
    ap.add_argument("--only", default="", help="only scenarios whose name matches this regex")
    ap.add_argument("--list", action="store_true", help="print the scenario names and exit")
    ap.add_argument("--jobs", type=int, default=1, help="run this many scenarios at a time, each in a process of its own")
    args = ap.parse_args()
    if args.list:
        print("\n".join(n for n, _ in SCENARIOS))
        return 0
    if not args.backend or not args.runtime:
        ap.error("--backend and --runtime are required")
    import llm_sandbox  # noqa: F401 - fail early and clearly if it is not installed

    names = [n for n, _ in SCENARIOS if not args.only or re.search(args.only, n)]
    if args.jobs > 1 and len(names) > 1:
        return run_parallel(args, names)
    verbose_logging()
    env = Env(args)
    log(f"llm-sandbox {version()}, backend {args.backend}, runtime {args.runtime}, url {args.url}")
    for name, fn in SCENARIOS:
        if name not in names:
            continue
        log(f"--- {name}")
        res = run_one(env, name, fn)
        log(f"    {'ok' if res['ok'] else 'FAILED'} ({res['secs']}s): {res['detail']}")
        print(json.dumps(res), flush=True)
    return 0


def version():
    from importlib.metadata import version as v

    return v("llm-sandbox")


def run_parallel(args, names):
    """--jobs N: each scenario in a process of its own (this script with --only ^NAME$), N at a time;
    each one's log is printed in one piece, the JSON lines in the scenarios' order."""
    import subprocess
    from concurrent.futures import ThreadPoolExecutor

    def one(name):
        cmd = [sys.executable, __file__, "--backend", args.backend, "--runtime", args.runtime, "--only", f"^{re.escape(name)}$"]
        if args.url:
            cmd += ["--url", args.url]
        t0 = time.monotonic()
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=SCENARIO_ALARM + 60)
            out, err = p.stdout, p.stderr
        except subprocess.TimeoutExpired as e:
            out, err = "", f"{e.stderr or ''}\n(killed after {SCENARIO_ALARM + 60}s)"
        lines = [ln for ln in out.splitlines() if ln.startswith("{")]
        if not lines:
            lines = [json.dumps({"name": name, "ok": False, "detail": f"the driver printed no result: {short(err, 300)}",
                                 "secs": round(time.monotonic() - t0, 1)})]
        return err, lines

    log(f"llm-sandbox {version()}, backend {args.backend}, runtime {args.runtime}, url {args.url}, {args.jobs} scenarios at a time")
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for err, lines in pool.map(one, names):
            sys.stderr.write(err)
            sys.stderr.flush()
            print("\n".join(lines), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
