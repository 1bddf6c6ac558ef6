# The two set-up commands of README.md: `make run` and `make test`. Each installs what is
# missing (Debian packages, as root), configures, builds, then runs or tests.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps configure build run test bench sanitize format clean

all: build

deps:
	bash scripts/install-deps.sh

configure: deps
	cmake -S . -B $(BUILD) -G Ninja $(CMAKE_FLAGS)

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# The main job on the local default: a validated all_reduce sweep over 4 thread ranks.
run: build
	./$(BUILD)/fabricscope run

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS) --timeout 600

# The overhead benchmarks of bench/CMakeLists.txt (docs/performance.md): Gloo backend, engine.
bench: build
	cmake --build $(BUILD) --target bench

# The test suite under AddressSanitizer and UndefinedBehaviorSanitizer.
sanitize:
	$(MAKE) test BUILD=build-asan CMAKE_FLAGS="-DFABRICSCOPE_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug"

format:
	clang-format -i $$(git ls-files '*.cc' '*.h')

clean:
	rm -rf $(BUILD) build-asan
