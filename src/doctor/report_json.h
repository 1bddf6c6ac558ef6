// Private: the JSON form of doctor reports, shared by the JSON reporter and the gather.
#pragma once

#include <nlohmann/json.hpp>

#include "fabricscope/doctor.h"

namespace fabricscope::doctor {

nlohmann::ordered_json ToJson(const NodeReport& report);
nlohmann::ordered_json ToJson(const Drift& drift);
nlohmann::ordered_json ToJson(const ClusterReport& report);

// Throws UsageError for a document that is not a node report.
NodeReport NodeFromJson(const nlohmann::ordered_json& j);

}  // namespace fabricscope::doctor
