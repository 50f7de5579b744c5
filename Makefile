# rloxsc — build, demo, test, bench, install.
#   make demo    the hardened demo container from the careless demo bundle (installs what it needs)
#   make test    unit + integration tests, real containers, as root (installs what it needs)
SHELL := /bin/bash
CARGO ?= $(shell command -v cargo 2>/dev/null || echo $(HOME)/.cargo/bin/cargo)
PREFIX ?= /usr/local
BIN := target/x86_64-unknown-linux-gnu/release/rloxsc
FAULT_BIN := target/fault/x86_64-unknown-linux-gnu/release/rloxsc
DEMO := bundles/demo
ROOT ?= /run/rloxsc
DEMO_PORT := 47123

.PHONY: docs-check all deps build build-fault bundles demo lint test unit-test integration-test test-v2 test-matrix matrix-baseline test-clients adversarial bench bench-clients fuzz install uninstall fmt clean

all: build

deps:
	@bash scripts/deps.sh

# The production binary: seccomp always compiled in, libseccomp linked statically.
build: deps
	$(CARGO) build --release --locked
	@! ldd $(BIN) 2>/dev/null | grep -q libseccomp || { echo "error: $(BIN) links libseccomp dynamically" >&2; exit 1; }

# The test-only fault-injection binary (never installed), in its own target dir.
build-fault: deps
	CARGO_TARGET_DIR=target/fault $(CARGO) build --release --locked --features fault-injection

bundles: deps
	bash scripts/build-bundle.sh $(DEMO)

# Runs the escape demo under a deliberately careless config: rloxsc hardens it anyway.
demo: build bundles
	@cp $(DEMO)/config.careless.json $(DEMO)/config.json
	@python3 -m http.server --bind 127.0.0.1 $(DEMO_PORT) >/dev/null 2>&1 & echo $$! > /tmp/rloxsc-demo-listener.pid; sleep 0.3; \
	echo "== rloxsc run of bundles/demo (config: all capabilities, host network, no seccomp, writable root, no limits)"; \
	$(BIN) --root $(ROOT) --log /tmp/rloxsc-demo.log run --bundle $(DEMO) rloxsc-demo-$$$$; rc=$$?; \
	kill $$(cat /tmp/rloxsc-demo-listener.pid) 2>/dev/null; rm -f /tmp/rloxsc-demo-listener.pid $(DEMO)/config.json; \
	echo "== what rloxsc changed in the caller's config (from /tmp/rloxsc-demo.log):"; \
	grep -o 'container rloxsc-demo-[0-9]*: [^"]*' /tmp/rloxsc-demo.log | tail -n 40 | sed 's/^container [^:]*: /  - /'; \
	exit $$rc

unit-test: deps
	$(CARGO) test --release --locked --lib --bins

integration-test: build build-fault bundles
	$(CARGO) test --release --locked --no-fail-fast --tests -- --test-threads=2

# README's hardening table, SECURITY.md's test counts and docs/SPECIFICATION.md's rows against the
# code (src/docs_check.rs, the specification test in src/policy.rs); RLOXSC_DOCS_FIX=1 rewrites the counts.
docs-check: deps
	$(CARGO) test --release --locked --lib -- docs_check specification_

# The vendored libcontainer is the crates.io release plus vendor/patches (vendor/README.md);
# formatting; lints (clippy with every warning an error; the crate's [lints] deny unsafe blocks
# without a SAFETY comment).
lint: deps docs-check
	python3 scripts/imports.py
	bash vendor/check.sh
	$(CARGO) fmt --all --check
	$(CARGO) clippy --release --locked --all-targets -- -D warnings

# Everything: lints, unit tests, integration tests that start real containers on this host (needs root),
# the fuzz targets, the cgroup v2 suite in a throwaway QEMU guest, the kernel matrix's Debian 12 6.1
# (cgroupfs driver) and 6.12 with systemd as PID 1 (systemd driver) cells and the refusal on Debian
# 11's 5.10 (QEMU guests), runc's own integration suite against rloxsc and runc, Docker, Podman, ctr,
# containerd 1.6's and 2.x's CRI, agent frameworks (SWE-ReX, smolagents, autogen) and the code-eval clients (llm-sandbox, the docker SDK) driving
# rloxsc, the workload comparison and contrib/code-eval.
test: lint build build-fault bundles
	@[ "$$(id -u)" = 0 ] || { echo "make test needs root: the integration tests create real containers" >&2; exit 1; }
	$(CARGO) test --release --locked --no-fail-fast -- --test-threads=2
	bash scripts/deps.sh --fuzz && bash scripts/fuzz.sh 30
	RLOXSC_BIN=$(BIN) bash tests/v2guest/run.sh
	RLOXSC_BIN=$(BIN) bash tests/matrix/run.sh debian12-6.1 systemd-6.12
	RLOXSC_BIN=$(BIN) MATRIX_ONLY='run-rm|detached' bash tests/matrix/run.sh debian11-5.10
	bash scripts/bats.sh --rloxsc $(BIN)
	RLOXSC_NO_BUILD=1 bash tests/clients/run.sh all
	bash scripts/workload-report.sh
	/usr/bin/python3 contrib/code-eval/run-snippets.py

