#!/usr/bin/env python3
"""Agent frameworks that reach their sandbox over a published port, driven unchanged through Docker.

tests/clients/agents.sh runs this in the bridge dockerd's network namespace (DOCKER_HOST points at
it), once per runtime: the frameworks pass no runtime (autogen cannot), so dockerd's default-runtime
decides, as on a user's host with `"default-runtime": "rloxsc"`. Each framework's steps are what its
users do: start the sandbox, run code, keep state between calls, get errors and files back, stop.
From inside the same sandbox, through the framework's own code execution, it also tries a TCP
connection, a UDP datagram and a DNS query to listeners the suite started on the bridge's gateway
(`--probe-port`), and, with `--allow-port`, a connection to the port the runtime's policy allowlists,
then again after `--after-allow CMD` (the suite's `rloxsc update --egress-allow ""`) ran on the
container's id.

Prints one JSON line per step: {"framework", "name", "ok", "detail"}; probe steps carry "probe" (the
outcome of each attempt as the program saw it) and are judged by agents.sh, which knows the runtime.

    agents.py --framework swerex|smolagents|autogen --image IMG --gateway ADDR --probe-port P
              [--allow-port P --after-allow CMD]
    agents.py --list FRAMEWORK
"""

import argparse
import asyncio
import json
import os
import shlex
import subprocess
import sys
import tempfile
import traceback

# The probe, run inside the sandbox by the framework: prints one JSON object
# {"tcp": outcome, "udp": outcome, "dns": outcome}. An outcome is "connected"/"sent" or the error.
PROBE = r'''
import json, socket, struct
def _rx_probe(gw, port):
    out = {}
    try:
        s = socket.create_connection((gw, port), timeout=3); s.close(); out["tcp"] = "connected"
    except OSError as e:
        out["tcp"] = "%s: %s" % (type(e).__name__, e)
    def _udp(dst, payload):
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.settimeout(2)
        try:
            u.sendto(payload, dst)
            try:
                u.recvfrom(512); return "answered"
            except socket.timeout:
                return "sent"
        except OSError as e:
            return "%s: %s" % (type(e).__name__, e)
        finally:
            u.close()
    out["udp"] = _udp((gw, port), b"rloxsc-agents-probe")
    q = struct.pack(">HHHHHH", 0x5258, 0x0100, 1, 0, 0, 0) + b"\x05probe\x04test\x00" + struct.pack(">HH", 1, 1)
    out["dns"] = _udp((gw, 53), q)
    return out
'''

STEPS = {
    "swerex": ["start", "is-alive", "create-session", "run-in-session", "session-keeps-state",
               "execute", "write-read-file", "upload", "egress-probe", "close-session", "stop"],
    "smolagents": ["start", "run-code", "state-kept", "error-reported", "send-variables",
                   "final-answer", "egress-probe", "cleanup"],
    "autogen": ["start-server", "start-executor", "run-code", "state-kept", "error-reported",
                "bash-magic", "egress-probe", "stop"],
}
ALLOW_STEPS = ["allowlisted-port", "allowlist-closed"]


def emit(framework, name, ok, detail="", **extra):
    line = {"framework": framework, "name": name, "ok": bool(ok), "detail": str(detail)[:600]}
    line.update(extra)
    print(json.dumps(line), flush=True)


class Steps:
    """Runs named steps in order; after the first failure the rest are reported as not reached."""

    def __init__(self, framework):
        self.framework = framework
        self.broken = None

    def run(self, name, fn, *args):
        if self.broken:
            emit(self.framework, name, False, f"not reached ({self.broken} failed)")
            return None
        try:
            value = fn(*args)
            if asyncio.iscoroutine(value):
                value = asyncio.get_event_loop().run_until_complete(value)
            return value
        except Exception as e:  # noqa: BLE001 - a step's failure is the result
            self.broken = name
            emit(self.framework, name, False, f"{type(e).__name__}: {e} | {traceback.format_exc(limit=3)[-300:]}")
            return None

    def check(self, name, cond, detail):
        if not cond:
            self.broken = self.broken or name
        emit(self.framework, name, cond, detail)


def probe_code(gw, port, call=True):
    code = PROBE
    if call:
        code += f"\nprint('RXPROBE' + json.dumps(_rx_probe({gw!r}, {port})))\n"
    return code


def parse_probe(text):
    for line in (text or "").splitlines():
        i = line.find("RXPROBE")
        if i >= 0:
            return json.loads(line[i + len("RXPROBE"):])
    raise ValueError(f"no probe result in {text!r:.300}")


