#!/usr/bin/env python3
"""Turns a Docker/moby seccomp profile (docker-default-seccomp.json) into the `linux.seccomp` section
of an OCI config.json, for one container's capability set, as dockerd does before it hands the spec
to runc:

- `archMap`: the native architecture's entry gives `architectures` (x86_64 plus x86 and x32);
- each rule is kept unless its `excludes` match (an architecture, any of the capabilities, or a
  kernel at least `minKernel`) or its `includes` do not (another architecture, a capability the
  container's bounding set lacks, a kernel older than `minKernel`);
- `defaultAction`, `defaultErrnoRet`, `names`, `action`, `args`, `errnoRet` are copied.

Usage: docker-seccomp-to-oci.py PROFILE CAP[,CAP...]   (prints the OCI section as JSON)
"""
import json
import os
import platform
import sys

# Go's GOARCH names (used by the profile's includes/excludes) and libseccomp's, for this machine
GOARCH = {"x86_64": "amd64", "aarch64": "arm64", "s390x": "s390x", "ppc64le": "ppc64le",
          "riscv64": "riscv64"}
SCMP_ARCH = {"amd64": "SCMP_ARCH_X86_64", "arm64": "SCMP_ARCH_AARCH64", "s390x": "SCMP_ARCH_S390X",
             "ppc64le": "SCMP_ARCH_PPC64LE", "riscv64": "SCMP_ARCH_RISCV64"}


def kernel_at_least(want):
    have = [int(x) for x in os.uname().release.split("-")[0].split(".")[:2]]
    need = [int(x) for x in want.split(".")[:2]]
    return have >= need


def convert(profile, caps, goarch):
    out = {"defaultAction": profile["defaultAction"]}
    if "defaultErrnoRet" in profile:
        out["defaultErrnoRet"] = profile["defaultErrnoRet"]
    arches = []
    for entry in profile.get("archMap") or []:
        if entry["architecture"] == SCMP_ARCH[goarch]:
            arches = [entry["architecture"]] + (entry.get("subArchitectures") or [])
    if arches:
        out["architectures"] = arches
    syscalls = []
    for rule in profile.get("syscalls", []):
        exc = rule.get("excludes") or {}
        inc = rule.get("includes") or {}
        if goarch in (exc.get("arches") or []):
            continue
        if any(c in caps for c in exc.get("caps") or []):
            continue
        if exc.get("minKernel") and kernel_at_least(exc["minKernel"]):
            continue
        if inc.get("arches") and goarch not in inc["arches"]:
            continue
        if any(c not in caps for c in inc.get("caps") or []):
            continue
        if inc.get("minKernel") and not kernel_at_least(inc["minKernel"]):
            continue
        names = rule.get("names") or [rule["name"]]
        s = {"names": names, "action": rule["action"]}
        if rule.get("args"):
            s["args"] = rule["args"]
        if "errnoRet" in rule:
            s["errnoRet"] = rule["errnoRet"]
        syscalls.append(s)
    out["syscalls"] = syscalls
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        profile = json.load(f)
    caps = [c for c in sys.argv[2].split(",") if c]
    json.dump(convert(profile, caps, GOARCH[platform.machine()]), sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
