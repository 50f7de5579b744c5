#!/usr/bin/env python3
"""imports.py - the import graph of src/, from its `crate::` and `super::` paths: fails on a circle.

Each node is a module file (src/a.rs, src/b/mod.rs as `b`, src/b/c.rs as `b::c`). An edge A -> B is
a path in A (a `use` line or an inline `crate::b::x`) that names B or an item of B; a path into a
child of B names that child. Test modules (`#[cfg(test)] mod tests { ... }` at the end of a file)
are left out: a test may use what it likes. Prints every circle (a strongly connected component of
more than one module) and exits 1 when there is one; `--edges` prints the graph.

It also holds the modules to a layering, lowest first (LAYERS below): an import from a module to one
in a higher layer is an **upward import**. Each one is printed; the run fails when a module has no
layer, or when there are more upward imports than ALLOWED_UPWARD lists (each with its reason).

    python3 scripts/imports.py [--edges]        (make lint runs it)
"""
import os
import re
import sys

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")


def modules():
    """{module path: file}: every .rs under src/ but main.rs, with lib.rs as the crate root ""."""
    out = {}
    for d, _, files in os.walk(SRC):
        for f in files:
            if not f.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(d, f), SRC)[:-3].split(os.sep)
            if rel == ["main"] or rel[0] == "bin":
                continue
            if rel == ["lib"]:
                name = ""
            else:
                if rel[-1] == "mod":
                    rel = rel[:-1]
                name = "::".join(rel)
            out[name] = os.path.join(d, f)
    return out


def production_text(path):
    """The file without its trailing test module and without comments."""
    text = open(path, encoding="utf-8").read()
    m = re.search(r"^#\[cfg\(test\)\]\s*\nmod tests\b", text, re.M)
    if m:
        text = text[: m.start()]
    text = re.sub(r"//[^\n]*", "", text)
    return text


def use_paths(text):
    """Every `crate::a::b` / `super::a` path in `text`, with `use` groups expanded one level."""
    paths = []
    for m in re.finditer(r"\buse\s+((?:crate|super|self)(?:::\w+)*)::\{([^;]*)\};", text, re.S):
        base = m.group(1)
        for part in re.split(r",", m.group(2)):
            part = part.strip().split(" as ")[0].strip()
            if part and part != "self" and re.match(r"^[\w:]+", part):
                paths.append(base + "::" + re.match(r"^[\w:]+", part).group(0))
            elif part == "self":
                paths.append(base)
    for m in re.finditer(r"\b((?:crate|super)(?:::\w+)+)", text):
        paths.append(m.group(1))
    return paths


def resolve(path, here, mods):
    """The module a path names, seen from module `here`."""
    segs = path.split("::")
    if segs[0] == "crate":
        cur = []
        segs = segs[1:]
    else:
        cur = here.split("::") if here else []
        # `super` in a.rs (module a) is the crate; in a/b.rs (module a::b) it is a
        while segs and segs[0] == "super":
            cur = cur[:-1]
            segs = segs[1:]
    best = "::".join(cur)
    for s in segs:
        cand = "::".join(cur + [s])
        if cand in mods:
            cur.append(s)
            best = cand
        else:
            break
    return best


# The layers of src/, lowest first: a module may import its own layer and the ones below. The first
# prefix that matches a module (itself or a parent) gives its layer.
LAYERS = [
    # 0 foundations: data and kernel interfaces that know nothing of containers' lifecycles
    ("foundations", ["errors", "fsutil", "fstree", "mountapi", "mountinfo", "vmchild", "cgroups",
                     "policy", "duration", "trust", "tty", "paths", "egress_rule",
                     "size", "specmount"]),
    # 1 the pure policy: the hardening transform, the seccomp allowlist, the policy file
    ("policy", ["harden", "seccomp", "policy_file", "limits::rules"]),
    # 2 the host side of one container: state, identity, filesystem, verification, records
    ("mechanics", ["bundle", "context", "fault", "executor", "exeseal", "facts", "idmap", "userns",
                   "subids", "rootless", "kernel_features", "network", "limits", "views", "rootfs", "custodian",
                   "footprint", "container", "record", "verify", "logging", "docs_check", "fuzzing"]),
    # 3 the one launch path (create, exec, the foreground wait)
    ("launch", ["launch"]),
    # 4 the verbs
    ("verbs", ["commands"]),
    # 5 the command line and the crate root
    ("cli", ["cli", ""]),
]

# Upward imports kept on purpose: (from, to) -> why. At most three.
ALLOWED_UPWARD = {}


def layer_of(m):
    """The layer index of module `m` (None when no prefix matches)."""
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if m == p or (p and m.startswith(p + "::")):
                return i
    return None


def graph():
    mods = modules()
    edges = {m: set() for m in mods}
    for m, f in mods.items():
        for p in use_paths(production_text(f)):
            t = resolve(p, m, mods)
            # a module naming its own child, or its parent's re-export root, is not an import
            if t == m or t == "" or t.startswith(m + "::") and m:
                continue
            if m.startswith(t + "::"):
                continue
            edges[m].add(t)
    return edges


def circles(edges):
    """Strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def main():
    edges = graph()
    if "--edges" in sys.argv:
        for m in sorted(edges):
            print(f"{m or 'lib'} -> {', '.join(sorted(edges[m])) or '-'}")
    found = circles(edges)
    for c in found:
        inner = [f"{a} -> {b}" for a in c for b in sorted(edges[a]) if b in c]
        print(f"imports: circle of {len(c)} modules: {', '.join(c)}\n  " + "\n  ".join(inner))
    n_edges = sum(len(v) for v in edges.values())
    bad = 0
    unplaced = sorted(m for m in edges if layer_of(m) is None)
    for m in unplaced:
        print(f"imports: module {m} has no layer: add it to LAYERS in scripts/imports.py")
        bad += 1
    upward = sorted((a, b) for a in edges for b in edges[a]
                    if layer_of(a) is not None and layer_of(b) is not None and layer_of(b) > layer_of(a))
    for a, b in upward:
        why = ALLOWED_UPWARD.get((a, b))
        la, lb = LAYERS[layer_of(a)][0], LAYERS[layer_of(b)][0]
        if why:
            print(f"imports: upward {a} ({la}) -> {b} ({lb}), kept: {why}")
        else:
            print(f"imports: upward {a} ({la}) -> {b} ({lb}): move the definition down, or list it in ALLOWED_UPWARD with its reason")
            bad += 1
    if len(ALLOWED_UPWARD) > 3:
        print(f"imports: {len(ALLOWED_UPWARD)} upward imports kept: at most 3")
        bad += 1
    print(f"imports: {len(edges)} modules in {len(LAYERS)} layers, {n_edges} imports, "
          f"{len(found)} circle(s), {len(upward)} upward import(s)")
    sys.exit(1 if found or bad else 0)


if __name__ == "__main__":
    main()
