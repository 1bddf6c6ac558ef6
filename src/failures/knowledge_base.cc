// Loading the failure knowledge base (data/failures/*.json): every entry read with the file
// and line it starts on, so that a bad one is refused where it is.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "fabricscope/error.h"
#include "fabricscope/failures.h"
#include "fabricscope/joined.h"
#include "failures/embedded_failures.h"

namespace fabricscope {
namespace {

using nlohmann::json;

// An input iterator over the text that counts the newlines it has passed, so that a SAX pass
// knows the line each entry starts on (nlohmann's DOM keeps no positions).
class CountingIterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;
  CountingIterator(const char* at, size_t* line) : at_(at), line_(line) {}
  reference operator*() const { return *at_; }
  CountingIterator& operator++() {
    if (*at_ == '\n') ++*line_;
    ++at_;
    return *this;
  }
  bool operator==(const CountingIterator& other) const { return at_ == other.at_; }
  bool operator!=(const CountingIterator& other) const { return at_ != other.at_; }

 private:
  const char* at_;
  size_t* line_;
};

// Records the line of each object inside the top-level arrays: lines["signatures"][i].
class EntryLines : public nlohmann::json_sax<json> {
 public:
  explicit EntryLines(const size_t* line) : line_(line) {}
  std::map<std::string, std::vector<size_t>> lines;

  bool null() override { return true; }
  bool boolean(bool /*val*/) override { return true; }
  bool number_integer(number_integer_t /*val*/) override { return true; }
  bool number_unsigned(number_unsigned_t /*val*/) override { return true; }
  bool number_float(number_float_t /*val*/, const string_t& /*s*/) override { return true; }
  bool string(string_t& /*val*/) override { return true; }
  bool binary(binary_t& /*val*/) override { return true; }
  bool start_object(std::size_t /*elements*/) override {
    if (depth_ == 2) lines[key_].push_back(*line_);
    ++depth_;
    return true;
  }
  bool end_object() override {
    --depth_;
    return true;
  }
  bool start_array(std::size_t /*elements*/) override {
    ++depth_;
    return true;
  }
  bool end_array() override {
    --depth_;
    return true;
  }
  bool key(string_t& val) override {
    if (depth_ == 1) key_ = val;
    return true;
  }
  bool parse_error(std::size_t /*position*/, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& /*ex*/) override {
    return false;
  }

 private:
  const size_t* line_;
  int depth_ = 0;
  std::string key_;
};

// Reads the fields of one entry, naming its file and line in every refusal.
class Entry {
 public:
  Entry(const json& object, std::string where) : object_(object), where_(std::move(where)) {
    if (!object_.is_object()) Fail("", "must be an object");
  }
  [[noreturn]] void Fail(const std::string& key, const std::string& what) const {
    throw UsageError("failure knowledge base " + where_ + ": " +
                     (key.empty() ? std::string("the entry") : "field '" + key + "'") + " " + what +
                     " (see docs/failures.md for the format)");
  }
  std::string String(const std::string& key, bool required = true) const {
    if (!object_.contains(key)) {
      if (required) Fail(key, "is missing");
      return "";
    }
    if (!object_.at(key).is_string()) Fail(key, "must be a string");
    return object_.at(key).get<std::string>();
  }
  int Int(const std::string& key, int fallback) const {
    if (!object_.contains(key)) return fallback;
    const json& v = object_.at(key);
    if (!v.is_number_integer()) Fail(key, "must be a whole number");
    const auto n = v.get<int64_t>();
    if (n < -1000 || n > 1000000000) Fail(key, "is out of range");
    return static_cast<int>(n);
  }
  std::vector<std::string> Strings(const std::string& key) const {
    std::vector<std::string> out;
    if (!object_.contains(key)) return out;
    const json& v = object_.at(key);
    if (!v.is_array()) Fail(key, "must be an array of strings");
    for (const json& s : v) {
      if (!s.is_string()) Fail(key, "must be an array of strings");
      out.push_back(s.get<std::string>());
    }
    return out;
  }
  const json* Array(const std::string& key) const {
    if (!object_.contains(key)) return nullptr;
    if (!object_.at(key).is_array()) Fail(key, "must be an array");
    return &object_.at(key);
  }
  const json& object() const { return object_; }
  const std::string& where() const { return where_; }

