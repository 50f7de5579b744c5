#!/bin/bash
# tests/matrix/run.sh - the kernel x cgroup matrix: Docker, the CRI and the hardening probe, under
# runc and rloxsc, on each cell of tests/matrix/cells.sh (Debian's kernels in QEMU guests on the host's
# own root, and the host itself). As root:
#
#   tests/matrix/run.sh [CELL...]         default: every cell (MATRIX_CELLS overrides)
#
# For each cell it builds (or reuses) the guest (guest.sh), shares rloxsc, the image and a run.sh into
# it, boots it (boot.sh), and reads the RESULT lines cell.sh printed there; the host cell runs cell.sh
# here. Then it prints, per cell, the kernel and cgroup layout that actually ran, each scenario's result
# under runc and rloxsc, `N passed, M failed` per runtime and the cell's wall time, and last the
# differences: a scenario rloxsc fails that runc passes (or a contained-* scenario, which checks
# rloxsc's containment and must fail under runc, that rloxsc fails or runc passes). A difference
# listed in known-failures (cell, scenario, why) is reported and does not fail the run; any other does,
# and so does a known failure that no longer fails (the list must be kept true), and a cell that does
# not boot or report.
#
# runc's column: MATRIX_RUNC=live runs it in every cell (as `make matrix-baseline` does, which also
# rewrites baseline/CELL.tsv); MATRIX_RUNC=baseline (the default) takes it from baseline/CELL.tsv and
# runs rloxsc only.
# Env: RLOXSC_BIN (default: make build), MATRIX_CELLS, MATRIX_RUNC, MATRIX_ONLY (regex of scenarios),
# MATRIX_CACHE (/var/tmp/rloxsc-matrix), MATRIX_TIMEOUT (per guest, s), MATRIX_KEEP=1 (keep shares).
set -uo pipefail
here=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=cells.sh
source "$here/cells.sh"
[ "$(id -u)" = 0 ] || { echo "matrix: must run as root" >&2; exit 2; }
export MATRIX_CACHE=${MATRIX_CACHE:-/var/tmp/rloxsc-matrix}
MODE=${MATRIX_RUNC:-baseline}
# a live cell runs both runtimes: twice the time under emulation
[ "$MODE" = live ] && export MATRIX_TIMEOUT=${MATRIX_TIMEOUT:-1800}
cells=${*:-${MATRIX_CELLS:-$MATRIX_ALL_CELLS}}
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.0f", b - a}'; }
T0=$(now)

if [ -n "${RLOXSC_BIN:-}" ]; then BIN=$(readlink -f "$RLOXSC_BIN")
else (cd "$repo" && make --no-print-directory build) || exit 1; BIN=$repo/target/x86_64-unknown-linux-gnu/release/rloxsc; fi
[ -x "$BIN" ] || { echo "matrix: $BIN is not an executable" >&2; exit 1; }
ROOTFS=$(readlink -f "${RLOXSC_TEST_ROOTFS:-$repo/bundles/demo/rootfs}")
[ -x "$ROOTFS/bin/sh" ] || (cd "$repo" && make --no-print-directory bundles) || exit 1

# what every cell uses from the host: Docker 20.10, containerd 1.6, runc, the CRI client's venv
W=$(mktemp -d /tmp/rloxsc-matrix.XXXXXX)
mkdir -p "$W" && export W
# shellcheck source=../clients/lib.sh
source "$repo/tests/clients/lib.sh"
rx_install_packages docker.io containerd runc jq containernetworking-plugins python3-venv iproute2 kmod apparmor util-linux \
    || { echo "matrix: cannot install the cells' packages" >&2; exit 1; }
export CRI_VENV=${MATRIX_CRI_VENV:-/var/tmp/rloxsc-matrix-cri-venv}
rx_cri_venv || { echo "matrix: cannot make the CRI client's venv in $CRI_VENV" >&2; exit 1; }
[ "${MATRIX_KEEP:-0}" = 1 ] || trap 'rm -rf "$W"' EXIT
mkdir -p "$W/image"
cp -a "$ROOTFS" "$W/image/rootfs"
tar --numeric-owner -C "$ROOTFS" -cf "$W/image/image.tar" .
# tests/write_path.rs (issue #28's suite), run in every cell by the contained-write-path scenario
cargo=$(command -v cargo || echo "$HOME/.cargo/bin/cargo")
WRITE_PATH_TESTS=$(cd "$repo" && "$cargo" test --release --locked --no-run --test write_path 2>&1 \
    | grep -o 'target/[^ )]*/deps/write_path-[0-9a-f]*' | tail -n 1)
