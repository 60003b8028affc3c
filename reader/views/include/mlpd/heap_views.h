// The heap views (docs/reports.md "Heapshots", "Retained sizes", "What grew"): what `mlpd heapshots`,
// `mlpd export --what retained` and the report's "Held by" section show, rendered from the heap model
// (mlpd/heap/: heapshot summaries and diffs) and the retention analysis (mlpd/retention.h). Each
// function appends text or JSON Lines to `out`, byte for byte what the commands print; the CLI only
// parses the options, reads the file and writes the result.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mlpd/heap/heap_graph.h"
#include "mlpd/heap/heapshots.h"
#include "mlpd/profile.h"
#include "mlpd/report.h"
#include "mlpd/retention.h"

namespace mlpd::views {

// ---- mlpd heapshots [--json] [--top N]: per heapshot a header line, then one line per class
// (most bytes first, at most `top`); "PATH: no heapshots" when there is none. JSON: one object per
// heapshot.
// `drain`, when given, is called with `out` after each heapshot once it holds 64 KiB or more, to write
// and clear it: a file of a million heapshots is printed as it is rendered, not held whole. The
// renderers of long listings below (--diff --all, --retained, --dominators) take one too, called
// between their rows.
using Drain = std::function<void(std::string& out)>;
void heapshots_text(std::string& out, std::string_view path, const std::vector<HeapshotSummary>& shots, uint64_t top,
                    const Drain& drain = nullptr);
void heapshots_json(std::string& out, const std::vector<HeapshotSummary>& shots, uint64_t top,
                    const Drain& drain = nullptr);

// ---- mlpd heapshots --diff A B [--all]: the classes that changed (`all`: every class), largest byte
// growth first, at most `top`, then the totals (text: a and b are the two heapshots).
void heapshot_diff_text(std::string& out, const HeapshotDiff& d, const HeapshotSummary& a, const HeapshotSummary& b,
                        bool all, uint64_t top, const Drain& drain = nullptr);
void heapshot_diff_json(std::string& out, const HeapshotDiff& d, bool all, uint64_t top, const Drain& drain = nullptr);

// ---- mlpd heapshots --retained: the classes by retained size, at most `top`.
void retained_text(std::string& out, const Retention& r, uint64_t top, const Drain& drain = nullptr);
void retained_json(std::string& out, const Retention& r, uint64_t top, const Drain& drain = nullptr);

// ---- --dominators: the folded dominator tree, at most `top` top-level subtrees, `depth` levels,
// nodes retaining at least `min_bytes`.
void dominators_text(std::string& out, const Retention& r, uint64_t top, uint64_t depth, uint64_t min_bytes,
                     const Drain& drain = nullptr);
void dominators_json(std::string& out, const Retention& r, uint64_t top, uint64_t depth, uint64_t min_bytes,
                     const Drain& drain = nullptr);

// ---- --paths CLASS: the paths from a GC root to the instances of `klass` retaining most (from
// RetentionAnalysis::paths; `instances`: its count of reached instances).
void paths_text(std::string& out, const Retention& r, std::string_view klass, uint64_t instances,
                const std::vector<RootPath>& paths);
void paths_json(std::string& out, std::string_view klass, const std::vector<RootPath>& paths);

// ---- --diff A B --retained: the growth of retained bytes by class and by folded subtree
// (class_growth, subtree_growth), at most `top` of each.
void growth_text(std::string& out, const Retention& a, const Retention& b, const std::vector<Growth>& classes,
                 const std::vector<Growth>& subtrees, uint64_t top);
void growth_json(std::string& out, const Retention& a, const Retention& b, const std::vector<Growth>& classes,
                 const std::vector<Growth>& subtrees, uint64_t top);

// ---- --suspects over `heapshots` heapshots (leak_suspects), at most `top`.
void suspects_text(std::string& out, size_t heapshots, const std::vector<Suspect>& suspects, uint64_t top);
void suspects_json(std::string& out, size_t heapshots, const std::vector<Suspect>& suspects, uint64_t top);

// ---- mlpd export --what retained -o OUT.collapsed / .txt: "STACK BYTES" lines (retained_stacks).
std::string retained_collapsed(const std::vector<CollapsedStack>& stacks);

// ---- the report's "Held by" section: the classes of `r` (the last heapshot) by retained size, those
// retaining something, at most `top`, each with the root holding its largest instance.
report::HeldBySection held_by_section(const Retention& r, size_t top);

// The "Held by" section from the report's one pass over the file: set as the profile build's tap
// (profile::BuildOptions::tap), it builds the last heapshot's graph from the events the build reads
// (the heap model's HeapGraphCollector, last heapshot only); section() then labels and analyses it.
class HeldByTap final : public profile::EventTap {
 public:
  HeldByTap();
  ~HeldByTap() override;
  HeldByTap(const HeldByTap&) = delete;
  HeldByTap& operator=(const HeldByTap&) = delete;

  void on_buffer(const BufferInfo& b) override;
  void on_event(const Event& e) override;
  void restart() override;

  // After the build: the section of the file's last heapshot (nullopt when it has none), its classes
  // at most `top`. Once.
  std::optional<report::HeldBySection> section(size_t top);

 private:
  std::unique_ptr<HeapGraphCollector> collector_;
  std::optional<HeapGraph> last_;
  BufferInfo buffer_;
};

}  // namespace mlpd::views
