// NCCL's own log (NCCL_DEBUG=INFO) of a job of many ranks, compared across its nodes: the
// transport of each channel, the HCAs, the plugin and NCCL versions, the algorithm and
// protocol per size, NVLS and CollNet; the nodes that differ from the majority, with the lines
// that show it.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace fabricscope {

// One node that says something else than most nodes about one aspect.
struct NcclNodeDifference {
  std::string host;
  std::string aspect;    // "transport", "hca", "plugin", "version", "tuning", "nvls", "collnet"
  std::string value;     // what this node says: its values of the aspect, joined with "; "
  std::string majority;  // what most nodes say
  size_t majority_nodes = 0;
  std::vector<std::string> lines;  // "file:line: text" of this node's values not in the majority
};

// Every aspect of every node, and where they differ.
struct NcclNodeComparison {
  std::string source;
  size_t lines = 0;                                                 // NCCL lines read
  std::map<std::string, std::map<std::string, std::string>> nodes;  // host -> aspect -> value
  std::map<std::string, std::string> majority;                      // aspect -> what most nodes say
  std::vector<NcclNodeDifference> differences;                      // by host, then aspect
};

// Reads NCCL lines one at a time ("host:pid:tid [dev] NCCL INFO ...", behind any launcher
// prefix), so that a reader already going through a log feeds it without a second pass.
class NcclNodeCollector {
 public:
  explicit NcclNodeCollector(std::string source);
  ~NcclNodeCollector();
  NcclNodeCollector(NcclNodeCollector&&) noexcept;
  NcclNodeCollector& operator=(NcclNodeCollector&&) noexcept;

  void Feed(std::string_view line, size_t line_no);
  // Each aspect's majority over the nodes that printed it (a node that did not print an
  // aspect, such as the TUNING lines only rank 0 prints, is not compared on it).
  NcclNodeComparison Finish();

 private:
  void AddDifferences(size_t aspect, const std::string& majority, size_t votes,
                      NcclNodeComparison& out) const;

  struct State;
  std::unique_ptr<State> state_;
};

// The whole text at once.
NcclNodeComparison CompareNcclNodes(std::string_view text, const std::string& source);
// A file read a chunk at a time (memory bounded whatever its size); one that cannot be read
// compares no node.
NcclNodeComparison CompareNcclNodesInFile(const std::string& path);

// "nodes compared: 128 ...", then one block per differing node, with its lines.
std::string RenderNcclNodes(const NcclNodeComparison& comparison);

}  // namespace fabricscope
