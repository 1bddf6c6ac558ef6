# The two set-up commands of README.md: `make run` and `make test`. Each installs what is
# missing (Debian packages, as root), configures, builds, then runs or tests.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps configure build run test bench sanitize format format-check clean image

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

# The suite, after the format check (the tree stays clang-formatted) and a -Werror build.
test: format-check build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS) --timeout 600

# The overhead benchmarks of bench/CMakeLists.txt (docs/performance.md): Gloo backend, engine.
bench: build
	cmake --build $(BUILD) --target bench

# The test suite under AddressSanitizer and UndefinedBehaviorSanitizer.
sanitize:
	$(MAKE) test BUILD=build-asan CMAKE_FLAGS="-DFABRICSCOPE_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug"

# The container image (Containerfile) with podman: the binary of $(BUILD) on BASE, a Debian 12
# image (a CUDA or PyTorch one built on Debian 12 for GPUs); docs/deploy.md.
BASE ?= docker.io/library/debian:bookworm-slim
IMAGE ?= localhost/fabricscope:latest
image: build
	rm -rf $(BUILD)/image && mkdir -p $(BUILD)/image
	cp Containerfile $(BUILD)/fabricscope $(BUILD)/image/
	podman build --network host --build-arg BASE=$(BASE) --build-arg FABRICSCOPE_BIN=fabricscope \
	  -t $(IMAGE) -f $(BUILD)/image/Containerfile $(BUILD)/image

format:
	clang-format -i $$(git ls-files '*.cc' '*.h')

format-check: deps
	clang-format --dry-run --Werror $$(git ls-files '*.cc' '*.h')

clean:
	rm -rf $(BUILD) build-asan
