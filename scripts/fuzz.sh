#!/usr/bin/env bash
# fuzz.sh - build rloxsc's fuzz targets (fuzz/, cargo-fuzz + libFuzzer) and run each for a while.
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]     default 30 s, every target
# Needs cargo-fuzz (`scripts/deps.sh --fuzz`). Works on a stable toolchain: cargo-fuzz passes nightly
# flags (-Z...) to rustc, which RUSTC_BOOTSTRAP=1 lets a stable rustc accept. No sanitizer: the code
# under test is safe Rust, so libFuzzer's coverage guidance and panics are what find bugs (and runs
# are ~2x faster without ASan).
# Inputs found along the way go to fuzz/target/corpus-work/<target> (not committed); the committed
# seeds are fuzz/corpus/<target>. A crash (panic = a broken invariant) is written to
# fuzz/artifacts/<target>/ and fails the script; replay it with
#   fuzz/target/x86_64-unknown-linux-gnu/release/<target> fuzz/artifacts/<target>/crash-...
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-30}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(harden_spec policy_toml)
if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
    export PATH="$HOME/.cargo/bin:$PATH"
fi
cargo fuzz --version >/dev/null 2>&1 || { echo "fuzz: cargo-fuzz missing: run scripts/deps.sh --fuzz" >&2; exit 1; }

export RUSTC_BOOTSTRAP=1
t0=$(date +%s)
mkdir -p fuzz/target
if ! cargo fuzz build --fuzz-dir fuzz --sanitizer none >fuzz/target/build.log 2>&1; then
    tail -n 40 fuzz/target/build.log >&2
    echo "fuzz: build failed (fuzz/target/build.log)" >&2
    exit 1
fi
echo "fuzz: built in $(( $(date +%s) - t0 )) s"
bin=fuzz/target/x86_64-unknown-linux-gnu/release
status=0
for t in "${targets[@]}"; do
    mkdir -p "fuzz/target/corpus-work/$t" "fuzz/artifacts/$t"
    log=fuzz/target/fuzz-$t.log
    set +e
    "$bin/$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="fuzz/artifacts/$t/" "fuzz/target/corpus-work/$t" "fuzz/corpus/$t" >"$log" 2>&1
    rc=$?
    set -e
    done_line=$(grep -a 'DONE\|^#[0-9]' "$log" | tail -n 1 || true)
    runs=$(grep -a '^stat::number_of_executed_units' "$log" | awk '{print $2}' || true)
    eps=$(grep -a '^stat::average_exec_per_sec' "$log" | awk '{print $2}' || true)
    echo "fuzz: $t: ${runs:-?} inputs in ${secs} s (${eps:-?}/s), ${done_line#*DONE}"
    if [ $rc -ne 0 ]; then
        status=1
        echo "fuzz: $t FAILED (exit $rc); the end of its log ($log):" >&2
        grep -a -B2 -A12 'panicked at' "$log" | cut -c1-600 | head -n 40 >&2 || tail -n 30 "$log" >&2
        ls fuzz/artifacts/"$t"/ >&2
    fi
done
exit $status
