// `mlpd report` as data: one struct per section, built from the profile model by build_report()
// (report_model.cpp, report_cpu.cpp), and two renderers over them, text (report_text.cpp) and JSON
// (report_json.cpp). write_report() (mlpd/views.h) is build_report() then one renderer. A section
// that the file (or the --thread selection) has nothing for is absent (std::nullopt) and neither
// renderer writes it. Lists are already ranked and cut to what the renderers show, except where a
// comment says the text cuts further (the JSON lists those whole).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mlpd/profile.h"
#include "mlpd/views.h"

namespace mlpd::views::report {

// A method's numbers merged by name (distinct method pointers can share a name).
struct MethodLine {
  std::string name;
  profile::FrameKind kind = profile::FrameKind::managed;
  profile::MethodStat s;
};

struct HeaderSection {
  std::string file;        // the input's name ("" when not given)
  std::string program;     // "" when unknown
  int64_t pid = 0;
  std::string options, arch, os;
  uint64_t startup_ms = 0;
  uint64_t duration_ns = 0;
  uint64_t events = 0, threads = 0, problems = 0;  // threads: every thread the file names
  uint64_t threads_writing = 0;  // those with buffers of their own (what `mlpd verify` counts)
  // A sampling run without `nodefaults` whose events are mostly Mono's defaults (exception throws and
  // clauses) rather than samples (issue 33.3): those events, and the samples; 0 otherwise.
  uint64_t default_events = 0, default_samples = 0;
  bool has_thread = false;
  std::string thread_note;  // the threads --thread selected
};

struct RecordedSection {  // pause/resume (issue 15)
  struct Interval {
    double start_s = 0, end_s = 0;  // seconds after the first event
    uint64_t ns = 0;
  };
  uint64_t recorded_ns = 0;
  std::vector<Interval> intervals;
};

struct CpuSection {
  // A line of the text's rankings: a method of the program, or a group of frames (kind "group").
  struct Ranked {
    std::string name, kind;
    uint64_t self = 0, total = 0;
  };
  struct Group {  // waits, the runtime's unnamed code, the profiler's own frames (issue 22.2)
    std::string name;  // "[waits]", "[runtime, unnamed]", "[mlpd overhead]"
    uint64_t self = 0, total = 0;
    std::vector<std::pair<std::string, uint64_t>> members;  // name, self hits; most first
  };
  uint64_t hits = 0;
  std::vector<MethodLine> by_self, by_total;  // every frame, groups not applied
  std::vector<Ranked> ranked_self, ranked_total;  // the program's frames and the group lines
  std::vector<std::pair<std::string, uint64_t>> threads;  // thread label, hits; most first
  std::vector<Group> groups;  // those with hits
  std::string asked_hz;       // "" when the file does not say
  double delivered_hz = 0;    // 0 when the file does not say
  bool rate_pending = false;  // ReportOptions::counters_partial: the rate delivered is not known yet
  bool wall_clock = false;
  // Samples cut short, by reason (the agent's profiler counters; issue 33): deeper than the frames
  // kept ([truncated]), a managed frame nobody could name ([stack cut]), a native stack beyond the
  // agent's stack copy. 0 when the file does not say.
  uint64_t truncated = 0, cut_unnamed = 0, cut_copy = 0;
  // The runtime's unnamed code (issue 33.5): one per stripped module with self hits in that group, and
  // the package whose separate debug symbols would name it ("" when the table has none).
  struct MissingSymbols {
    std::string module, package;
    uint64_t self = 0;
  };
  std::vector<MissingSymbols> missing_symbols;  // most self hits first
};

struct CallsSection {
  struct Step {
    std::string name;
    profile::CallStat cs;
    uint64_t busy_ns = 0;  // cs.total_ns less the time in waiting methods (waiting_method)
  };
  uint64_t total = 0, unmatched_leaves = 0, unclosed = 0;
  std::vector<MethodLine> by_total, by_self, by_calls;
  std::vector<Step> hot_path;  // heaviest callee at each level
  // AOT-compiled images the program ran (the agent's "AOT image loaded: NAME" counters; issue 33):
  // their methods send no enter/leave events, so this section does not see them.
  std::vector<std::string> aot_images;
};

struct Site {  // the innermost frame that is not the runtime's
  std::string name;
  uint64_t count = 0, bytes = 0;
};

struct AllocSection {
  uint64_t objects = 0, bytes = 0;
  uint64_t sample_interval = 0, samples = 0;  // interval 0: every allocation recorded
  bool show_types = true;                     // false with --thread (types are not per thread)
  std::vector<profile::TypeStat> types;
  std::vector<Site> sites;
};

struct ExceptionSection {
  uint64_t throws = 0, clauses = 0;
  bool show_types = true;
  std::vector<profile::TypeStat> types;
  std::vector<Site> sites;
};

struct MonitorSection {
  uint64_t contentions = 0, acquired = 0, failed = 0, wait_ns = 0;
  std::vector<Site> sites;
};

struct GcSection {
  uint64_t collections = 0, resizes = 0;
  std::vector<uint64_t> generations;  // collections per generation
  uint64_t pauses = 0, total_ns = 0, p50_ns = 0, p99_ns = 0, max_ns = 0;
};

struct JitSection {
  uint64_t methods = 0, code_bytes = 0, helpers = 0;
  std::vector<MethodLine> largest;
};

struct CountersSection {
  std::vector<profile::CounterInfo> values;  // all, by name (the text shows those not zero, up to top)
};

struct CpuThreadsSection {  // the agent's "Thread CPU time (user|system): NAME [TID]" counters
  struct Thread {
    std::string name;
    double user_s = 0, system_s = 0;
  };
  double process_user_s = 0, process_system_s = 0;
  std::vector<Thread> threads;  // most CPU first, all (the text shows up to top)
};

struct HeapshotsSection {
  struct Shot {
    uint64_t time_ns = 0;  // after the first event
    uint64_t objects = 0, bytes = 0;
    bool complete = false;
  };
  std::vector<Shot> list;  // all (the text shows the last top)
};

// The last heapshot's classes by retained size, each with the root holding its largest instance
// (docs/reports.md "Retained sizes"). Not built from the profile model, which keeps no object graph:
// the CLI reads the file again (reader/cli/heapshots_retained.cpp) and sets Report::held_by.
struct HeldBySection {
  struct Class {
    std::string name;
    uint64_t objects = 0, shallow = 0, retained = 0;
    bool has_root = false;  // false: no root named (none of its instances reached)
    std::string root_kind, root_name;
  };
  size_t index = 0;      // the heapshot's index in the file
  std::string error;     // set (too large for the memory budget): nothing below is
  uint64_t objects = 0, bytes = 0, unreached_objects = 0, unreached_bytes = 0;
  std::vector<Class> classes;  // retained descending, those retaining something, up to top
};

struct Report {
  size_t top = 10;
  HeaderSection header;
  std::optional<RecordedSection> recorded;
  std::optional<CpuSection> cpu;
  std::optional<CallsSection> calls;
  std::optional<AllocSection> alloc;
  std::optional<ExceptionSection> exceptions;
  std::optional<MonitorSection> monitor;
  std::optional<GcSection> gc;
  std::optional<JitSection> jit;
  std::optional<CountersSection> counters;
  std::optional<CpuThreadsSection> cpu_threads;
  std::optional<HeapshotsSection> heapshots;
  std::optional<HeldBySection> held_by;  // set by the caller of build_report (see HeldBySection)
};

// Returns false with `error` when the --thread selection matches no thread.
bool build_report(const profile::Profile& p, const ReportOptions& o, Report& out, std::string& error);

// Text and JSON (one object, ending in a newline), byte for byte what `mlpd report [--json]` writes.
std::string render_text(const Report& r);
std::string render_json(const Report& r);

// What the model side shares (report_model.cpp): per-method rows merged by name, and the first n
// rows by a key (most first, then by name).
std::vector<MethodLine> rows_by_name(const profile::Profile& p, const std::vector<profile::MethodStat>& stats);
std::optional<CpuSection> cpu_section(const profile::Profile& p, const std::vector<bool>& mask,
                                      const std::vector<MethodLine>& rows, uint64_t hits, size_t n);

// `name` in at most `max` characters where it can be (issue 33.5): never cut inside a token (a run of
// letters, digits, '_', '`', '$', '@', '#'): whole tokens are kept from the start and from the end,
// and what is left out between them is one "...". The last token is always kept, so a name whose last
// token alone is longer than `max` is longer than `max`. C++ ABI tags ("[abi:cxx11]") are dropped first.
std::string elide_name(std::string_view name, size_t max);

// A managed method whose time is a wait (Thread.Sleep, Monitor.Wait, WaitHandle.WaitOne, Task.Wait,
// Socket.Accept, HttpListener.GetContext, Console.ReadLine, ...): the calls hot path leaves its time out.
bool waiting_method(std::string_view name);

}  // namespace mlpd::views::report
