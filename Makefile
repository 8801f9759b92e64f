# profiler-tui — `make run` sets up what running needs and launches; `make test` sets up the rest and tests everything.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Debian packages the tool runs (fio; lsblk and blkid; nvme and smartctl for device identity and telemetry; ssh for
# ssh:// fleet hosts), python3-venv for .venv, and what builds the memory engine (gcc, make, libc6-dev).  No server:
# `make run` installs nothing that listens.
RUN_PKGS := fio util-linux e2fsprogs nvme-cli smartmontools openssh-client python3-venv gcc make libc6-dev
# Debian packages only the tests need: fdisk (partitioned loop devices), tmux (the TUI in a terminal), librsvg2-bin
# (the report's SVGs checked by rsvg-convert), jq, openssh-server (ssh:// fleet tests start their own sshd);
# podman and runc: tests/integration/test_fleet_containers.py drives podman's Docker-compatible API service
# (tests/helpers/podman_service.py); debootstrap: container-test and install-test make the base image with it
# (container/base-image.sh)
TEST_PKGS := fdisk tmux librsvg2-bin jq openssh-server podman runc debootstrap
# chromium: tests/integration/test_report_html_browser.py opens report.html in it, headless
# (tests/helpers/headless_chromium.py)
TEST_PKGS += chromium
# bpftrace: tests/integration/test_blocktrace_loop.py traces a loop device's block requests (layers = true); running
# needs it only for that key, so it is no run package
TEST_PKGS += bpftrace
# tests/vm: QEMU boots Debian's kernel (fetched by the tests with apt-get download) on this machine's root, with
# a static busybox in its initramfs and kmod's depmod/modprobe for its module tree.  Installed when missing and
# possible; without them the VM tests skip with one sentence (docs/testing.md, "Tests in QEMU guests")
VM_PKGS := qemu-system-x86 busybox-static kmod
# .venv: the app (editable) and its runtime dependencies for `make run`; the dev and pandas extras on top for
# `make test`.  Each stamp is re-made when pyproject.toml changes or the interpreter is gone.
RUN_STAMP := $(VENV)/.stamp-run
DEV_STAMP := $(VENV)/.stamp-dev
MEMLAT := native/memlat/build/memlat
# ruff (lint and import order; configured in pyproject.toml) checks these
RUFF_PATHS := app tests bench
# `make check`'s tests: tests/unit, the files that need no fio, no memory engine run, no root and no loop device
# (tests/integration holds those)
UNIT_TESTS := tests/unit
# ... in two pytest-xdist workers (the machine type has 2 CPUs; the unit tests share no fixed path, port or file),
# without the tests marked `slow` (a report of hundreds of points rendered, the claims' error-rate sweep: about half
# the tier's CPU-seconds; `make test` runs them), and no Hypothesis test past 20 examples, the first of its
# derandomized sequence (tests/conftest.py; `make test` runs each test's own count).  Bytecode is cached
# (__pycache__, ignored by git) even where the environment sets PYTHONDONTWRITEBYTECODE: without it every worker and
# every `python -m app` a test starts compiles app/ again and pytest rewrites every test file's asserts again
UNIT_OPTS := -n 2 --dist loadfile -m "not slow"
UNIT_ENV := PROFILER_TUI_TEST_EXAMPLES=20 PYTHONDONTWRITEBYTECODE=

# mypy: the type check of app/, the tests and the benches (configured in pyproject.toml)
.PHONY: typecheck lint check setup setup-run run-pkgs run-deps test-deps system-deps vm-deps venv venv-run native run install-test test-last test test-tiers print-test-tiers test-vm test-fast bench bench-fio bench-mem bench-report bench-tui bench-steady bench-precision bench-runs bench-fleet bench-peak bench-claims native-asan container-test clean

# what `make run` needs: runtime Debian packages, .venv with the runtime dependencies, the memory engine
setup-run: run-deps venv-run native

# everything: the above and what the tests need (`make test`); reuses what `make run` installed, and the reverse
setup: setup-run test-deps vm-deps venv

