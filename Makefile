# Top-level entry points. Each target does all set-up on a fresh Debian 12
# machine (missing Debian packages are installed with apt-get), then:
#   make run    runs ge-run on the sample graphs over plugins/samples and checks
#               the outputs against independent numpy references (the tiling
#               graph is compiled for three platforms)
#   make test   runs every test suite through CTest
#   make bench  runs the benchmarks and prints their figures
#   make wheel  builds the pip-installable `ge` wheel into $(BUILD)/dist
#               (share/docs/plugin-authors.md, "Installing ge with pip")
#   make sanitize  builds with ASan + UBSan in build-sanitize/ and runs the test
#               suites under them (not part of make test)
#   make deb    builds the Debian package (CPack) in build-deb/ for /usr and
#               runs lintian on it
BUILD ?= build
JOBS ?= $(shell nproc)
PYTHON := /usr/bin/python3
DEB_PACKAGES := cmake make g++ ccache python3 python3-dev python3-numpy python3-pytest \
  libboost-python-dev libboost-filesystem-dev libboost-program-options-dev libboost-test-dev \
  libspdlog-dev nlohmann-json3-dev libbenchmark-dev pkgconf binutils mypy \
  libsystemd-dev systemd procps help2man dpkg-dev lintian python3-venv python3-jsonschema

PREFIX ?= /usr/local
# ccache: paths relative to the checkout, so that another clone of the project
# (CI's) reuses the objects of this one.
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_NOHASHDIR := 1

SANITIZE_BUILD ?= build-sanitize
# The Debian package's build: beside $(BUILD), so that ccache reuses its objects.
DEB_BUILD ?= $(BUILD)-deb

.PHONY: all deps configure build build-run run test bench install clean sanitize deb wheel

all: build

deps:
	@missing=""; for p in $(DEB_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "make: installing Debian packages:$$missing"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi

configure: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGE_PYTHON_EXECUTABLE=$(PYTHON)

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# What `make run` needs, without the tests and benchmarks of a full build.
RUN_TARGETS := ge-run ge-plugin-ls ge-plugin-registryd ge-plugin-scan ge-plugin-worker ge_native_ext sample_scaled_add_ops

build-run: configure
	cmake --build $(BUILD) -j $(JOBS) --target $(RUN_TARGETS)

run: build-run
	rm -rf $(BUILD)/run-out
	$(BUILD)/bin/ge-run share/examples/attention_block.json --opp-path plugins/samples \
	  --output-dir $(BUILD)/run-out --repeat 3
	$(PYTHON) share/examples/check_attention_block.py $(BUILD)/run-out
	@echo "== annotated launch args: AxpyKernelCustom builds a C kernel in compile; runs replay it without Python"
	rm -rf $(BUILD)/run-kernel
	$(BUILD)/bin/ge-run share/examples/kernel_block.json --opp-path plugins/samples \
	  --output-dir $(BUILD)/run-kernel --repeat 100
	$(PYTHON) share/examples/check_kernel_block.py $(BUILD)/run-kernel
	@for soc in host Ascend910B1 Ascend310P3; do \
	  echo "== compile for $$soc: TiledSoftmaxCustom picks its tiling from the platform"; \
	  rm -rf $(BUILD)/run-tiling-$$soc; \
	  $(BUILD)/bin/ge-run share/examples/tiling.json --opp-path plugins/samples --soc $$soc \
	    --output-dir $(BUILD)/run-tiling-$$soc || exit 1; \
	  $(PYTHON) share/examples/check_tiling.py $(BUILD)/run-tiling-$$soc || exit 1; \
	done
	@echo "== an upstream-style op package: C++ prototypes (REG_OP), a C++ custom op, an impl-only Python plugin"
	rm -rf $(BUILD)/run-op-package
	$(BUILD)/bin/ge-run share/examples/op_package.json \
	  --opp-path $(BUILD)/opp/scaled_add_package:plugins/samples/scaled_add_package/python:plugins/samples \
	  --output-dir $(BUILD)/run-op-package
	$(PYTHON) share/examples/check_op_package.py $(BUILD)/run-op-package
	@echo "== the plugins, as the registry sees them"
	$(BUILD)/bin/ge-plugin-ls --no-daemon --cache $(BUILD)/run-registry.json \
	  --opp-path $(BUILD)/opp/scaled_add_package:plugins/samples/scaled_add_package/python:plugins/samples

wheel: build
	cmake --build $(BUILD) --target ge-wheel

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

bench: build
	GE_PLUGIN_PYTHON_DIR=$(BUILD)/python $(PYTHON) test/bench/bench_dispatch_ratios.py --bin $(BUILD)/bin --python $(PYTHON)
	$(BUILD)/bin/ge-bench-launch --benchmark_min_time=0.2
	GE_PLUGIN_PYTHON_DIR=$(BUILD)/python $(BUILD)/bin/ge-bench-process
	GE_PLUGIN_PYTHON_DIR=$(BUILD)/python $(PYTHON) test/bench/bench_registry.py --bin $(BUILD)/bin
	$(PYTHON) test/bench/bench_graph_order.py --bin $(BUILD)/bin

sanitize: deps
	cmake -S . -B $(SANITIZE_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGE_PYTHON_EXECUTABLE=$(PYTHON) \
	  -DGE_SANITIZE=ON -DGE_BUILD_BENCHMARKS=OFF
	cmake --build $(SANITIZE_BUILD) -j $(JOBS)
	cd $(SANITIZE_BUILD) && ctest --output-on-failure -j $(JOBS) -E '^install\.'

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

# The .deb lands in $(DEB_BUILD)/deb/; lintian's verdict is printed (errors fail).
deb: deps
	test/install/build_deb.sh . $(DEB_BUILD) $(JOBS)
	lintian --fail-on error $(DEB_BUILD)/deb/*.deb

clean:
	rm -rf $(BUILD) $(DEB_BUILD)
