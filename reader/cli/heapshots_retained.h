// `mlpd heapshots --retained / --dominators / --paths / --diff A B --retained / --suspects`
// (cmd_heapshots.cpp parses the options, this runs them; docs/reports.md "Retained sizes").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mlpd::cli {

struct RetainedRequest {
  enum class View { retained, dominators, paths, diff, suspects } view = View::retained;
  bool json = false;
  bool have_heapshot = false;
  uint64_t heapshot = 0;        // --heapshot I (default: the last one)
  uint64_t top = UINT64_MAX;    // --top N
  std::string paths_class;      // --paths CLASS
  uint64_t max = 5;             // --max K
  uint64_t depth = 4;           // --depth D
  bool have_min_bytes = false;
  uint64_t min_bytes = 0;       // --min-bytes B (default: 1% of the heapshot's bytes)
  uint64_t diff_from = 0, diff_to = 0;
  std::vector<std::string> files;
};

// Returns the exit status (0, 1 problems in a file or a heapshot too large, 2 bad usage).
int run_retained(const RetainedRequest& request);

}  // namespace mlpd::cli