[ -x "$repo/$WRITE_PATH_TESTS" ] && cp "$repo/$WRITE_PATH_TESTS" "$W/image/write_path-tests" \
    || echo "matrix: cannot build tests/write_path.rs (contained-write-path will fail)" >&2
runtimes="rloxsc"; [ "$MODE" = live ] && runtimes="runc rloxsc"

: >"$W/all"
for cell in $cells; do
    suite=$(matrix_cell_suite "$cell") || { echo "matrix: unknown cell $cell (cells: $MATRIX_ALL_CELLS)" >&2; exit 2; }
    c0=$(now)
    out=$MATRIX_CACHE/last-run/$cell
    rm -rf "$out"; mkdir -p "$out"
    echo "== matrix cell $cell"
    if [ "$cell" = host ]; then
        # natively fast: runc's column always runs live here
        MATRIX_CELL=$cell MATRIX_RUNTIMES="runc rloxsc" MATRIX_RLOXSC=$BIN MATRIX_IMAGE_TAR=$W/image/image.tar MATRIX_IMAGE_DIR=$W/image \
            MATRIX_CRI_VENV=$CRI_VENV MATRIX_OUT=$out W=$W/host bash "$here/cell.sh" >"$out/output.log" 2>"$out/stderr.log"
        rc=$?
    else
        "$here/guest.sh" "$suite" || { echo "matrix: the guest of $cell could not be built" >&2; }
        share=$(mktemp -d "$MATRIX_CACHE/share-$cell.XXXXXX")
        cp "$BIN" "$share/rloxsc"
        cp "$here/cell.sh" "$share/cell.sh"   # a copy: the checkout may change while the guest runs
        cp -a "$W/image/." "$share/"
        cat >"$share/run.sh" <<RUN
#!/bin/bash
export MATRIX_CELL=$cell MATRIX_RUNTIMES="$runtimes" MATRIX_RLOXSC=$share/rloxsc MATRIX_IMAGE_TAR=$share/image.tar MATRIX_IMAGE_DIR=$share
export MATRIX_CRI_VENV=$CRI_VENV MATRIX_OUT=/.matrix-out W=/tmp/rxm MATRIX_ONLY="${MATRIX_ONLY:-}" MATRIX_REPEAT="${MATRIX_REPEAT:-1}" MATRIX_DEBUG="${MATRIX_DEBUG:-}" MATRIX_REPO=$repo
exec bash $share/cell.sh
RUN
        chmod 0755 "$share/run.sh"
        MATRIX_INIT=$(matrix_cell_init "$cell") "$here/boot.sh" "$suite" "$share" "$out"
        rc=$?
        [ "${MATRIX_KEEP:-0}" = 1 ] || rm -rf "$share"
    fi
    wall=$(secs "$c0" "$(now)")
    head=$(grep -m1 '^# cell ' "$out/output.log" 2>/dev/null)
    grep -E '^# (daemons|cell wall)' "$out/output.log" 2>/dev/null
    if [ -z "$head" ] || ! grep -q '^# cell wall time' "$out/output.log"; then
        echo "CELL-FAILED	$cell	the cell did not run to its end (status $rc): $(tail -n 3 "$out/console.log" "$out/stderr.log" 2>/dev/null | tr '\n' ' ' | cut -c1-400)" >>"$W/all"
        echo "  $cell: did not boot or report (status $rc); logs in $out"
        continue
    fi
    echo "${head#\# }; wall ${wall} s" | sed 's/^/  /'
    printf 'CELL\t%s\t%s\t%s\n' "$cell" "${head#\# cell $cell: }" "$wall" >>"$W/all"
    grep -P '^RESULT\t' "$out/output.log" | sed "s/^RESULT\t/RESULT\t$cell\t/" >>"$W/all"
    if [ "$MODE" = live ] && [ -n "${MATRIX_WRITE_BASELINE:-}" ] && [ -z "${MATRIX_ONLY:-}" ]; then
        mkdir -p "$here/baseline"
        { echo "# runc's results in cell $cell (${head#\# cell $cell: }), written by make matrix-baseline"
          grep -P '^RESULT\trunc\t' "$out/output.log" | cut -f3,4,6; } >"$here/baseline/$cell.tsv"
    fi
done