def allow_probe(a, st, run_code, container_id):
    """The allowlisted port: reached; then closed by the suite's update; then refused."""
    code = probe_code(a.gateway, a.allow_port)
    got = st.run("allowlisted-port", lambda: parse_probe(run_code(code)))
    if got is not None:
        emit(a.framework, "allowlisted-port", got["tcp"] == "connected", json.dumps(got), probe=got)
    cid = container_id()
    r = subprocess.run(shlex.split(a.after_allow) + [cid], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        emit(a.framework, "allowlist-closed", False, f"{a.after_allow} {cid} failed: {r.stderr.strip()[-300:]}")
        return
    got = st.run("allowlist-closed", lambda: parse_probe(run_code(code)))
    if got is not None:
        emit(a.framework, "allowlist-closed", got["tcp"] != "connected", json.dumps(got), probe=got)


def egress(a, st, run_code):
    got = st.run("egress-probe", lambda: parse_probe(run_code(probe_code(a.gateway, a.probe_port))))
    if got is not None:
        # judged by agents.sh (refused under rloxsc, reached under runc): the step itself ran
        emit(a.framework, "egress-probe", True, json.dumps(got), probe=got)


# ---------------------------------------------------------------------------------------------
def run_swerex(a):
    from swerex.deployment.docker import DockerDeployment
    from swerex.runtime.abstract import (BashAction, CloseBashSessionRequest, Command,
                                         CreateBashSessionRequest, ReadFileRequest, UploadRequest,
                                         WriteFileRequest)

    fw = "swerex"
    st = Steps(fw)
    dep = DockerDeployment(image=a.image, pull="never", startup_timeout=90)
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    name = None
    try:
        st.run("start", dep.start)
        name = dep._container_name
        if not st.broken:
            emit(fw, "start", True, f"container {dep._container_name}")
        alive = st.run("is-alive", lambda: dep.runtime.is_alive())
        if alive is not None:
            st.check("is-alive", bool(alive), repr(alive))
        if st.run("create-session", lambda: dep.runtime.create_session(CreateBashSessionRequest())) is not None:
            emit(fw, "create-session", True)
        r = st.run("run-in-session", lambda: dep.runtime.run_in_session(
            BashAction(command="echo hello-$((6*7)) && cd /tmp && pwd", check="raise")))
        if r is not None:
            st.check("run-in-session", "hello-42" in r.output and "/tmp" in r.output, r.output)
        r = st.run("session-keeps-state", lambda: dep.runtime.run_in_session(
            BashAction(command="export RX_V=kept; echo $RX_V $(pwd)", check="raise")))
        r = r and st.run("session-keeps-state", lambda: dep.runtime.run_in_session(BashAction(command="echo $RX_V $(pwd)")))
        if r is not None:
            st.check("session-keeps-state", "kept /tmp" in r.output, r.output)
        r = st.run("execute", lambda: dep.runtime.execute(Command(command=["python3", "-c", "print(6*7)"])))
        if r is not None:
            st.check("execute", r.exit_code == 0 and r.stdout.strip() == "42", r)
        r = st.run("write-read-file", lambda: dep.runtime.write_file(WriteFileRequest(path="/tmp/rx/a.txt", content="written\n")))
        r = st.run("write-read-file", lambda: dep.runtime.read_file(ReadFileRequest(path="/tmp/rx/a.txt")))
        if r is not None:
            st.check("write-read-file", r.content == "written\n", repr(r.content))
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "up.txt"), "w") as f:
                f.write("uploaded\n")
            st.run("upload", lambda: dep.runtime.upload(UploadRequest(source_path=os.path.join(d, "up.txt"), target_path="/tmp/up.txt")))
        r = st.run("upload", lambda: dep.runtime.read_file(ReadFileRequest(path="/tmp/up.txt")))
        if r is not None:
            st.check("upload", r.content == "uploaded\n", repr(r.content))

        def run_code(code):
            r = loop.run_until_complete(dep.runtime.execute(Command(command=["python3", "-c", code])))
            return r.stdout + r.stderr

        egress(a, st, run_code)
        if a.allow_port:
            allow_probe(a, st, run_code, lambda: container_id(name))
        if st.run("close-session", lambda: dep.runtime.close_session(CloseBashSessionRequest())) is not None:
            emit(fw, "close-session", True)
    finally:
        st.broken = None
        st.run("stop", dep.stop)
    left = name is not None and container_exists(name)
    emit(fw, "stop", not left, "the container is gone" if not left else "the container is still there")


def container_id(name):
    return subprocess.run(["docker", "inspect", "-f", "{{.Id}}", name], capture_output=True, text=True, check=True).stdout.strip()


def container_exists(name):
    return subprocess.run(["docker", "inspect", name], capture_output=True).returncode == 0


