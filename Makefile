# protwin: the two Quick-start commands (`make demo`, `make test`) and their steps.
# Each installs the missing Debian packages (apt-get update once, nothing installed twice),
# configures with CMake presets, builds with both cores, and runs.

PRESET ?= release
BUILD  := build/$(PRESET)
PROTWIN := $(BUILD)/cli/protwin
OUT    ?= out

# Debian 12 packages protwin needs (see README "Requirements").
PACKAGES := cmake g++ make pkg-config zlib1g-dev \
  libtorch-dev libopenblas0-pthread \
  libboost-graph-dev libboost-program-options-dev nlohmann-json3-dev \
  catch2 libbenchmark-dev python3-torch python3-matplotlib \
  libopenmpi-dev openmpi-bin clang-14 libclang-rt-14-dev

.PHONY: demo test deps configure build figures clean-build sanitize fuzz

deps:
	@missing=""; \
	for p in $(PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  sudo=""; [ "$$(id -u)" -eq 0 ] || sudo="sudo"; \
	  echo "installing:$$missing"; \
	  $$sudo apt-get update && \
	  DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y --no-install-recommends $$missing; \
	else \
	  echo "all Debian packages present"; \
	fi

configure: deps
	cmake --preset $(PRESET)

build: configure
	cmake --build --preset $(PRESET)

test: build
	ctest --preset $(PRESET)

# The simulator's, traces' and hardware models' tests under AddressSanitizer and
# UndefinedBehaviorSanitizer (preset "debug", build/debug): only their test targets are built
# (the runtime's LibTorch is not sanitised). CI runs it after `make test`.
FUZZ_READERS := plan report machine policy model rates kineto checkpoint table
SANITIZED_TESTS := protwin_traces_tests traces_profiles_test test_hwmodels test_sim_engine \
  sim_workload_test protwin_policy_tests test_estimate test_sim_parallel \
  $(addprefix fuzz_replay_,$(FUZZ_READERS))
sanitize: deps
	cmake --preset debug
	cmake --build --preset debug --target $(SANITIZED_TESTS)
	ctest --preset debug -L "^($(subst $(eval) ,|,$(strip $(SANITIZED_TESTS))))$$"

# libFuzzer targets for every reader (preset "fuzz", clang 14, build/fuzz/tests/fuzz/fuzz_<reader>);
# run one with e.g. build/fuzz/tests/fuzz/fuzz_plan -runs=1000000 tests/fuzz/corpus/plan.
fuzz: deps
	cmake --preset fuzz
	cmake --build --preset fuzz --target $(addprefix fuzz_,$(FUZZ_READERS))

# The demo: ProTrain against the baselines for GPT-2 10B on ProTrain's 4 x RTX 3090 server (each
# system searched at its best knobs and batch size), a Chrome trace of ProTrain's best plan, and the
# example offload plan validated and simulated; then this machine profiled and three plans of a
# small model simulated and run for real on the runtime, predicted against measured (on a quiet
# machine: the profile and the measurements are wall-clock; --budget-s 0: no rounds beyond the three,
# whatever the intervals say).
demo: build
	@mkdir -p $(OUT)
	$(PROTWIN) compare --model gpt2-10b --machine rtx3090-server --gpus 4 \
	  --chrome-trace $(OUT)/protrain-gpt2-10b.trace.json -o $(OUT)/protrain-gpt2-10b.plan.json
	$(PROTWIN) search --model gpt2-10b --machine rtx3090-server --gpus 4 --pareto
	$(PROTWIN) validate --plan examples/prefetch_pipeline.plan.json
	$(PROTWIN) simulate --plan examples/prefetch_pipeline.plan.json --rates examples/rates.json \
	  -o $(OUT)/report.json --chrome-trace $(OUT)/trace.json
	@echo "== closing the loop: profile this machine, then simulate and really run plans of gpt2-tiny"
	$(PROTWIN) profile -o $(OUT)/host-emulated.json --profile-out $(OUT)/host-emulated.profile.json
	$(PROTWIN) calibrate --model gpt2-tiny --cases 3 --rounds 3 --budget-s 0 --machine $(OUT)/host-emulated.json \
	  --profile $(OUT)/host-emulated.profile.json -o $(OUT)/calibration
	@echo "demo outputs in $(OUT)/ (open the *.trace.json files in ui.perfetto.dev)"

# Every experiment's results and figures (experiments/*/run.sh, in order), from the release build.
figures: build
	PROTWIN=$(PROTWIN) bash experiments/run_all.sh

clean-build:
	rm -rf build