# $(call apt_install,PACKAGES,WHAT FOR,WHEN APT FAILS): install the packages dpkg does not list as installed;
# when apt fails, the third argument runs (empty: the recipe fails)
define apt_install
@missing=""; for p in $(1); do \
  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; done; \
if [ -n "$$missing" ]; then \
  echo "installing Debian packages$(2):$$missing"; \
  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
  { $$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q --no-install-recommends \
    $$missing; } $(3); \
fi
endef

# Debian packages, each set installed only where missing
run-deps:
	$(call apt_install,$(RUN_PKGS),,)

test-deps:
	$(call apt_install,$(TEST_PKGS), for the tests,)

# the runtime set, for container/install-test.sh (the pipx set-up installs it with apt-get)
run-pkgs:
	@echo $(RUN_PKGS)

# both sets (kept for scripts that name it)
system-deps: run-deps test-deps

vm-deps:
	$(call apt_install,$(VM_PKGS), for the VM tests,|| echo "could not install$$missing: the VM tests (tests/vm) will skip")

# a venv half-deleted is a venv to redo
venv-run:
	@test -x $(BIN)/python || rm -f $(RUN_STAMP) $(DEV_STAMP)
	@$(MAKE) --no-print-directory $(RUN_STAMP)
$(RUN_STAMP): pyproject.toml setup.py
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e .
	touch $(RUN_STAMP)

venv: venv-run
	@$(MAKE) --no-print-directory $(DEV_STAMP)
$(DEV_STAMP): $(RUN_STAMP)
	$(BIN)/pip install -q -e '.[dev,pandas]'
	touch $(DEV_STAMP)

native:
	$(MAKE) -C native/memlat

run: setup-run
	$(BIN)/profiler-tui

test: setup
	$(BIN)/ruff check $(RUFF_PATHS)
	$(MAKE) -C native/memlat test
	$(MAKE) native-asan
	@$(MAKE) --no-print-directory test-tiers BESIDE_PARALLEL=test-last

