#include "cli/history_command.h"

#include <filesystem>
#include <memory>
#include <ostream>
#include <string>

#include "cli/db_flags.h"
#include "cli/flags.h"
#include "cli/output.h"
#include "fabricscope/error.h"
#include "fabricscope/history.h"

namespace fabricscope::cli {
namespace {

struct HistoryFlags {
  DbFlags db;
  db::MeasureQuery query;
  std::string format = "text";
  std::string output;
  bool regressions = false;
  db::RegressionOptions options;
  double min_drop_percent = 5;
};

const OutputFormats<db::HistoryReport>& HistoryOutputFormats() {
  static const OutputFormats<db::HistoryReport> formats = FormatsFrom<db::HistoryReport>(
      db::HistoryFormats(), [](const db::HistoryFormat& format, const db::HistoryReport& report,
                               std::ostream& out) { out << format.render(report); });
  return formats;
}

int ExecuteHistory(HistoryFlags f, const CommandContext& ctx) {
  const OutputFormat<db::HistoryReport>& format = FindFormat(HistoryOutputFormats(), f.format);
  const std::optional<db::StoreUrl> url = StoreOf(f.db, Env::Process());
  if (!url) {
    throw UsageError(
        "history reads a results store: give --db URL or set FABRICSCOPE_DB (the store run, "
        "check, locate, doctor, watch and fabric record in with --db)");
  }
  // Reading creates nothing: a mistyped path is not an empty history.
  if (url->engine == db::StoreUrl::Engine::kSqlite && !std::filesystem::exists(url->target)) {
    throw UsageError("no results store at " + url->shown +
                     ": give the file the commands recorded in (--db or FABRICSCOPE_DB)");
  }
  f.options.min_drop = f.min_drop_percent / 100;
  const std::unique_ptr<db::ResultsStore> store = db::OpenResultsStore(*url);
  db::HistoryReport report;
  report.store = url->shown;
  report.query = f.query;
  report.series = db::SeriesOf(store->Measures(f.query));
  report.regressions = f.regressions;
  report.options = f.options;
  if (f.regressions) {
    report.judgements = db::JudgeSeries(report.series, f.options);
    report.findings = db::RegressionFindings(report.judgements, f.options);
  }
  Output output(ctx.out, f.output, "the history");
  format.render(report, output.stream());
  output.Close();
  if (!f.regressions) return kExitOk;
  return ExitCodeOf(db::RegressionOutcome(report.findings));
}

}  // namespace

CommandAction SetupHistoryCommand(CLI::App& app) {
  auto flags = std::make_shared<HistoryFlags>();
  HistoryFlags& f = *flags;
  AddDbFlag(app, f.db,
            "the results store to read: a SQLite file (or sqlite:///PATH) or "
            "postgresql://USER@HOST/DB; default: FABRICSCOPE_DB (docs/fleet.md)");
  app.add_option("--element", f.query.element,
                 "only this element: a host (also every node set holding it), a node set "
                 "(a,b,c as recorded: sorted), or a link (a<->b)");
  app.add_option("--kind", f.query.element_kind, "only this kind of element")
      ->check(CLI::IsMember({"node", "nodes", "link"}));
  app.add_option("--collective", f.query.collective, "only this collective (all_reduce, ...)");
  app.add_option("--platform", f.query.platform, "only runs judged against this platform");
  app.add_option("--since", f.query.since,
                 "only results recorded at or after this time (ISO 8601 UTC, e.g. 2026-11-01)")
      ->type_name("TIME");
  app.add_flag("--regressions", f.regressions,
               "judge each series' last runs against its own baseline: a drop of more than "
               "max(--min-drop, 3 x the run-to-run spread), significant at --alpha, is a "
               "finding (WARN inside the platform's band, CRITICAL below it); exit 1 when one "
               "is found");
  app.add_option("--recent", f.options.recent, "with --regressions: the last N runs are judged")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--baseline", f.options.max_baseline,
                 "with --regressions: at most N runs before them are the baseline")
      ->capture_default_str()
      ->check(CLI::Range(2, 100000));
  app.add_option("--min-baseline", f.options.min_baseline,
                 "with --regressions: fewer runs before them judge nothing")
      ->capture_default_str()
      ->check(CLI::Range(2, 100000));
  app.add_option("--min-drop", f.min_drop_percent,
                 "with --regressions: a smaller drop (percent) is never a regression")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 100.0));
  app.add_option("--alpha", f.options.alpha, "with --regressions: the t test's significance level")
      ->capture_default_str()
      ->check(CLI::Range(1e-9, 0.5));
  AddFormatOption(app, f.format, HistoryOutputFormats());
  app.add_option("--output", f.output, "write to FILE instead of stdout")->type_name("FILE");
  app.footer(ExitCodesHelp({.clear = "the history was printed; with --regressions: none found",
                            .failed = "with --regressions: a regression (WARN or CRITICAL)",
                            .inconclusive = "with --regressions: a drop past the threshold "
                                            "that is not significant yet",
                            .usage = "bad usage, or no store given",
                            .runtime = "the store could not be read"}) +
             "\nExamples:\n"
             "  fabricscope history --db results.db --element gpu-17\n"
             "  FABRICSCOPE_DB=postgresql://fabricscope@db/fleet fabricscope history "
             "--regressions   # in cron: exit 1 names the node");
  return [flags](const CommandContext& ctx) { return ExecuteHistory(*flags, ctx); };
}

}  // namespace fabricscope::cli
