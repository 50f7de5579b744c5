#!/usr/bin/env python3
"""tests/clients/cri_client.py - a minimal CRI v1 client (what crictl does, for the calls cri.sh needs).

Kubernetes' kubelet talks to containerd's CRI plugin over gRPC; Debian 12 has no crictl, so the
client suite drives the same RuntimeService calls with the generated stubs of PyPI's
`container-runtime-interface-api` (module cri_api.v1). Requests are given as JSON in the CRI's
protobuf field names (snake_case), exactly the messages of k8s.io/cri-api's api.proto; answers are
printed as JSON with the same names.

    cri_client.py [--socket PATH] VERB ARGS...

    version                                   Version
    status                                    Status (verbose: conditions, info.config)
    runp POD.json [HANDLER]                   RunPodSandbox (runtime_handler HANDLER): prints the pod id
    stopp POD-ID | rmp POD-ID                 StopPodSandbox | RemovePodSandbox
    inspectp POD-ID                           PodSandboxStatus (verbose: info.pid, info.runtimeSpec)
    pods                                      ListPodSandbox
    create POD-ID CTR.json POD.json           CreateContainer: prints the container id
    start ID | rm ID                          StartContainer | RemoveContainer
    stop ID [TIMEOUT-S]                       StopContainer (default timeout 10 s)
    inspect ID                                ContainerStatus (verbose)
    ps                                        ListContainers
    update ID RESOURCES.json                  UpdateContainerResources (linux resources)
    exec [--timeout S] ID CMD...              ExecSync: the command's stdout and stderr, exit status = its exit code
    images                                    ListImages
    cycle POD.json CTR.json HANDLER           one pod's whole life (RunPodSandbox, CreateContainer, StartContainer,
                                              StopContainer, RemoveContainer, StopPodSandbox, RemovePodSandbox)
                                              with a fresh pod uid: what scripts/bench-clients.sh times

A gRPC error prints `rpc error: code = CODE desc = DETAILS` on stderr and exits 125 (exec exits
with the command's own code otherwise).
"""
import argparse
import json
import sys
import uuid

import grpc
from google.protobuf import json_format
from cri_api.v1 import api_pb2 as pb
from cri_api.v1 import api_pb2_grpc as pbg

RPC_ERROR_EXIT = 125


def load(path, msg):
    with open(path) as f:
        return json_format.ParseDict(json.load(f), msg)


def dump(msg):
    # print zero values too (state SANDBOX_READY / CONTAINER_CREATED and exit_code 0 are zeros)
    try:
        d = json_format.MessageToDict(msg, preserving_proto_field_name=True,
                                      always_print_fields_with_no_presence=True)
    except TypeError:  # protobuf < 5.26
        d = json_format.MessageToDict(msg, preserving_proto_field_name=True,
                                      including_default_value_fields=True)
    # verbose status: info values are JSON documents themselves
    info = d.get("info")
    if isinstance(info, dict):
        for k, v in list(info.items()):
            try:
                info[k] = json.loads(v)
            except (TypeError, ValueError):
                pass
    print(json.dumps(d, indent=1, sort_keys=True))


