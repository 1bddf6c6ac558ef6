// Typed errors: every failure the library reports, converted at the call site.
#pragma once

#include <stdexcept>
#include <string>

namespace fabricscope {

// What kind of failure this is; the CLI maps it to an exit code.
enum class ErrorCode {
  kUsage,        // bad flag, value or combination: the user can fix the command line
  kUnsupported,  // the backend cannot do what was asked (type, op, collective)
  kSystem,       // the OS refused (file, socket, memory)
  kBackend,      // the communication library failed (Gloo, MPI, NCCL)
  kTimeout,      // a peer did not answer in time
};

// Base of all fabricscope errors: a code plus a message that says what, where and how to fix.
class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

// A bad command line or option value.
class UsageError : public Error {
 public:
  explicit UsageError(const std::string& message) : Error(ErrorCode::kUsage, message) {}
};

// The chosen backend lacks a type, op or collective.
class UnsupportedError : public Error {
 public:
  explicit UnsupportedError(const std::string& message) : Error(ErrorCode::kUnsupported, message) {}
};

// An operating-system call failed.
class SystemError : public Error {
 public:
  explicit SystemError(const std::string& message) : Error(ErrorCode::kSystem, message) {}
};

// The communication library reported a failure.
class BackendError : public Error {
 public:
  explicit BackendError(const std::string& message) : Error(ErrorCode::kBackend, message) {}
};

// A peer did not respond within the timeout.
class TimeoutError : public Error {
 public:
  explicit TimeoutError(const std::string& message) : Error(ErrorCode::kTimeout, message) {}
};

// Throws the error of `error`'s kind (its class: a UsageError stays a UsageError) with
// `message`: how a layer adds where a failure happened without slicing it to Error, which
// would lose what callers catch it as.
[[noreturn]] inline void ThrowWithMessage(const Error& error, const std::string& message) {
  switch (error.code()) {
    case ErrorCode::kUsage:
      throw UsageError(message);
    case ErrorCode::kUnsupported:
      throw UnsupportedError(message);
    case ErrorCode::kSystem:
      throw SystemError(message);
    case ErrorCode::kBackend:
      throw BackendError(message);
    case ErrorCode::kTimeout:
      throw TimeoutError(message);
  }
  throw Error(error.code(), message);  // a code outside the enum: keep it
}

}  // namespace fabricscope
