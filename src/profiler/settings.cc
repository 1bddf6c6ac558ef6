#include "profiler/settings.h"

#include <unistd.h>

#include <charconv>
#include <optional>
#include <string_view>

namespace fabricscope::profiler {
namespace {

template <typename T>
void ReadNumber(const Env& env, const char* name, T min, T* out, std::string* errors) {
  const std::optional<std::string> v = env.Get(name);
  if (!v || v->empty()) return;
  const std::string_view text(*v);
  T value{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < min) {
    *errors += std::string(errors->empty() ? "" : "; ") + name + "='" + *v +
               "' is not a whole number >= " + std::to_string(min) + " (default kept)";
    return;
  }
  *out = value;
}

bool Flag(const Env& env, const char* name, bool fallback) {
  const std::optional<std::string> v = env.Get(name);
  if (!v || v->empty()) return fallback;
  return !(*v == "0" || *v == "false" || *v == "no" || *v == "off");
}

std::string Text(const Env& env, const char* name) { return env.Get(name).value_or(""); }

}  // namespace

Settings ReadSettings(const Env& env) {
  Settings s;
  s.enabled = Flag(env, "FABRICSCOPE_PROFILER_ENABLE", true);
  s.jsonl = Flag(env, "FABRICSCOPE_PROFILER_JSONL", true);
  for (const char* name : {"SLURM_JOB_ID", "TORCHELASTIC_RUN_ID", "FABRICSCOPE_JOB_ID"}) {
    if (std::string v = Text(env, name); !v.empty()) {
      s.job = v;
      break;
    }
  }
  s.dump_dir = Text(env, "FABRICSCOPE_PROFILER_DUMP_DIR");
  if (s.dump_dir.empty()) s.dump_dir = "fabricscope-profiler-" + s.job;
  s.prom_listen = Text(env, "FABRICSCOPE_PROFILER_PROM_LISTEN");
  s.prom_sd_dir = Text(env, "FABRICSCOPE_PROFILER_PROM_SD_DIR");
  if (s.prom_sd_dir.empty()) s.prom_sd_dir = s.dump_dir;
  ReadNumber<int64_t>(env, "FABRICSCOPE_PROFILER_INTERVAL_MS", 1, &s.interval_ms, &s.errors);
  ReadNumber<size_t>(env, "FABRICSCOPE_PROFILER_RING", 2, &s.ring_entries, &s.errors);
  ReadNumber<size_t>(env, "FABRICSCOPE_PROFILER_ACTIVE", 1, &s.active_events, &s.errors);
  ReadNumber<uint64_t>(env, "FABRICSCOPE_PROFILER_MIN_BYTES", 0, &s.min_bytes, &s.errors);
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0) s.hostname = host;
  return s;
}

}  // namespace fabricscope::profiler