def main():
    ap = argparse.ArgumentParser(description="minimal CRI v1 client")
    ap.add_argument("--socket", default="/run/containerd/containerd.sock")
    ap.add_argument("--rpc-timeout", type=float, default=120.0)
    ap.add_argument("verb")
    ap.add_argument("args", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    chan = grpc.insecure_channel("unix://" + a.socket)
    rt = pbg.RuntimeServiceStub(chan)
    img = pbg.ImageServiceStub(chan)
    t = a.rpc_timeout
    v, args = a.verb, a.args

    def need(n, usage):
        if len(args) < n:
            sys.exit("usage: cri_client.py %s %s" % (v, usage))

    if v == "version":
        dump(rt.Version(pb.VersionRequest(), timeout=t))
    elif v == "status":
        dump(rt.Status(pb.StatusRequest(verbose=True), timeout=t))
    elif v == "runp":
        need(1, "POD.json [HANDLER]")
        r = rt.RunPodSandbox(pb.RunPodSandboxRequest(
            config=load(args[0], pb.PodSandboxConfig()),
            runtime_handler=args[1] if len(args) > 1 else ""), timeout=t)
        print(r.pod_sandbox_id)
    elif v == "stopp":
        need(1, "POD-ID")
        rt.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id=args[0]), timeout=t)
    elif v == "rmp":
        need(1, "POD-ID")
        rt.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=args[0]), timeout=t)
    elif v == "inspectp":
        need(1, "POD-ID")
        dump(rt.PodSandboxStatus(pb.PodSandboxStatusRequest(pod_sandbox_id=args[0], verbose=True), timeout=t))
    elif v == "pods":
        dump(rt.ListPodSandbox(pb.ListPodSandboxRequest(), timeout=t))
    elif v == "create":
        need(3, "POD-ID CTR.json POD.json")
        r = rt.CreateContainer(pb.CreateContainerRequest(
            pod_sandbox_id=args[0],
            config=load(args[1], pb.ContainerConfig()),
            sandbox_config=load(args[2], pb.PodSandboxConfig())), timeout=t)
        print(r.container_id)
    elif v == "start":
        need(1, "ID")
        rt.StartContainer(pb.StartContainerRequest(container_id=args[0]), timeout=t)
    elif v == "stop":
        need(1, "ID [TIMEOUT-S]")
        rt.StopContainer(pb.StopContainerRequest(
            container_id=args[0], timeout=int(args[1]) if len(args) > 1 else 10), timeout=t)
    elif v == "rm":
        need(1, "ID")
        rt.RemoveContainer(pb.RemoveContainerRequest(container_id=args[0]), timeout=t)
    elif v == "inspect":
        need(1, "ID")
        dump(rt.ContainerStatus(pb.ContainerStatusRequest(container_id=args[0], verbose=True), timeout=t))
    elif v == "ps":
        dump(rt.ListContainers(pb.ListContainersRequest(), timeout=t))
    elif v == "update":
        need(2, "ID RESOURCES.json")
        rt.UpdateContainerResources(pb.UpdateContainerResourcesRequest(
            container_id=args[0], linux=load(args[1], pb.LinuxContainerResources())), timeout=t)
    elif v == "exec":
        timeout = 30
        if args[:1] == ["--timeout"]:
            need(2, "[--timeout S] ID CMD...")
            timeout, args = int(args[1]), args[2:]
        need(2, "[--timeout S] ID CMD...")
        r = rt.ExecSync(pb.ExecSyncRequest(container_id=args[0], cmd=args[1:], timeout=timeout),
                        timeout=timeout + t)
        sys.stdout.buffer.write(r.stdout)
        sys.stderr.buffer.write(r.stderr)
        sys.stdout.flush()
        sys.stderr.flush()
        sys.exit(r.exit_code)
    elif v == "cycle":
        need(3, "POD.json CTR.json HANDLER")
        pod = load(args[0], pb.PodSandboxConfig())
        pod.metadata.uid = str(uuid.uuid4())
        pod.metadata.name += "-" + pod.metadata.uid[:8]
        ctr = load(args[1], pb.ContainerConfig())
        pid = rt.RunPodSandbox(pb.RunPodSandboxRequest(config=pod, runtime_handler=args[2]), timeout=t).pod_sandbox_id
        try:
            cid = rt.CreateContainer(pb.CreateContainerRequest(
                pod_sandbox_id=pid, config=ctr, sandbox_config=pod), timeout=t).container_id
            rt.StartContainer(pb.StartContainerRequest(container_id=cid), timeout=t)
            rt.StopContainer(pb.StopContainerRequest(container_id=cid, timeout=10), timeout=t)
            rt.RemoveContainer(pb.RemoveContainerRequest(container_id=cid), timeout=t)
        finally:
            rt.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id=pid), timeout=t)
            rt.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=pid), timeout=t)
    elif v == "images":
        dump(img.ListImages(pb.ListImagesRequest(), timeout=t))
    else:
        sys.exit("unknown verb %r (see the top of %s)" % (v, sys.argv[0]))


if __name__ == "__main__":
    try:
        main()
    except grpc.RpcError as e:
        print("rpc error: code = %s desc = %s" % (e.code().name, e.details()), file=sys.stderr)
        sys.exit(RPC_ERROR_EXIT)