 private:
  const json& object_;
  std::string where_;
};

const std::map<std::string, Condition::Kind, std::less<>>& ConditionKinds() {
  static const std::map<std::string, Condition::Kind, std::less<>> kinds = {
      {"line", Condition::Kind::kLine},
      {"log", Condition::Kind::kLog},
      {"not_log", Condition::Kind::kNotLog},
      {"signature", Condition::Kind::kSignature},
      {"transport", Condition::Kind::kTransport},
      {"not_transport", Condition::Kind::kNotTransport},
      {"multi_node", Condition::Kind::kMultiNode},
  };
  return kinds;
}

std::vector<Condition> ReadConditions(const Entry& entry, const std::string& key) {
  std::vector<Condition> out;
  const json* array = entry.Array(key);
  if (array == nullptr) return out;
  for (const json& c : *array) {
    if (!c.is_object() || c.size() != 1) {
      entry.Fail(key, "must hold objects of one key each: " + Joined(ConditionNames()));
    }
    const std::string name = c.begin().key();
    const json& value = c.begin().value();
    const auto kind = ConditionKinds().find(name);
    if (kind == ConditionKinds().end()) {
      entry.Fail(key, "has the condition '" + name + "': use " + Joined(ConditionNames()));
    }
    Condition condition{.kind = kind->second, .value = ""};
    if (kind->second == Condition::Kind::kMultiNode) {
      if (!value.is_boolean()) entry.Fail(key, "multi_node must be true or false");
      condition.value = value.get<bool>() ? "true" : "false";
    } else {
      if (!value.is_string() || value.get<std::string>().empty()) {
        entry.Fail(key, "'" + name + "' must be a non-empty string");
      }
      condition.value = value.get<std::string>();
    }
    out.push_back(std::move(condition));
  }
  return out;
}

SignatureRole ReadRole(const Entry& entry) {
  static const std::map<std::string, SignatureRole, std::less<>> roles = {
      {"cause", SignatureRole::kCause},
      {"symptom", SignatureRole::kSymptom},
      {"slow", SignatureRole::kSlow},
      {"note", SignatureRole::kNote}};
  const std::string role = entry.String("role");
  const auto it = roles.find(role);
  if (it == roles.end()) entry.Fail("role", "is '" + role + "': use cause, symptom, slow or note");
  return it->second;
}

SignatureSource ReadSource(const Entry& entry) {
  if (!entry.object().contains("source")) entry.Fail("source", "is missing");
  const Entry s(entry.object().at("source"), entry.where());
  SignatureSource source{.repo = s.String("repo"),
                         .ref = s.String("ref", false),
                         .file = s.String("file", false),
                         .line = s.Int("line", 0),
                         .url = s.String("url", false)};
  if (source.file.empty() && source.url.empty()) {
    entry.Fail("source", "must name the upstream file and line (file, line, ref) or a url");
  }
  if (!source.file.empty() && (source.line <= 0 || source.ref.empty())) {
    entry.Fail("source", "names a file: give its line and the ref (tag or commit) too");
  }
  return source;
}

bool ValidId(const std::string& id) {
  return !id.empty() && std::all_of(id.begin(), id.end(), [](char c) {
    return std::islower(static_cast<unsigned char>(c)) != 0 ||
           std::isdigit(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_' || c == '.';
  });
}

Signature ReadSignature(const Entry& e) {
  Signature s;
  s.id = e.String("id");
  if (!ValidId(s.id)) e.Fail("id", "is '" + s.id + "': use lower-case letters, digits, - and _");
  s.role = ReadRole(e);
  s.weight = e.Int("weight", 0);
  s.format = e.String("format", false);
  s.shape = e.String("shape", false);
  if (s.format.empty() == s.shape.empty()) e.Fail("format", "or 'shape' must be given, not both");
  if (!s.format.empty()) {
    s.fragments = FormatFragments(s.format);
    if (s.fragments.empty()) e.Fail("format", "has no literal text to match");
  }
  s.source = ReadSource(e);
  s.versions = e.String("versions", false);
  s.summary = e.String("summary");
  s.examples = e.Strings("examples");
  s.counterexamples = e.Strings("counterexamples");
  if (!s.format.empty() && s.examples.empty()) {
    e.Fail("examples", "is missing: give a line as the program prints it");
  }
  for (const std::string& line : s.examples) {
    if (!MatchesFragments(line, s.fragments)) {
      e.Fail("examples", "holds '" + line + "', which the format does not match");
    }
  }
  for (const std::string& line : s.counterexamples) {
    if (MatchesFragments(line, s.fragments)) {
      e.Fail("counterexamples", "holds '" + line + "', which the format matches");
    }
  }
  if (const json* causes = e.Array("causes")) {
    for (const json& c : *causes) {
      const Entry link(c, e.where());
      s.causes.push_back({.cause = link.String("cause"),
                          .when = ReadConditions(link, "when"),
                          .weight = link.Int("weight", 0)});
    }
  }
  if (s.causes.empty() && s.role != SignatureRole::kNote) {
    e.Fail("causes", "is missing: a cause, symptom or slow signature names its causes");
  }
  s.harmless_when = ReadConditions(e, "harmless_when");
  s.origin = e.where();
  return s;
}

FailureCause ReadCause(const Entry& e) {
  FailureCause c{.id = e.String("id"),
                 .title = e.String("title"),
                 .explain = e.String("explain"),
                 .check = e.String("check"),
                 .fix = e.String("fix"),
                 .sources = e.Strings("sources"),
                 .origin = e.where()};
  if (!ValidId(c.id)) e.Fail("id", "is '" + c.id + "': use lower-case letters, digits and _");
  if (c.sources.empty()) e.Fail("sources", "is missing: name the thread or document");
  return c;
}

}  // namespace

std::vector<std::string> ConditionNames() {
  std::vector<std::string> names;
  for (const auto& [name, kind] : ConditionKinds()) names.push_back(name);
  return names;
}

namespace {

// One document's entries appended to `signatures` and `causes`, each with its file and line.
void ParseDocument(const FailureBase::Document& doc, std::vector<Signature>& signatures,
                   std::vector<FailureCause>& causes) {
  json root;
  try {
    root = json::parse(doc.text);
  } catch (const json::exception& e) {
    throw UsageError("failure knowledge base " + doc.name + ": not valid JSON (" + e.what() + ")");
  }
  size_t line = 1;
  EntryLines lines(&line);
  json::sax_parse(CountingIterator(doc.text.data(), &line),
                  CountingIterator(doc.text.data() + doc.text.size(), &line), &lines);
  if (!root.is_object()) {
    throw UsageError("failure knowledge base " + doc.name +
                     ": must be an object with 'signatures' and/or 'causes'");
  }
  for (const auto& [key, value] : root.items()) {
    if (key == "about") continue;
    if (key != "signatures" && key != "causes") {
      throw UsageError("failure knowledge base " + doc.name + ": unknown key '" + key +
                       "' (use about, signatures, causes)");
    }
    if (!value.is_array()) {
      throw UsageError("failure knowledge base " + doc.name + ": '" + key + "' must be an array");
    }
    const std::vector<size_t>& at = lines.lines[key];
    for (size_t i = 0; i < value.size(); ++i) {
      const Entry entry(value[i],
                        fmt::format("{}:{}", doc.name, i < at.size() ? at[i] : size_t{1}));
      if (key == "signatures") {
        signatures.push_back(ReadSignature(entry));
      } else {
        causes.push_back(ReadCause(entry));
      }
    }
  }
}

// Every id once, every cause a signature names defined, every signature a condition names.
void CheckReferences(const FailureBase& base) {
  std::set<std::string, std::less<>> ids;
  for (const FailureCause& c : base.causes()) {
    if (!ids.insert(c.id).second) {
      throw UsageError("failure knowledge base " + c.origin + ": the cause id '" + c.id +
                       "' is taken by an earlier entry");
    }
  }
  ids.clear();
  for (const Signature& s : base.signatures()) {
    if (!ids.insert(s.id).second) {
      throw UsageError("failure knowledge base " + s.origin + ": the signature id '" + s.id +
                       "' is taken by an earlier entry");
    }
  }
  for (const Signature& s : base.signatures()) {
    for (const CauseLink& link : s.causes) {
      if (base.FindCause(link.cause) == nullptr) {
        throw UsageError("failure knowledge base " + s.origin + ": signature '" + s.id +
                         "' names the cause '" + link.cause +
                         "', which no entry of 'causes' defines");
      }
      for (const Condition& c : link.when) {
        if (c.kind == Condition::Kind::kSignature && ids.count(c.value) == 0) {
          throw UsageError("failure knowledge base " + s.origin +
                           ": a condition names the signature '" + c.value +
                           "', which no entry defines");
        }
      }
    }
  }
}

}  // namespace

FailureBase FailureBase::Parse(const std::vector<Document>& documents) {
  FailureBase base;
  for (const Document& doc : documents) ParseDocument(doc, base.signatures_, base.causes_);
  CheckReferences(base);
  base.Index();
  return base;
}

const FailureBase& FailureBase::Builtin() {
  static const FailureBase base = [] {
    std::vector<Document> docs;
    for (const auto& file : detail::FailureDocuments()) {
      docs.push_back({"data/failures/" + std::string(file.name), std::string(file.text)});
    }
    return Parse(docs);
  }();
  return base;
}

const FailureCause* FailureBase::FindCause(std::string_view id) const {
  for (const FailureCause& c : causes_) {
    if (c.id == id) return &c;
  }
  return nullptr;
}

}  // namespace fabricscope
