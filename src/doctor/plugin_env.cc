// The lint of the variables NCCL's neighbours read: RCCL (RCCL_*, and which NCCL_* it keeps),
// GCP's TCPX/TCPXO plugins (NCCL_GPUDIRECTTCPX_*, NCCL_FASTRAK_*), aws-ofi-nccl (OFI_NCCL_*,
// the FI_* it reads or sets) and the ROCm runtime (HSA_*), against the tables generated from
// their sources (data/nccl/<source>-variables.json, docs/env.md).
#include <algorithm>
#include <set>

#include "doctor/check.h"
#include "doctor/nccl_env.h"

namespace fabricscope::doctor {
namespace {

bool IsAmd(const Platform& p) { return p.gpu_model.starts_with("AMD"); }
bool IsTcpx(const Platform& p) { return p.transport == "TCPX"; }
bool IsTcpxo(const Platform& p) { return p.transport == "TCPXO"; }
bool IsEfa(const Platform& p) { return p.transport == "EFA"; }

// A source whose variables are generated, and the platforms it runs on.
struct Reader {
  std::string_view source;  // the table: data/nccl/<source>-variables.json
  std::string_view who;     // "RCCL", "the GPUDirect-TCPX network plugin"
  bool (*applies)(const Platform&);
  std::string_view where;  // "AMD GPUs"
};

const std::vector<Reader>& Readers() {
  static const std::vector<Reader> kReaders = {
      {"rccl", "RCCL", IsAmd, "AMD GPUs"},
      {"tcpx", "the GPUDirect-TCPX network plugin", IsTcpx, "GCP's TCPX platforms (a3-high)"},
      {"tcpxo", "the GPUDirect-TCPXO (FasTrak) network plugin", IsTcpxo,
       "GCP's TCPXO platforms (a3-mega)"},
      {"aws-ofi-nccl", "the aws-ofi-nccl network plugin", IsEfa, "EFA platforms (AWS)"},
      {"rocr", "the ROCm runtime (ROCR-Runtime)", IsAmd, "AMD GPUs"},
  };
  return kReaders;
}

const Reader& ReaderOf(std::string_view source) {
  const auto& r = Readers();
  return *std::find_if(r.begin(), r.end(), [&](const Reader& x) { return x.source == source; });
}

// A family of names and the tables that know them. `unchecked` is empty when the tables cover
// every reader of the family (an unknown name is then a finding); otherwise it says why an
// unknown name is not judged.
struct Family {
  std::string_view prefix;
  std::vector<std::string_view> sources;
  std::string_view unchecked;
};

const std::vector<Family>& Families() {
  static const std::vector<Family> kFamilies = {
      {"NCCL_GPUDIRECTTCPX_", {"tcpx"}, ""},
      {"NCCL_FASTRAK_", {"tcpxo"}, ""},
      {"OFI_NCCL_", {"aws-ofi-nccl"}, ""},
      {"FI_",
       {"aws-ofi-nccl"},
       "libfabric reads the FI_* variables itself, and no table of libfabric's is generated "
       "here; aws-ofi-nccl's table holds the ones the plugin reads or sets"},
      {"RCCL_", {"rccl"}, ""},
      {"HSA_",
       {"rocr", "rccl"},
       "ROCR-Runtime's table does not cover the ROCm thunk (libhsakmt), which reads HSA_* "
       "variables too"},
  };
  return kFamilies;
}

std::string Quote(const std::string& name, const EnvSetting& s) {
  return name + "=" + s.value + " (" + s.source + ")";
}

std::string Where(const GeneratedVariable& v, const GeneratedVariables& t) {
  return t.repository + " " + v.file + ":" + std::to_string(v.line) + " at " + v.last;
}

std::vector<std::string> Words(std::string_view name) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= name.size()) {
    const size_t end = std::min(name.find('_', start), name.size());
    if (end > start) out.emplace_back(name.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// Whether `candidate` is what `name` misspelt: the words of `name` it lacks are none of the
// family's words. A name made of real words (NCCL_FASTRAK_MAX_FLOWS beside ..._NUM_FLOWS) is
// another setting, and the suggestion would change what it does.
bool IsTypoOf(std::string_view name, std::string_view candidate,
              const std::set<std::string>& vocabulary) {
  const std::vector<std::string> given = Words(name);
  const std::vector<std::string> known = Words(candidate);
  bool misspelt = false;
  for (const std::string& w : given) {
    if (std::find(known.begin(), known.end(), w) != known.end()) continue;
    if (vocabulary.count(w) != 0) return false;
    misspelt = true;
  }
  return misspelt;
}

// The family's name (read at its newest tag) that `name` misspells, or "".
std::string FamilyTypo(const std::string& name, const Family& family) {
  std::set<std::string> vocabulary;
  std::vector<std::string_view> names;
  for (std::string_view source : family.sources) {
    const GeneratedVariables& t = SourceVariables(source);
    for (const GeneratedVariable& v : t.variables) {
      if (!v.name.starts_with(family.prefix) || v.last != t.newest) continue;
      names.push_back(v.name);
      for (std::string& w : Words(v.name)) vocabulary.insert(std::move(w));
    }
  }
  std::string best;
  size_t best_distance = kTypoEdits + 1;
  for (std::string_view candidate : names) {
    const size_t d = Distance(name, candidate);
    if (d < best_distance && IsTypoOf(name, candidate, vocabulary)) {
      best_distance = d;
      best = std::string(candidate);
    }
  }
  return best;
}

// A name `source`'s table knows: nothing to say when it is read at the newest tag on a
// platform it applies to.
void Known(const std::string& name, const EnvSetting& s, const LintContext& c,
           const GeneratedVariable& v, const GeneratedVariables& t, std::vector<Finding>& out) {
  const Reader& reader = ReaderOf(t.source);
  if (c.platform != nullptr && !reader.applies(*c.platform)) {
    out.push_back(MakeFinding(Severity::kWarn,
                              name + " is read by " + std::string(reader.who) + ", which " +
                                  c.platform->name + " does not use: it has no effect here",
                              {Quote(name, s), Where(v, t)},
                              "remove it (it applies to " + std::string(reader.where) + ")"));
  } else if (!v.status.empty() && v.last == t.newest) {
    out.push_back(MakeFinding(Severity::kWarn,
                              name + " is " + v.status + " in " + std::string(reader.who) + " (" +
                                  Where(v, t) + ")" + (v.message.empty() ? "" : ": " + v.message),
                              {Quote(name, s)}, "remove it"));
  } else if (v.last != t.newest) {
    out.push_back(MakeFinding(
        Severity::kWarn,
        name + " is no longer read: " + std::string(reader.who) + " read it from " + v.first +
            " to " + v.last + " (" + Where(v, t) + "); " + v.last + " is the last",
        {Quote(name, s)}, "remove it (where " + v.last + " or older runs it still applies)"));
  } else if (!v.Reads() &&
             std::find(v.access.begin(), v.access.end(), "exported") != v.access.end()) {
    out.push_back(MakeFinding(Severity::kInfo,
                              name + " is set by " + t.repository + "'s own profile script (" +
                                  v.file + ":" + std::to_string(v.line) + " at " + v.last +
                                  "), but " + std::string(reader.who) +
                                  "'s source does not read it",
                              {Quote(name, s)}, ""));
  }
}

// The table of `sources` that knows `name` at any tag, and the variable.
std::pair<const GeneratedVariables*, const GeneratedVariable*> Lookup(
    const std::string& name, const std::vector<std::string_view>& sources) {
  for (std::string_view source : sources) {
    const GeneratedVariables& t = SourceVariables(source);
    if (const GeneratedVariable* v = t.Find(name)) return {&t, v};
  }
  return {nullptr, nullptr};
}

}  // namespace

const std::vector<std::string_view>& LintedPrefixes() {
  static const std::vector<std::string_view> kPrefixes = [] {
    std::vector<std::string_view> out = {"NCCL_"};
    for (const Family& f : Families()) {
      if (!f.prefix.starts_with("NCCL_")) out.push_back(f.prefix);
    }
    return out;
  }();
  return kPrefixes;
}

bool LintFamilyVariable(const std::string& name, const EnvSetting& setting, const LintContext& c,
                        std::vector<Finding>& out) {
  const auto& families = Families();
  const auto family = std::find_if(families.begin(), families.end(),
                                   [&](const Family& f) { return name.starts_with(f.prefix); });
  if (family == families.end()) return false;
  if (const auto [table, v] = Lookup(name, family->sources); v != nullptr) {
    Known(name, setting, c, *v, *table, out);
    return true;
  }
  const Reader& reader = ReaderOf(family->sources.front());
  const GeneratedVariables& t = SourceVariables(reader.source);
  const std::string suggestion = FamilyTypo(name, *family);
  if (!suggestion.empty()) {
    out.push_back(MakeFinding(Severity::kWarn,
                              name + " is not a variable " + std::string(reader.who) +
                                  " reads: did you mean " + suggestion + "?",
                              {Quote(name, setting)}, "rename it to " + suggestion));
  } else if (family->unchecked.empty()) {
    out.push_back(
        MakeFinding(Severity::kWarn,
                    name + " is not a variable " + std::string(reader.who) + " reads (" +
                        t.repository + " " + t.oldest + " .. " + t.newest + ")",
                    {Quote(name, setting)},
                    "remove it, or check the spelling against " + t.repository + "'s source"));
  } else {
    out.push_back(MakeFinding(Severity::kInfo,
                              name + ": not checked: " + std::string(family->unchecked),
                              {Quote(name, setting)}, ""));
  }
  return true;
}

bool RcclDrops(const std::string& name, const EnvSetting& setting, const LintContext& c,
               std::vector<Finding>& out) {
  if (c.platform == nullptr || !IsAmd(*c.platform) || !name.starts_with("NCCL_")) return false;
  const GeneratedVariables& rccl = SourceVariables("rccl");
  const GeneratedVariable* kept = rccl.Find(name);
  if (kept != nullptr && kept->last == rccl.newest) return false;
  const GeneratedVariables& nccl = NcclSourceVariables();
  const GeneratedVariable* v = nccl.Find(name);
  if (v == nullptr) return false;  // not NCCL's either: the usual lint says so
  out.push_back(MakeFinding(
      Severity::kWarn,
      name + " is read by NCCL (" + v->file + ":" + std::to_string(v->line) + " at " + v->last +
          ") but not by RCCL (" + rccl.repository + " " + rccl.oldest + " .. " + rccl.newest +
          "), which " + c.platform->name + "'s AMD GPUs use: it has no effect here",
      {Quote(name, setting)},
      "remove it (a newer RCCL than " + rccl.newest + " may read it: check its source)"));
  return true;
}

bool ReadByOthers(const std::string& name, const EnvSetting& setting, const LintContext& c,
                  std::vector<Finding>& out) {
  for (const Reader& reader : Readers()) {
    const GeneratedVariables& t = SourceVariables(reader.source);
    const GeneratedVariable* v = t.Find(name);
    if (v == nullptr || v->last != t.newest) continue;
    if (c.platform != nullptr && !reader.applies(*c.platform)) {
      out.push_back(MakeFinding(Severity::kWarn,
                                name + " is not a variable NCCL reads: " + std::string(reader.who) +
                                    " reads it, which " + c.platform->name + " does not use",
                                {Quote(name, setting), Where(*v, t)},
                                "remove it (it applies to " + std::string(reader.where) + ")"));
    } else {
      Known(name, setting, c, *v, t, out);
    }
    return true;
  }
  return false;
}

}  // namespace fabricscope::doctor
