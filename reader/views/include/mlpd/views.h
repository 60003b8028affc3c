// Views of a profile: the report and the exporters, one file each in reader/views/.
//
// Adding an exporter: write reader/views/export_NAME.cpp defining a factory
//   std::unique_ptr<Exporter> make_NAME_exporter(const ExportOptions&);
// declare it below, and add one row to kExporters in reader/cli/cmd_export.cpp (format name, file
// extensions, summary, factory). The export command builds the profile once, passing the exporter's
// listener() (if any) to build_profile, then calls write().
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "mlpd/profile.h"

namespace mlpd::views {

struct ExportOptions {
  // The --what asked for. When what_given is false the user gave none and `what` is only a guess
  // made before the file was read: call effective_what(p, o) in write() for the one to export.
  profile::What what = profile::What::cpu;
  bool what_given = false;
  bool threads = false;     // --threads: one root frame (or profile) per thread
  std::string input_name;   // the input file, for titles
};

// The --what to export: the one asked for, else cpu when the file has samples, else the first of
// calls, alloc, exceptions, monitor that the file has (cpu when it has none of them).
profile::What effective_what(const profile::Profile& p, const ExportOptions& o);
// When the file lacks `w`: the one-line message naming the option that records it; else "".
std::string missing_what_error(const profile::Profile& p, profile::What w);

class Exporter {
 public:
  virtual ~Exporter() = default;
  // A listener to receive time-ordered events while the profile is built (nullptr: none needed).
  virtual profile::Listener* listener() { return nullptr; }
  // Writes the export of `p` to `out` (opened in binary mode). Returns false with a one-line `error`
  // when nothing sensible can be written.
  virtual bool write(const profile::Profile& p, std::FILE* out, std::string& error) = 0;
  // About how many bytes write() would produce, from the model (and what the listener kept), without
  // writing: `mlpd export --max-output` refuses an output estimated above its limit. Meant to be close
  // (within a factor of about two), erring on the large side. Default: the frame names plus every
  // weighted stack as a list of frame indexes.
  virtual uint64_t estimate(const profile::Profile& p);
};

// Estimates shared by the exporters (export_common.cpp): the frames' names (each once), and the
// stacks of `what` written out once per weighted node, either as frame names joined by a separator
// (`with_names`) or as `per_frame` bytes per frame; `per_stack` bytes more for each.
uint64_t estimate_names(const profile::Profile& p);
uint64_t estimate_stacks(const profile::Profile& p, profile::What what, bool with_names, uint64_t per_frame,
                         uint64_t per_stack);

std::unique_ptr<Exporter> make_collapsed_exporter(const ExportOptions& o);
std::unique_ptr<Exporter> make_html_exporter(const ExportOptions& o);
std::unique_ptr<Exporter> make_speedscope_exporter(const ExportOptions& o);  // export_speedscope.cpp
std::unique_ptr<Exporter> make_trace_exporter(const ExportOptions& o);       // export_trace.cpp
std::unique_ptr<Exporter> make_pprof_exporter(const ExportOptions& o);       // export_pprof.cpp
std::unique_ptr<Exporter> make_heatmap_exporter(const ExportOptions& o);  // heatmap.cpp
// The HTML flame graph's page around its JSON (html.cpp), for pages that make flame graphs in the
// browser (the heatmap): head (with an @TITLE@ placeholder) + JSON + tail.
void html_flamegraph_template(std::string_view& head, std::string_view& tail);

// The text report (`mlpd report`), and its JSON form.
struct ReportOptions {
  size_t top = 10;
  bool json = false;
  bool has_thread = false;  // --thread: only this thread's samples/calls/allocations/...
  std::string thread;       // a thread name or id (decimal or 0x hex)
  std::string input_name;
  // mlpd top while the file's start is still being read for its names (issue 33.4): the counters'
  // values are sums of what has been read, not yet the file's; the rate delivered, the counters and
  // the CPU time by thread are not shown (the CPU heading says so).
  bool counters_partial = false;
};
// Returns false with `error` when the --thread selection matches no thread.
bool write_report(const profile::Profile& p, const ReportOptions& o, std::FILE* out, std::string& error);

// Collapsed stacks of `what` ("frame;frame;leaf COUNT", root first), aggregated by frame names; with
// `threads`, the thread label is the first frame. Used by the collapsed and html exporters and diff.
struct CollapsedStack {
  std::string stack;  // "a;b;c"
  std::string kinds;  // one letter per frame: m managed, n native, r runtime, s special, t thread
  uint64_t weight = 0;
};
// Sorted by stack.
std::vector<CollapsedStack> collapse(const profile::Profile& p, profile::What what, bool threads);
// The program's managed frames only (kind m, without the runtime's "(wrapper ...)" frames; a thread
// root kept): what two runtimes share for one program, whose native frames (Mono's runtime and
// wrappers, .NET's host and runtime) differ. A frame equal to its caller's is kept once (.NET's OSR
// body over its tier-0 frame; direct recursion alike on both sides). Stacks that become equal are
// merged (weights summed); a stack left with no frame becomes "[not managed]". Sorted by stack.
std::vector<CollapsedStack> managed_only(const std::vector<CollapsedStack>& stacks);
// The same stacks, streamed without storing them (memory: the merged tree of frame names): fn gets
// each stack with a non-zero weight, depth first (a stack's callees right after it, by name).
void for_each_collapsed(const profile::Profile& p, profile::What what, bool threads,
                        const std::function<void(const std::string& stack, const std::string& kinds,
                                                 uint64_t weight)>& fn);

// The self-contained flame graph page. `kinds` gives each frame name's FrameKind colour; for a diff,
// `base` holds the weights of the first profile per stack (same order as `stacks`, 0 when absent).
struct FlameGraphInput {
  std::string title;
  std::string unit;
  std::vector<CollapsedStack> stacks;
  std::vector<uint64_t> base;  // empty unless a diff: weight of each stack in profile A
  bool diff = false;
};
std::string flame_graph_html(const FlameGraphInput& in);

// mlpd diff (diff.cpp): the stacks of `what` in A and B joined by frame names, B's weights as the
// widths and A's as the base; with `threads` each thread is a root, matched by name (the thread ids of
// two runs differ); with `managed`, managed_only() on both sides first.
struct DiffOptions {
  profile::What what = profile::What::cpu;
  bool threads = false;
  bool managed = false;
  std::string name_a, name_b;  // for the title
};
FlameGraphInput diff_stacks(const profile::Profile& a, const profile::Profile& b, const DiffOptions& o);
// Lines "frame;...;leaf A_WEIGHT B_WEIGHT", by stack (FlameGraph's difffolded form).
std::string diff_collapsed_text(const FlameGraphInput& in);

}  // namespace mlpd::views
