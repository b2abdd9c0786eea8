# rerace: every target does its own set-up (Debian packages) on a fresh machine.
#   make demo   build, then show rerace finding a race and replaying it
#   make test   build and run every test: the default build (-O2), the no-CUDA build (-O0),
#               and the determinism check across the two
#   make test-sanitize   the test suites under AddressSanitizer + UndefinedBehaviorSanitizer
#   make bench  build and run the benchmarks
#   make test-pip   the wheel (`pip wheel .`, `auditwheel repair`: build/dist) installed into a
#               fresh venv (build/pip-venv), `ldd` of what it installed, then the installed
#               rerace, `import rerace` and the example project's pytest (examples/pytest-triton)
#   make wheel  the self-contained manylinux wheel only, in build/dist
JOBS    ?= $(shell nproc)
WERROR  ?= OFF
CUDA    ?= $(shell command -v nvcc >/dev/null 2>&1 && echo ON || echo OFF)
CMAKE_FLAGS ?=
# The Python environments of the real-code engine and its tests (tools/scripts/python-envs.sh).
PY_ROOT := $(CURDIR)/build/py
PY_FLAGS = -DRERACE_PY_ROOT=$(PY_ROOT)
# PYTHON_ENVS=OFF: no Python environments (4.4 GB), for a build that runs the C++ models only
# (a CI fuzz job, say); the python engine's tests then skip, saying what is missing.
PYTHON_ENVS ?= ON

.PHONY: test-pip wheel all deps build build-nocuda build-asan build-fuzz build-tsan test-tsan fuzz test test-nocuda test-sanitize demo bench clean

all: build

deps:
	@tools/scripts/install-deps.sh
	@if [ "$(PYTHON_ENVS)" != OFF ]; then tools/scripts/python-envs.sh $(PY_ROOT); \
	 else echo "deps: PYTHON_ENVS=OFF: no Python environments (the python engine's tests skip)"; fi

build: deps
	cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRERACE_WERROR=$(WERROR) \
	  -DRERACE_CUDA=$(CUDA) $(PY_FLAGS) $(CMAKE_FLAGS)
	cmake --build build -j $(JOBS)

# The replay side without any CUDA, at -O0: what a nightly CI runner without CUDA builds.
build-nocuda: deps
	cmake -S . -B build-nocuda -G Ninja -DCMAKE_BUILD_TYPE=Debug -DRERACE_WERROR=$(WERROR) \
	  -DRERACE_CUDA=OFF -DRERACE_BENCH=OFF $(PY_FLAGS) $(CMAKE_FLAGS)
	cmake --build build-nocuda -j $(JOBS)

build-asan: deps
	cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS=-O1 \
	  -DRERACE_WERROR=$(WERROR) -DRERACE_CUDA=OFF -DRERACE_BENCH=OFF \
	  -DRERACE_SANITIZE=address,undefined $(PY_FLAGS) $(CMAKE_FLAGS)
	cmake --build build-asan -j $(JOBS)

test: build build-nocuda
	cd build && ctest --output-on-failure -j $(JOBS) -LE gpu
	cd build-nocuda && ctest --output-on-failure -j $(JOBS) -LE gpu
	tools/scripts/check-determinism.sh build/bin/rerace build-nocuda/bin/rerace

# The pip package from a clean state: the C++ build dependencies (Debian), then
# tools/scripts/test-pip.sh (its venv's Python: build/py/venv312's when there, else python3;
# RERACE_VENV_PYTHON=... another). Builds only the rerace CLI, the extension and (with nvcc) the
# CUPTI library (Release, no LTO, ccache when installed) in a temporary folder, repairs the wheel
# with auditwheel (build/wheel-tools) into build/dist, installs it and checks it.
test-pip:
	@tools/scripts/install-deps.sh
	tools/scripts/test-pip.sh

# The same wheel, built and repaired, without the tests: build/dist/rerace-*-manylinux_*.whl.
wheel:
	@tools/scripts/install-deps.sh
	tools/scripts/test-pip.sh wheel

test-sanitize: build-asan
	cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --output-on-failure -j $(JOBS) -LE gpu

# ThreadSanitizer over the recorder's buffers and writer, the native autotuner (the code that
# runs on the recorded program's threads), the fiber scheduler (sim/src/fiber.cc tells TSan of
# every switch: each fiber is a TSan fiber) and `fuzz --jobs`, whose worker threads each run
# schedulers of their own (Campaign.*; and check --threads --jobs's, Certify.*; and the CLI's jobs
# test through a TSan rerace).
# Left out here: long single-threaded searches (140 s under TSan for the bounded-DPOR one); the
# plain, ASan and UBSan runs of make test and test-sanitize run them.
TSAN_SIM_SLOW = Explore.DporReachesEveryOutcomeTheNaiveSearchReaches:ExploreWorkers.OneWorkerIsTheOneWorkerSearchRunForRun:Explore.BoundedDporCountsTheRacesTheBoundCutAndWithoutCutsReachesEveryOutcome:Strategies.SurwSamplesInterleavingsUniformly:ClassicBugs.PctFindsEachBugAtLeastAsOftenAsItsBound:Plan.PlannedPicksAreThePicksMade
build-tsan: deps
	cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS=-O1 \
	  -DRERACE_WERROR=$(WERROR) -DRERACE_CUDA=OFF -DRERACE_BENCH=OFF \
	  -DRERACE_SANITIZE=thread $(PY_FLAGS) $(CMAKE_FLAGS)
	cmake --build build-tsan -j $(JOBS) --target recorder_test kernels_test sim_test replay_test \
	  cli_test rerace

