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
  catch2 libbenchmark-dev python3-torch python3-matplotlib

.PHONY: demo test deps configure build figures clean-build

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

# The demo: validate and simulate the example offload plan; write a Report and a Chrome trace.
demo: build
	@mkdir -p $(OUT)
	$(PROTWIN) validate --plan examples/prefetch_pipeline.plan.json
	$(PROTWIN) simulate --plan examples/prefetch_pipeline.plan.json --rates examples/rates.json \
	  -o $(OUT)/report.json --chrome-trace $(OUT)/trace.json

clean-build:
	rm -rf build