# ---------------------------------------------------------------------------------------------
def run_smolagents(a):
    from smolagents.default_tools import FinalAnswerTool
    from smolagents.monitoring import AgentLogger, LogLevel
    from smolagents.remote_executors import DockerExecutor

    fw = "smolagents"
    st = Steps(fw)
    ex = st.run("start", lambda: DockerExecutor(additional_imports=[], logger=AgentLogger(LogLevel.ERROR),
                                                image_name=a.image, build_new_image=False, port=a.port))
    if ex is None:
        for n in STEPS[fw][1:] + (ALLOW_STEPS if a.allow_port else []):
            emit(fw, n, False, "not reached (start failed)")
        return
    emit(fw, "start", True, f"container {ex.container.short_id}, kernel {ex.kernel_id}")
    cid = ex.container.id
    try:
        r = st.run("run-code", ex.run_code_raise_errors, "x = 6 * 7\nprint('got', x)")
        if r is not None:
            st.check("run-code", "got 42" in r.logs, r.logs)
        r = st.run("state-kept", ex.run_code_raise_errors, "print('next', x + 1)")
        if r is not None:
            st.check("state-kept", "next 43" in r.logs, r.logs)
        try:
            ex.run_code_raise_errors("1 / 0")
            st.check("error-reported", False, "1 / 0 raised nothing")
        except Exception as e:  # noqa: BLE001
            st.check("error-reported", "ZeroDivisionError" in str(e), f"{type(e).__name__}: {str(e)[:200]}")
        st.run("send-variables", ex.send_variables, {"rx_sent": [1, 2, 3]})
        r = st.run("send-variables", ex.run_code_raise_errors, "print('sum', sum(rx_sent))")
        if r is not None:
            st.check("send-variables", "sum 6" in r.logs, r.logs)
        st.run("final-answer", ex.send_tools, {"final_answer": FinalAnswerTool()})
        r = st.run("final-answer", ex.run_code_raise_errors, "final_answer(6 * 7)")
        if r is not None:
            st.check("final-answer", r.is_final_answer and r.output == 42, f"is_final_answer={r.is_final_answer} output={r.output!r}")

        def run_code(code):
            return ex.run_code_raise_errors(code).logs

        egress(a, st, run_code)
        if a.allow_port:
            allow_probe(a, st, run_code, lambda: cid)
    finally:
        st.broken = None
        st.run("cleanup", ex.cleanup)
    left = container_exists(cid)
    emit(fw, "cleanup", not left, "the container is gone" if not left else "the container is still there")


# ---------------------------------------------------------------------------------------------
def run_autogen(a):
    from autogen_core import CancellationToken
    from autogen_core.code_executor import CodeBlock
    from autogen_ext.code_executors.docker_jupyter import DockerJupyterCodeExecutor, DockerJupyterServer

    fw = "autogen"
    st = Steps(fw)
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    server = st.run("start-server", lambda: DockerJupyterServer(custom_image_name=a.image, expose_port=8888))
    if server is None:
        for n in STEPS[fw][1:] + (ALLOW_STEPS if a.allow_port else []):
            emit(fw, n, False, "not reached (start-server failed)")
        return
    emit(fw, "start-server", True, f"container {server._container_id[:12]}, port {server._port}")
    cid = server._container_id
    ex = DockerJupyterCodeExecutor(jupyter_server=server, timeout=60)

    def run(code):
        return loop.run_until_complete(ex.execute_code_blocks([CodeBlock(code=code, language="python")], CancellationToken()))

    try:
        if st.run("start-executor", ex.start) is not None or not st.broken:
            emit(fw, "start-executor", True)
        r = st.run("run-code", run, "x = 6 * 7\nprint('got', x)")
        if r is not None:
            st.check("run-code", r.exit_code == 0 and "got 42" in r.output, r)
        r = st.run("state-kept", run, "print('next', x + 1)")
        if r is not None:
            st.check("state-kept", r.exit_code == 0 and "next 43" in r.output, r)
        r = st.run("error-reported", run, "1 / 0")
        if r is not None:
            st.check("error-reported", r.exit_code != 0 and "ZeroDivisionError" in r.output, r)
        r = st.run("bash-magic", run, "!echo from-shell-$((6*7)) && id -u")
        if r is not None:
            st.check("bash-magic", r.exit_code == 0 and "from-shell-42" in r.output, r)

        def run_code(code):
            return run(code).output

        egress(a, st, run_code)
        if a.allow_port:
            allow_probe(a, st, run_code, lambda: cid)
    finally:
        st.broken = None
        st.run("stop", ex.stop)
        st.run("stop", server.stop)
    left = container_exists(cid)
    emit(fw, "stop", not left, "the container is gone" if not left else "the container is still there")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--list")
    p.add_argument("--framework", choices=sorted(STEPS))
    p.add_argument("--image")
    p.add_argument("--gateway")
    p.add_argument("--probe-port", type=int)
    p.add_argument("--allow-port", type=int)
    p.add_argument("--after-allow", default="")
    p.add_argument("--port", type=int, default=18888, help="smolagents' host port")
    a = p.parse_args()
    if a.list:
        print("\n".join(STEPS[a.list] + ALLOW_STEPS))
        return 0
    {"swerex": run_swerex, "smolagents": run_smolagents, "autogen": run_autogen}[a.framework](a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
