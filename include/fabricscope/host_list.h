// Slurm's host lists ("node[01-03,7],gpu1"): the one parser that launch (SLURM_NODELIST) and
// locate (topology.conf's Nodes=) share.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace fabricscope {

// The most names a host list may expand to; a longer one is refused with the reason, so that
// a hostile or mistyped list ("node[1-2147483647]") cannot exhaust memory. Slurm itself
// refuses a single range of more than 65536 hosts (MAX_RANGE in src/common/hostlist.c).
inline constexpr size_t kMaxHostListNames = size_t{1} << 20;

// The names of `list`, in order and with repeats, as `scontrol show hostnames` prints them:
// items separated by commas or white space outside brackets; each item a name with any
// number of bracketed range lists ("a[1-2]b[3,5]" is every combination, the first bracket
// outermost); a range's numbers zero-padded to the width of its first number as written
// ("node[001-003]" -> node001..node003, "node[9-11]" -> node9..node11). Throws UsageError
// naming the list and the fault: an unbalanced or nested bracket, an empty range, a number
// that is not decimal digits or exceeds 64 bits, a range that runs down, or more than
// `max_names` names in all.
std::vector<std::string> ExpandHostList(std::string_view list,
                                        size_t max_names = kMaxHostListNames);

}  // namespace fabricscope
