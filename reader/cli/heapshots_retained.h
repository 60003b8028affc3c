// `mlpd heapshots --retained / --dominators / --paths / --diff A B --retained / --suspects`
// (cmd_heapshots.cpp parses the options, this reads the file and has the views (mlpd/heap_views.h)
// render what was asked; docs/reports.md "Retained sizes").
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "args.h"
#include "mlpd/retention.h"

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

// What one file gave: the analyses asked for, how many heapshots it has, whether it read cleanly.
struct FileResult {
  std::vector<views::Retention> results;           // in heapshot order
  std::unique_ptr<views::RetentionAnalysis> kept;  // the single heapshot (`single`)
  size_t heapshots = 0;
  bool problems = false;  // reported on stderr as FILE: offset N (buffer K): ...
  bool opened = false;    // false: could not be opened (reported as mlpd COMMAND: cannot open ...)
};

// Reads `path`. `single`: keep the analysis of heapshot `index` (or of the last one when !have_index);
// otherwise analyse every heapshot `want` selects (null: all) as it closes and keep its result.
FileResult read_heapshots(const char* command, const std::string& path, bool single, bool have_index, uint64_t index,
                          const std::function<bool(size_t)>& want, bool offsets, uint32_t fold_depth,
                          bool print_problems = true);

// Returns the exit status (0, 1 problems in a file or a heapshot too large, 2 bad usage).
int run_retained(const RetainedRequest& request);

// --diff A B --retained and --suspects (heapshots_growth.cpp).
int run_growth(const RetainedRequest& request);

class OutBuffer;  // out_buffer.h
// Shared by heapshots_retained.cpp and heapshots_growth.cpp.
namespace heapshots_detail {
// False (with the message on stderr) when FILE has no heapshot `index`.
bool index_ok(const FileResult& fr, uint64_t index, const std::string& path);
// True (with the message on stderr) when the analysis failed (too large).
bool report_error(const views::Retention& r);
// Flushes the output; 1 with a message when it could not be written, else `status`.
int finish_output(OutBuffer& out, int status);
}  // namespace heapshots_detail

// `mlpd export --what retained [--heapshot I] [--depth D] -o OUT FILE` (export_retained.cpp): the
// dominator tree as a flame graph (.html) or collapsed stacks (.collapsed, .txt). cmd_export hands
// the arguments over when the parser reads --what retained among them.
int cmd_export_retained(int argc, char** argv);
// What it takes; its options fill these (cmd_export reads them too, to know which export is asked for).
struct RetainedExportArgs {
  std::string out_path;
  uint64_t heapshot = 0, depth = 32;
  bool have_heapshot = false;
  std::vector<Option> options();
};

}  // namespace mlpd::cli