# runc 1.1.5's own integration suite (tests/integration/*.bats of Debian's runc source package, got
# with apt-get source and built under target/bats, never committed) against rloxsc and Debian's runc
# side by side (make test runs all of it, ~4 min); BATS_FILES="exec kill ..." runs some files only.
# The tests rloxsc fails on purpose, each with its rule, are in tests/bats-expected-failures.txt;
# anything else it fails fails the target.
.PHONY: bats
bats: build
	bash scripts/bats.sh $(if $(BATS_FILES),--files "$(BATS_FILES)")

# The real clients alone (installs docker.io, containerd, podman from Debian's archive, llm-sandbox from PyPI).
test-clients: build bundles
	RLOXSC_NO_BUILD=1 bash tests/clients/run.sh all

# The cgroup v2 suite alone (a QEMU guest with pure cgroup v2; this host may be v1).
test-v2: build bundles
	RLOXSC_BIN=$(BIN) bash tests/v2guest/run.sh

# The kernel x cgroup matrix alone (tests/matrix: Debian 11's 5.10, 12's 6.1, bookworm-backports' 6.12
# with busybox and with systemd as PID 1, in QEMU guests on this host's root, and this host): Docker,
# the CRI and the hardening probe under rloxsc, judged against runc's recorded results
# (tests/matrix/baseline). MATRIX_CELLS="debian12-6.1 host" picks cells; RLOXSC_BIN tests another binary.
test-matrix: build bundles
	RLOXSC_BIN=$(BIN) bash tests/matrix/run.sh $(MATRIX_CELLS)

# The same with runc's column run too, rewriting tests/matrix/baseline/<cell>.tsv (commit the change).
matrix-baseline: build bundles
	MATRIX_RUNC=live MATRIX_WRITE_BASELINE=1 RLOXSC_BIN=$(BIN) bash tests/matrix/run.sh $(MATRIX_CELLS)

# The adversarial suite alone (tests/adversarial.rs): bundles/test/adversary.c's escape attempts under
# a permissive config, runc's default config, host namespaces by path and `exec`; CVE-2019-5736,
# CVE-2024-21626 and symlinked images. Prints the attempt x config table and "N contained, M escaped".
adversarial: build bundles
	$(CARGO) test --release --locked --test adversarial -- --nocapture --test-threads=2

# Real workloads under the strict allowlist (docs/workloads.md): CPython's regression tests, Node.js,
# gcc, each under rloxsc and under runc + Docker's default seccomp profile in the same run. The rootfs
# (Debian bookworm, mmdebstrap) is cached in bundles/workload/rootfs. workload-report rewrites the
# results in docs/workloads.md; make test runs the same comparison without touching the doc.
.PHONY: workload-bundle workload-report workload-syscalls code-eval
workload-bundle:
	bash scripts/build-workload-bundle.sh

workload-report: build
	bash scripts/workload-report.sh --doc

# Each workload under rloxsc with strace attached from the host: the syscalls rloxsc's filter answered.
workload-syscalls: build
	bash scripts/workload-report.sh --trace --doc

# contrib/code-eval: 23 snippets, one container each, on the workload bundle's shared read-only rootfs.
code-eval: build workload-bundle
	/usr/bin/python3 contrib/code-eval/run-snippets.py

# The fuzz targets in fuzz/ (config.json and policy file parsing + the hardening transform, checked
# against the hardening invariants), FUZZ_SECONDS each; `make test` runs them for 30 s each.
FUZZ_SECONDS ?= 600
fuzz: deps
	@bash scripts/deps.sh --fuzz
	bash scripts/fuzz.sh $(FUZZ_SECONDS)

bench: build bundles
	@bash scripts/deps.sh --bench
	bash scripts/bench.sh

# docker/podman/ctr run --rm through rloxsc vs runc (starts its own containerd and dockerd).
bench-clients: build bundles
	bash scripts/bench-clients.sh

# The installed binary is made immutable (chattr +i): sealed at rest against CVE-2019-5736, rloxsc runs
# it as is instead of re-executing itself from a read-only bind mount on every create, run and exec
# (SECURITY.md). Where the filesystem cannot, it stays as installed and rloxsc re-executes.
INSTALLED := $(DESTDIR)$(PREFIX)/bin/rloxsc
install: build
	@if [ -e $(INSTALLED) ]; then chattr -i $(INSTALLED) 2>/dev/null || true; fi
	install -D -m 0755 $(BIN) $(INSTALLED)
	@if chattr +i $(INSTALLED) 2>/dev/null; then echo "$(INSTALLED): immutable (chattr +i), sealed at rest; make uninstall clears it"; \
	else echo "$(INSTALLED): not made immutable (the filesystem cannot): rloxsc re-executes itself from a read-only bind mount instead"; fi

uninstall:
	@if [ -e $(INSTALLED) ]; then chattr -i $(INSTALLED) 2>/dev/null || true; fi
	rm -f $(INSTALLED)

fmt:
	$(CARGO) fmt --all

clean:
	$(CARGO) clean
	rm -rf $(DEMO)/rootfs bundles/workload/rootfs bundles/workload/rootfs.new bundles/workload/.rootfs.stamp
