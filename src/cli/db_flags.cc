#include "cli/db_flags.h"

#include <fmt/format.h>

#include <ostream>

#include "fabricscope/error.h"

namespace fabricscope::cli {

void AddDbFlag(CLI::App& app, DbFlags& flags, const std::string& help) {
  app.add_option("--db", flags.url,
                 help.empty() ? "record the results, verdicts and findings in this store: a SQLite "
                                "file (created on first use; or sqlite:///PATH) or "
                                "postgresql://USER@HOST/DB; default: FABRICSCOPE_DB (docs/fleet.md)"
                              : help)
      ->type_name("URL");
}

std::optional<db::StoreUrl> StoreOf(const DbFlags& flags, const Env& env) {
  if (!flags.url.empty()) return db::ParseStoreUrl(flags.url);
  const std::optional<std::string> from_env = env.Get("FABRICSCOPE_DB");
  if (!from_env || from_env->empty()) return std::nullopt;
  try {
    return db::ParseStoreUrl(*from_env);
  } catch (const UsageError& e) {
    throw UsageError(std::string("FABRICSCOPE_DB: ") + e.what());
  }
}

int RecordResults(const std::optional<db::StoreUrl>& store, const db::Record& record,
                  const CommandContext& ctx, int exit_code) {
  if (!store) return exit_code;
  try {
    const int64_t id = db::OpenResultsStore(*store)->Write(record);
    ctx.err << fmt::format("fabricscope: recorded as run {} in {}\n", id, store->shown);
    return exit_code;
  } catch (const db::StoreError& e) {
    ctx.err << fmt::format(
        "fabricscope: error: the results were not recorded: {}. Nothing of this {} was stored "
        "({} rows, {} findings, {} figures); the report above is complete.\n",
        e.what(), record.command, record.rows.size(), record.findings.size(),
        record.measures.size());
    return exit_code == kExitOk ? kExitRuntime : exit_code;
  }
}

}  // namespace fabricscope::cli
