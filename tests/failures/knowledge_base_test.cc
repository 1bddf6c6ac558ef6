// The failure knowledge base: the compiled-in data loads, every entry that cites NVIDIA/nccl
// quotes the line that tag prints (data/nccl/log-strings, generated from the source), the
// generator reproduces its fixture, and every malformed entry is refused with its file and line.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "fabricscope/error.h"
#include "fabricscope/failures.h"

namespace fabricscope {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

std::string Slurp(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

const fs::path kSource = FABRICSCOPE_SOURCE_DIR;

TEST(FormatFragments, SplitsAtConversionsAndKeepsLiterals) {
  EXPECT_EQ(FormatFragments("Error: failed to extend %s to %ld bytes, error: %s (%d)"),
            (std::vector<std::string>{"Error: failed to extend", "to", "bytes, error:"}));
  EXPECT_EQ(FormatFragments("100%% of %s"), (std::vector<std::string>{"100% of"}));
  EXPECT_EQ(FormatFragments("NET/IB : Using%s %s; OOB %s:%s"),
            (std::vector<std::string>{"NET/IB : Using", "; OOB"}));
  EXPECT_EQ(FormatFragments("%s:%d"), std::vector<std::string>{});
  EXPECT_EQ(FormatFragments("Cuda failure %d '%s'\n"), std::vector<std::string>{"Cuda failure"});
}

TEST(FormatFragments, MatchInOrderOnly) {
  const std::vector<std::string> f = FormatFragments("Connect to %s failed : %s");
  EXPECT_TRUE(MatchesFragments("socketStartConnect: Connect to 10.0.0.1<1> failed : Refused", f));
  EXPECT_FALSE(MatchesFragments("failed : Connect to", f));
  EXPECT_FALSE(MatchesFragments("", f));
}

// The strided scan finds every occurrence a plain search finds, at every alignment, with texts
// of several lengths sharing pairs, overlapping and at the line's ends.
TEST(TextSet, FindsWhatASearchFindsAtEveryOffset) {
  const std::vector<std::string> texts = {"shm", "NCCL WARN", "]ib", "abab", "bab", "xyzzy"};
  const TextSet set(texts);
  const std::string alphabet = "abshmNCL WRN]ixyz";
  uint32_t seed = 12345;
  auto next = [&seed] {
    seed = seed * 1103515245u + 12345u;
    return seed >> 16;
  };
  for (int round = 0; round < 4000; ++round) {
    std::string line;
    const size_t length = next() % 40;
    for (size_t i = 0; i < length; ++i) line += alphabet[next() % alphabet.size()];
    if (round % 3 == 0) line.insert(next() % (line.size() + 1), texts[next() % texts.size()]);
    std::multiset<size_t> expected;
    for (size_t t = 0; t < texts.size(); ++t) {
      for (size_t at = line.find(texts[t]); at != std::string::npos;
           at = line.find(texts[t], at + 1)) {
        expected.insert(t);
      }
    }
    std::multiset<size_t> found;
    set.Find(line, [&](size_t t) { found.insert(t); });
    ASSERT_EQ(found, expected) << "'" << line << "'";
  }
  size_t none = 0;
  TextSet().Find("anything", [&](size_t) { ++none; });
  TextSet({"x"}).Find("xxx", [&](size_t) { ++none; });
  EXPECT_EQ(none, 0u);
}

TEST(FailureBase, BuiltinLoadsWithEveryCauseDefinedAndUsed) {
  const FailureBase& base = FailureBase::Builtin();
  EXPECT_GE(base.signatures().size(), 60u);
  EXPECT_GE(base.causes().size(), 30u);
  std::set<std::string> used;
  for (const Signature& s : base.signatures()) {
    EXPECT_FALSE(s.summary.empty()) << s.id;
    EXPECT_FALSE(s.source.repo.empty()) << s.id;
    EXPECT_TRUE(s.origin.starts_with("data/failures/")) << s.origin;
    for (const CauseLink& link : s.causes) used.insert(link.cause);
  }
  for (const FailureCause& c : base.causes()) {
    EXPECT_TRUE(used.count(c.id) > 0) << "no signature points to the cause " << c.id;
    EXPECT_FALSE(c.fix.empty()) << c.id;
    EXPECT_FALSE(c.check.empty()) << c.id;
  }
}

TEST(FailureBase, MatchFindsEachExampleByItsOwnSignature) {
  const FailureBase& base = FailureBase::Builtin();
  for (size_t i = 0; i < base.signatures().size(); ++i) {
    const Signature& s = base.signatures()[i];
    for (const std::string& line : s.examples) {
      std::vector<size_t> found;
      base.Match(line, found);
      EXPECT_NE(std::find(found.begin(), found.end(), i), found.end()) << s.id << ": " << line;
    }
  }
}

// Each entry citing NVIDIA/nccl at a file and line quotes what that tag prints there: the
// table generated from the tag (scripts/gen-nccl-log-strings.py) has a string at that line
// that holds the entry's format (a SYSCHECK-style call site prints "Call to NAME failed").
TEST(FailureBase, NcclCitationsQuoteTheGeneratedStrings) {
  size_t checked = 0;
  for (const Signature& s : FailureBase::Builtin().signatures()) {
    if (s.source.repo != "NVIDIA/nccl" || s.source.file.empty()) continue;
    const fs::path table = kSource / "data/nccl/log-strings" / (s.source.ref + ".json");
    ASSERT_TRUE(fs::exists(table)) << s.id << ": no generated table " << table;
    const json doc = json::parse(Slurp(table));
    ASSERT_EQ(doc["tag"], s.source.ref);
    bool found = false;
    for (const json& entry : doc["strings"]) {
      if (entry["file"] != s.source.file || entry["line"] != s.source.line) continue;
      // The entry's format is the upstream text or the part of it the versions share.
      const std::string text = entry.value("format", "");
      const std::string call =
          entry.contains("call") ? "Call to " + entry["call"].get<std::string>() + " failed" : "";
      if (text.find(s.format) != std::string::npos || (!call.empty() && call == s.format)) {
        found = true;
      }
    }
    EXPECT_TRUE(found) << s.id << " (" << s.origin << "): '" << s.format << "' is not printed at "
                       << s.source.ref << " " << s.source.file << ":" << s.source.line;
    ++checked;
  }
  EXPECT_GE(checked, 40u);
}

// The generator, run on the fixture tree, gives the fixture's expected table byte for byte: a
// hand edit of the generator's output format, or of the expected file, fails here.
TEST(NcclLogStrings, GeneratorReproducesItsFixture) {
  if (std::system("python3 --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "no python3";
  const fs::path out = fs::temp_directory_path() / "fabricscope-log-strings-fixture.json";
  const std::string command =
      "python3 " + (kSource / "scripts/gen-nccl-log-strings.py").string() + " --tree " +
      (kSource / "tests/check/data/nccl-tree-fixture").string() +
      " --tag fixture --commit 0000000000000000000000000000000000000000 --out " + out.string() +
      " > /dev/null";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  EXPECT_EQ(Slurp(out), Slurp(kSource / "tests/check/data/nccl-tree-fixture.expected.json"));
  fs::remove(out);
}

// docs/failures.md's tables are scripts/failures-table.py's output: every entry is there.
TEST(FailureBase, DocsNameEverySignatureAndCause) {
  const std::string docs = Slurp(kSource / "docs/failures.md");
  for (const Signature& s : FailureBase::Builtin().signatures()) {
    EXPECT_NE(docs.find("| `" + s.id + "` |"), std::string::npos)
        << s.id << ": regenerate the table with python3 scripts/failures-table.py";
  }
  for (const FailureCause& c : FailureBase::Builtin().causes()) {
    EXPECT_NE(docs.find("| `" + c.id + "` |"), std::string::npos) << c.id;
  }
}

// A document of one signature, `field` replaced (or added) with `value`.
std::string WithField(const std::string& field, const std::string& value) {
  json sig = json::parse(R"({
    "id": "x-sig", "role": "cause", "weight": 10, "format": "Error: failed %s",
    "source": {"repo": "NVIDIA/nccl", "ref": "v2.30.7-1", "file": "src/x.cc", "line": 3},
    "summary": "s", "causes": [{"cause": "x_cause"}], "examples": ["Error: failed x"]})");
  if (value.empty()) {
    sig.erase(field);
  } else {
    sig[field] = json::parse(value);
  }
  return "{\n \"causes\": [\n  {\"id\": \"x_cause\", \"title\": \"t\", \"explain\": \"e\", "
         "\"check\": \"c\", \"fix\": \"f\", \"sources\": [\"u\"]}\n ],\n \"signatures\": [\n  "
         "{},\n  " +
         sig.dump() + "\n ]\n}";
}

std::string Refusal(const std::string& text) {
  try {
    (void)FailureBase::Parse({{"data/failures/bad.json", text}});
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(FailureBase, RefusesABadEntryWithItsFileAndLine) {
  // The first signature ({}) is on line 6 and refused there.
  EXPECT_NE(Refusal(WithField("role", "\"cause\""))
                .find("data/failures/bad.json:6: field 'id' is missing"),
            std::string::npos);
  // Drop the empty first entry: now each refusal is of the real one, on line 6.
  const auto refusal = [](const std::string& field, const std::string& value) {
    std::string text = WithField(field, value);
    text.erase(text.find("  {},\n"), 6);
    return Refusal(text);
  };
  EXPECT_EQ(refusal("role", "\"cause\""), "");
  EXPECT_NE(refusal("role", "\"fatal\"").find("bad.json:6: field 'role' is 'fatal'"),
            std::string::npos);
  EXPECT_NE(refusal("summary", "").find("bad.json:6: field 'summary' is missing"),
            std::string::npos);
  EXPECT_NE(refusal("examples", R"(["something else"])").find("which the format does not match"),
            std::string::npos);
  EXPECT_NE(refusal("causes", R"([{"cause": "nowhere"}])").find("names the cause 'nowhere'"),
            std::string::npos);
  EXPECT_NE(refusal("source", R"({"repo": "NVIDIA/nccl", "file": "a.cc"})").find("give its line"),
            std::string::npos);
  EXPECT_NE(refusal("causes", R"([{"cause": "x_cause", "when": [{"lines": "x"}]}])")
                .find("has the condition 'lines'"),
            std::string::npos);
  EXPECT_NE(refusal("format", R"("%s %d")").find("no literal text"), std::string::npos);
  EXPECT_NE(Refusal("{\"signatures\": [").find("bad.json: not valid JSON"), std::string::npos);
  EXPECT_NE(Refusal("{\"rules\": []}").find("unknown key 'rules'"), std::string::npos);
}

TEST(FailureBase, RefusesADuplicateId) {
  const std::string cause =
      R"({"id": "a", "title": "t", "explain": "e", "check": "c", "fix": "f", "sources": ["u"]})";
  const std::string text = "{\"causes\": [\n" + cause + ",\n" + cause + "\n]}";
  EXPECT_NE(Refusal(text).find("bad.json:3: the cause id 'a' is taken"), std::string::npos)
      << Refusal(text);
}

}  // namespace
}  // namespace fabricscope
