// The readers behind ParseResults, one per layout; private to src/analyze.
#pragma once

#include <string>
#include <string_view>

#include "fabricscope/inspector.h"
#include "fabricscope/parse.h"

namespace fabricscope::analyze {

class ChunkedLineReader;

// nccl-tests / rccl-tests / fabricscope text output inside any log (text_parser.cc).
ParsedResults ParseTextResults(std::string_view text, const std::string& source,
                               const ParseOptions& options);
// The same, one line at a time from `reader` (a file of any size in bounded memory); the
// first `skip_first` bytes of the first line (a byte-order mark) are not part of it.
ParsedResults ParseTextLines(ChunkedLineReader& reader, size_t skip_first,
                             const std::string& source, const ParseOptions& options);

// nccl-tests -J, fabricscope JSON, rccl-tests -Z json (json_reader.cc).
ParsedResults ParseJsonResults(std::string_view text, const std::string& source,
                               const ParseOptions& options);

// fabricscope CSV and rccl-tests -Z csv (csv_reader.cc).
ParsedResults ParseCsvResults(std::string_view text, const std::string& source,
                              const ParseOptions& options);

// nccl-tests' size of an Inspector record: Inspector counts one rank's part for AllGather
// and ReduceScatter, nccl-tests the gathered buffer (inspector_reader.cc); sets r->bytes.
void SizeAsNcclTests(InspectorRecord* r);

// NCCL Inspector JSONL and the fabricscope profiler's (inspector_reader.cc).
ParsedResults ParseInspectorResults(std::string_view text, const std::string& source,
                                    const ParseOptions& options);

// "22809" (NCCL_VERSION_CODE: major x 10000 + minor x 100 + patch) -> "2.28.9".
std::string NcclVersionName(long code);

// The count column of a row whose source gives only its size (rccl-tests' -Z records), as
// nccl-tests computes it; 0 for an unknown type.
size_t CountOf(const std::string& collective, size_t bytes, const std::string& type, int ranks);

// The "no results" error every reader gives, so that each says what it expected.
std::string NoResultsMessage(std::string_view what_was_read);

}  // namespace fabricscope::analyze