# `make test`'s pytest, in two tiers (docs/testing.md, "Two tiers") that together run every test once:
# - the parallel tier: every test not marked `serial`, in PARALLEL_WORKERS pytest-xdist workers, each file's tests in
#   one worker (loop devices come from `losetup -f`, ports are the kernel's choice, every test writes under its own
#   tmp_path, and many of these tests wait on fio's clock rather than a CPU);
# - then the serial tier: the tests marked `serial` (tests/conftest.py: tests/vm, the files whose assertions are
#   about time or noise, read machine-wide state or use a fixed port, and single tests so marked), one at a time on
#   an otherwise quiet machine, as the whole suite ran before.
# The second tier runs even when the first failed, so that one run shows every failure.
# BESIDE_PARALLEL (`make test`: test-last) names a target that runs beside the parallel tier, in a process group of
# its own with its output kept for the end: nothing of the parallel tier is about time, and the serial tier starts
# only once both are done.  Its failure fails the target.  (It is started as `make`, not $(MAKE): a recipe line that
# names $(MAKE) runs even under `make -n`, and this one would start pytest.)
# tests/integration/test_tiers.py checks that the two marker expressions split the collection with nothing left out
# and nothing twice (`make print-test-tiers` gives it these variables)
TEST_PATHS := tests
PARALLEL_TIER := -m "not serial"
SERIAL_TIER := -m serial
PARALLEL_WORKERS := 2
# A test that failed is run once more, alone, when at most RETRY_MAX failed in all (pytest's --last-failed, from
# the cache both tiers wrote): on a loaded 2-CPU machine a test about time or noise can miss once while the product
# is right.  Its name and first failure stay in the log under "failed once, passed alone"; a test that fails again,
# or more than RETRY_MAX failures (a real breakage), fail the target.
RETRY_MAX := 3
# The rerun's options: the tests the cache names, with their output.  A rerun selects a few tests of a file, so the
# snapshot plugin (syrupy) sees the file's other snapshots unused, which it counts a failure unless told to warn.
RETRY_OPTS := -q -rA --last-failed --last-failed-no-failures none --snapshot-warn-unused
# --durations of each tier (0: every test's, for finding where the time goes)
DURATIONS := 25
BESIDE_PARALLEL :=
test-tiers:
	@rc=0; brc=0; beside=""; rm -f .pytest_cache/v/cache/lastfailed; \
	if [ -n "$(BESIDE_PARALLEL)" ]; then \
	  blog=$$(mktemp /var/tmp/profiler-tui-beside.XXXXXX); \
	  setsid make --no-print-directory -C "$(CURDIR)" BIN="$(BIN)" $(BESIDE_PARALLEL) >"$$blog" 2>&1 & beside=$$!; \
	  trap 'kill -- -$$beside 2>/dev/null; wait $$beside; cat "$$blog"; rm -f "$$blog"; exit 130' INT TERM; \
	fi; \
	$(BIN)/python -m pytest -q --durations=$(DURATIONS) -n $(PARALLEL_WORKERS) --dist loadfile $(PARALLEL_TIER) $(TEST_PATHS) \
	  || rc=$$?; \
	if [ -n "$$beside" ]; then \
	  wait $$beside || brc=$$?; trap - INT TERM; \
	  echo; echo "== make $(BESIDE_PARALLEL) (ran beside the parallel tier)"; cat "$$blog"; rm -f "$$blog"; \
	fi; \
	$(BIN)/python -m pytest -q --durations=$(DURATIONS) $(SERIAL_TIER) $(TEST_PATHS) || rc=$$?; \
	if [ $$rc = 1 ]; then \
	  failed=$$($(BIN)/python -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' \
	    .pytest_cache/v/cache/lastfailed 2>/dev/null || echo 0); \
	  if [ "$$failed" -ge 1 ] && [ "$$failed" -le $(RETRY_MAX) ]; then \
	    echo; echo "== $$failed test(s) failed; each is run once more, alone:"; \
	    if $(BIN)/python -m pytest $(RETRY_OPTS) $(TEST_PATHS); then \
	      echo "== failed once, passed alone (a test that misses under load: see its first failure above)"; rc=0; \
	    fi; \
	  fi; \
	fi; \
	[ $$brc = 0 ] || echo "== make $(BESIDE_PARALLEL) failed (its log is above, after the parallel tier)"; \
	[ $$rc = 0 ] && [ $$brc = 0 ]

print-test-tiers:
	@echo 'TEST_PATHS=$(TEST_PATHS)'; echo 'PARALLEL_TIER=$(PARALLEL_TIER)'; echo 'SERIAL_TIER=$(SERIAL_TIER)'; echo 'RETRY_OPTS=$(RETRY_OPTS)'

# lint-imports, mypy and the container test, with the install test (container/install-test.sh: `make run`'s and
# pipx's set-up on pristine roots, about 2 minutes, mostly downloads) beside them in a process group of its own;
# its report follows theirs.  `make test` runs it beside pytest's parallel tier, whose tests assert nothing about
# time, and never beside the serial tier.  (The container test is named by its script, not $(MAKE): a recipe line
# that names $(MAKE) runs even under `make -n`.)
test-last:
	@log=$$(mktemp /var/tmp/profiler-tui-install-test.XXXXXX); \
	setsid bash container/install-test.sh >"$$log" 2>&1 & itest=$$!; \
	trap 'kill -- -$$itest 2>/dev/null; wait $$itest; cat "$$log"; rm -f "$$log"; exit 130' INT TERM; \
	rc=0; { $(BIN)/lint-imports && $(BIN)/mypy && bash container/test.sh; } || rc=$$?; \
	irc=0; wait $$itest || irc=$$?; \
	echo; echo "== the install test (ran beside the above)"; cat "$$log"; rm -f "$$log"; \
	[ $$rc = 0 ] && [ $$irc = 0 ]

# the install test alone (root; about 5 minutes): `make run`'s and pipx's set-up, each on a pristine bookworm root
install-test:
	bash container/install-test.sh

# the tests in QEMU guests alone (`make test` runs them with the rest): real NVMe, SATA, two NUMA nodes, ssh://
test-vm: setup
	$(BIN)/python -m pytest -q tests/vm

# everything but the container build
test-fast: setup
	$(BIN)/ruff check $(RUFF_PATHS)
	$(MAKE) -C native/memlat test
	@$(MAKE) --no-print-directory test-tiers
	$(BIN)/lint-imports
	$(BIN)/mypy

bench: bench-fio bench-mem bench-report bench-tui bench-steady bench-runs bench-fleet

bench-fio: setup
	$(BIN)/python bench/fio_overhead.py

bench-mem: setup
	$(MAKE) -C native/memlat bench

# `report` as a process on a synthetic 120-point seed-matrix-shaped directory and a 1,008-point sweep;
# prints both medians and their ratio (targets: ratio ≤ 2, the 1,008-point report under 2 s)
bench-report: setup
	$(BIN)/python bench/report_speed.py --repeat 5

# TUI first screen (target < 1.5 s) and each key's p50/p95/max latency with fio running (target: p95 <= 300 ms);
# the tests only assert bounds about 5x looser, so the product figures are measured here
bench-tui: setup
	$(BIN)/python bench/tui_latency.py --starts 5

# seed-p4600 fixed against steady-state (wall share, IOPS ratio) and qd-scaling against qd-knee (depth found,
# wall share), on a RAM-backed loop device the script creates and removes; about 12 minutes
bench-steady: setup
	$(BIN)/python bench/steady.py

# the 95 % intervals' coverage (20 x 10 s 4K randread QD16 runs against a 120 s interleaved reference; the
# built-in engine's idle latency likewise) and seed-p4600 fixed runtime=30 against precision=2% (IOPS ratio,
# wall share, precision reached), on a RAM-backed loop device the script creates and removes; about 20 minutes.
# Not part of `make bench` or `make test`; `bench/precision.py --quick` is a few-minute smoke test
bench-precision: setup
	$(BIN)/python bench/precision.py

# the runs browser listing 500 synthetic results directories: the core's scan and, in the TUI, key to full
# table (target < 0.5 s)
bench-runs: setup
	$(BIN)/python bench/runs_browser.py

# quick (runtime 1) on 4 loopback agents against 1 (target: ≤ 1.3x the wall time), each host's figures, and the
# check that they are fio's own client_stats figures; RAM-backed loop devices made and removed by the script
bench-fleet: setup
	$(BIN)/python bench/fleet.py

# the peak preset against fio io_uring (registered files, fixed buffers, QD128, one job per CPU) and libaio, run in
# turn on a RAM-backed loop device the script creates and removes: IOPS, IOPS per busy CPU (/proc/stat) and
# peak / best reference (acceptance: at least 0.9); about 15 minutes on 2 CPUs.  Not part of `make bench`
bench-peak: setup
	$(BIN)/python bench/peak.py

# every claim the report and `compare` make (intervals, "real", "within noise", trends, knees, operating points,
# supported tails, memory knees) scored on thousands of generated results directories of known truth; prints the
# error-rate table against its targets (docs/claims.md).  A few minutes, no root, no fio.  Its quick mode on a
# fixed seed is tests/unit/test_claims.py, part of `make test`
bench-claims: setup
	$(BIN)/python -m bench.claims

typecheck: setup
	$(BIN)/mypy

lint: setup
	$(BIN)/ruff check $(RUFF_PATHS)

# the inner loop: ruff, mypy, the import contract and the tests that need no fio and no root; prints its time
check: setup
	@start=$$(date +%s.%N); rc=0; \
	$(BIN)/ruff check $(RUFF_PATHS) && $(BIN)/mypy && $(BIN)/lint-imports && \
	  $(UNIT_ENV) $(BIN)/python -m pytest -q $(UNIT_OPTS) $(UNIT_TESTS) || rc=$$?; \
	$(BIN)/python -c 'import sys, time; print(f"make check: {time.time() - float(sys.argv[1]):.1f} s")' $$start; \
	exit $$rc

native-asan:
	$(MAKE) -C native/memlat asan-test

# Builds the image with podman and runs the tool inside it (container/test.sh; root; docs/container.md).
container-test:
	bash container/test.sh

clean:
	rm -rf $(VENV) native/memlat/build
