// The NCCL and RCCL backends' factories; the implementation stays private to
// src/backends/nccl.
#pragma once

#include <memory>
#include <string>

#include "fabricscope/backend.h"

namespace fabricscope {

// NCCL on CUDA devices: libnccl.so.2 and libcudart loaded at run time (--nccl-lib,
// --gpu-runtime-lib). Throws UnsupportedError when a library does not load or there is no
// CUDA device ("no CUDA device: ...").
std::unique_ptr<Backend> MakeNcclBackend(const BackendOptions& options);

// RCCL on ROCm devices: librccl.so and libamdhip64.so, the same API under HIP's names.
std::unique_ptr<Backend> MakeRcclBackend(const BackendOptions& options);

// Whether the nccl backend can run here: true with what it found ("NCCL 2.28.9, 4 CUDA
// devices") in `why`, or false with the reason (no library, no driver, no device). Never
// throws.
bool ProbeNccl(const BackendOptions& options, std::string* why);

}  // namespace fabricscope
