// TEST DOUBLE. What libfake_nccl needs from libfake_cudart: the two fakes stand in for NCCL
// and the CUDA runtime on a machine without a GPU, so that the nccl backend's whole logic
// runs in CI. "Device memory" is host memory the host cannot touch (mapped PROT_NONE at the
// address handed out; the fakes work through a second mapping), and each stream is a thread
// that runs its queue of tasks in order.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

namespace fake_gpu {

// A unit of device work, run on its stream's thread; reusable (a graph replays it).
using Task = std::function<void()>;

// Queues `task` on `stream` (null: the default stream of `device`), or records it when the
// stream is being captured. Returns a cudaError_t.
int Enqueue(void* stream, int device, std::shared_ptr<const Task> task);

// Whether `stream` (null: the default stream of `device`) is being captured into a graph.
bool Capturing(void* stream, int device);

// The fakes' own view of device memory [ptr, ptr + bytes), or null when that range is not
// inside one allocation; `device` gets the allocation's device.
void* HostView(const void* ptr, size_t bytes, int* device);

// Device memory on `device` (cudaMalloc's, for ncclMemAlloc); null when bytes is 0.
void* AllocateDevice(size_t bytes, int device);
void FreeDevice(void* ptr);

// The calling thread's current device (cudaSetDevice).
int CurrentDevice();

// Appends one line to $FAKE_GPU_TRACE, so that tests can see which calls were made.
void Trace(const std::string& line);

// Process-wide knobs, from the environment.
int EnvInt(const char* name, int fallback);

}  // namespace fake_gpu