# ---- the table and the judgement --------------------------------------------------------------------
python3 - "$W/all" "$here/baseline" "$here/known-failures" "$MODE" <<'PY'
import sys, os, re
allf, basedir, knownf, mode = sys.argv[1:5]
cells, res, failed_cells = [], {}, []
for line in open(allf):
    f = line.rstrip("\n").split("\t")
    if f[0] == "CELL": cells.append((f[1], f[2], f[3]))
    elif f[0] == "CELL-FAILED": failed_cells.append((f[1], f[2]))
    elif f[0] == "RESULT": res[(f[1], f[2], f[3])] = (f[4], f[6] if len(f) > 6 else "")
known = {}
if os.path.exists(knownf):
    for line in open(knownf):
        line = line.strip()
        if not line or line.startswith("#"): continue
        cell, scen, why = (line.split(None, 2) + [""])[:3]
        known[(cell, scen)] = why   # scenario `*`: every difference of the cell (a cell rloxsc refuses)
blocking, notes, total_p, total_f = [], [], 0, 0
for cell, head, wall in cells:
    runc = {}
    live = {s: v for (c, r, s), v in res.items() if c == cell and r == "runc"}
    if live:
        runc = live
    elif mode == "baseline":
        bf = os.path.join(basedir, cell + ".tsv")
        if os.path.exists(bf):
            for line in open(bf):
                if line.startswith("#") or not line.strip(): continue
                s, st, why = (line.rstrip("\n").split("\t") + [""])[:3]
                runc[s] = (st, why)
        else:
            blocking.append(f"{cell}: no runc baseline {bf} (make matrix-baseline)")
    rl = {s: v for (c, r, s), v in res.items() if c == cell and r == "rloxsc"}
    if os.environ.get("MATRIX_ONLY"):
        runc = {s: v for s, v in runc.items() if s in rl}   # only what ran is judged
    scen = sorted(set(runc) | set(rl), key=lambda s: list(rl).index(s) if s in rl else 999)
    wild = known.get((cell, "*"))
    cell_differs = False
    print(f"\n== cell {cell}: {head}; wall {wall} s" + (" (runc: baseline/%s.tsv)" % cell if not live else ""))
    print(f"   {'scenario':24} {'runc':6} {'rloxsc':6}  rloxsc's reason")
    for s in scen:
        a = runc.get(s, ("-", ""))[0]; b, why = rl.get(s, ("-", ""))
        contained = s.startswith("contained-")
        differs = (b != "pass" and (a == "pass" or contained)) or (contained and a == "pass")
        mark = ""
        if differs:
            cell_differs = True
            if (cell, s) in known or wild is not None:
                mark = "  [known: %s]" % known.get((cell, s), wild)
            else:
                mark = "  [DIFFERENCE]"
                blocking.append(f"{cell} {s}: runc {a}, rloxsc {b}: {why}")
        elif (cell, s) in known and b == "pass":
            blocking.append(f"{cell} {s}: listed in known-failures but passes now: remove it")
        print(f"   {s:24} {a:6} {b:6}  {why[:150]}{mark}")
    if wild is not None and not cell_differs:
        blocking.append(f"{cell} *: listed in known-failures but nothing differs now: remove it")
    # `CELL * /REGEX/ why`: every rloxsc failure of the cell must say REGEX (the refusal named, and
    # no other cause hidden behind it)
    m = re.match(r"/(.+?)/\s", wild or "")
    if m and cell_differs:
        for s, v in rl.items():
            if v[0] != "pass" and not re.search(m.group(1), v[1]):
                blocking.append(f"{cell} {s}: rloxsc fails without saying /{m.group(1)}/: {v[1]}")
    for r, col in (("runc", runc), ("rloxsc", rl)):
        p = sum(1 for v in col.values() if v[0] == "pass"); f = sum(1 for v in col.values() if v[0] != "pass")
        if r == "rloxsc": total_p += p; total_f += f
        print(f"   cell {cell} {r}: {p} passed, {f} failed")
for cell, why in failed_cells:
    print(f"\n== cell {cell}: FAILED TO RUN: {why}")
    blocking.append(f"{cell}: the cell did not boot or report")
print()
for b in blocking: print("matrix: " + b)
print(f"matrix rloxsc over {len(cells)} cell(s): {total_p} passed, {total_f} failed; {len(blocking)} blocking difference(s)")
sys.exit(1 if blocking else 0)
PY
rc=$?
echo "== matrix wall time $(secs "$T0" "$(now)") s (cells: $cells; runc column: $MODE); logs in $MATRIX_CACHE/last-run/"
exit $rc
