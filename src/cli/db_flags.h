// --db URL, shared by every command that records what it found (docs/fleet.md): the flag,
// FABRICSCOPE_DB under it, and the write after the command's report is out.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "cli/command.h"
#include "fabricscope/env.h"
#include "fabricscope/results_db.h"

namespace fabricscope::cli {

struct DbFlags {
  std::string url;
};

// Declares --db on `app`; `help` says what the command does with the store (it records in it,
// by default).
void AddDbFlag(CLI::App& app, DbFlags& flags, const std::string& help = "");

// The store the command records in: --db, else FABRICSCOPE_DB; none when neither is given.
// Parsed (UsageError for a bad URL) before the command does any work, but not connected to:
// a store that is down costs no measurement.
std::optional<db::StoreUrl> StoreOf(const DbFlags& flags, const Env& env);

// Writes `record` to `store` once the command's report is out, and says on ctx.err where it
// went ("recorded as run 12 in results.db") or what was not recorded and why. Returns
// `exit_code`, or 3 in place of a 0 when the store failed: a non-zero code the command had
// already (a CRITICAL verdict) is the news that matters more, and is kept.
int RecordResults(const std::optional<db::StoreUrl>& store, const db::Record& record,
                  const CommandContext& ctx, int exit_code);

}  // namespace fabricscope::cli