# The native autotuner's tests race real threads on purpose (its fields are atomic per
# access, as under the GIL); the fiber-based replay tests in the same binary are left out.
# sim_test leaves out its longest searches (minutes under TSan, one thread, nothing more to
# see; the many-worker searches run); about 2 minutes in all on 2 cores.
test-tsan: build-tsan
	TSAN_OPTIONS=halt_on_error=1 build-tsan/tests/recorder_test
	TSAN_OPTIONS=halt_on_error=1 build-tsan/tests/kernels_test --gtest_filter='Autotuner.*'
	TSAN_OPTIONS=halt_on_error=1 build-tsan/tests/sim_test --gtest_filter='-$(TSAN_SIM_SLOW)'
	RERACE_SOURCE=$(CURDIR) RERACE_BIN=$(CURDIR)/build-tsan/bin TSAN_OPTIONS=halt_on_error=1 \
	  build-tsan/tests/replay_test --gtest_filter='Campaign.*:Certify.*'
	RERACE_SOURCE=$(CURDIR) RERACE_BIN=$(CURDIR)/build-tsan/bin TSAN_OPTIONS=halt_on_error=1 \
	  build-tsan/tests/cli_test --gtest_filter='CliCi.FuzzJobs*'

# libFuzzer, under ASan + UBSan, with clang: the trace reader; trace -> programs -> one small
# replay; schedule lines; fix descriptions. FUZZ_SECONDS=60 by default, shared out: half each to
# the reader and the replay, a quarter each to schedules and fixes (90 s in all at 60). Inputs
# up to 512 KiB, and 1 GiB of RSS (512 MiB per allocation): enough to grow an input that
# amplifies (a 270 KB trace once built 660 MB), small enough to be stopped by it.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS = reader_fuzz replay_fuzz schedule_fuzz fix_fuzz
FUZZ_FLAGS = -rss_limit_mb=1024 -malloc_limit_mb=512 -timeout=10 -print_final_stats=1
# ASan's quarantine (256 MiB by default) would count against the RSS limit; 32 MiB keeps the
# limit a measure of what rerace builds.
FUZZ_ENV = ASAN_OPTIONS=quarantine_size_mb=32
build-fuzz:
	RERACE_FUZZ=1 tools/scripts/install-deps.sh
	CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=Debug \
	  -DCMAKE_CXX_FLAGS=-O1 -DRERACE_WERROR=$(WERROR) -DRERACE_CUDA=OFF -DRERACE_BENCH=OFF \
	  -DRERACE_TESTS=ON -DRERACE_FUZZ=ON -DRERACE_SANITIZE=address,undefined $(CMAKE_FLAGS)
	cmake --build build-fuzz -j $(JOBS) --target $(FUZZ_TARGETS)

fuzz: build-fuzz
	mkdir -p build-fuzz/corpus/reader build-fuzz/corpus/replay build-fuzz/corpus/schedule \
	  build-fuzz/corpus/fix
	$(FUZZ_ENV) build-fuzz/fuzz/reader_fuzz -max_total_time=$$(( $(FUZZ_SECONDS) / 2 )) -max_len=524288 \
	  $(FUZZ_FLAGS) build-fuzz/corpus/reader tests/fuzz/reader
	$(FUZZ_ENV) build-fuzz/fuzz/replay_fuzz -max_total_time=$$(( $(FUZZ_SECONDS) / 2 )) -max_len=524288 \
	  $(FUZZ_FLAGS) build-fuzz/corpus/replay tests/fuzz/replay
	$(FUZZ_ENV) build-fuzz/fuzz/schedule_fuzz -max_total_time=$$(( $(FUZZ_SECONDS) / 4 )) -max_len=65536 \
	  $(FUZZ_FLAGS) build-fuzz/corpus/schedule tests/fuzz/schedule
	$(FUZZ_ENV) build-fuzz/fuzz/fix_fuzz -max_total_time=$$(( $(FUZZ_SECONDS) / 4 )) -max_len=4096 \
	  $(FUZZ_FLAGS) build-fuzz/corpus/fix tests/fuzz/fix

demo: build
	@tools/scripts/demo.sh build/bin/rerace

bench: build
	@tools/scripts/bench.sh build

clean:
	rm -rf build build-nocuda build-asan build-fuzz build-tsan
