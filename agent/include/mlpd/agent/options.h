// The agent's option string: MLPD_OPTIONS=... or mono --profile=mlpd:... (docs/options.md).
//
// The syntax and the option names are those of Mono 6.8's log profiler (`--profile=log:...`), so that
// existing option strings keep working; where Mono silently misreads an option we refuse it instead
// (the agent then stays off, see DESIGN.md "Failure rules"). parse_options() only fills a struct: it
// prints nothing, never exits and never throws; the caller prints the error line or help_text().
#pragma once

#include <cstdint>
#include <ctime>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mlpd/format.h"

namespace mlpd::agent {

enum class SampleMode : uint8_t {
  None,     // no statistical sampling
  Process,  // `sample`: CPU-time clock of the process
  Real,     // `sample-real`: wall clock
};

// `clock=` (MLPD_CLOCK): where time stamps come from.
enum class ClockKind : uint8_t {
  Tsc,        // the CPU's cycle counter when it is invariant, else CLOCK_MONOTONIC
  Monotonic,  // CLOCK_MONOTONIC always
};

// `walker=` (MLPD_WALKER): who makes the backtraces.
enum class WalkerMode : uint8_t {
  Ours,   // our stack walker when it is sure, Mono's otherwise
  Mono,   // mono_stack_walk_no_il always
  Check,  // ours, each compared with Mono's walk of the same event (testing)
};

// What `output=` said, before any %-expansion.
enum class OutputKind : uint8_t {
  Default,        // no output= given: default_output_name(pid), or a pipe to mprof-report with `report`
  File,           // output=FILE
  FileAppendPid,  // output=+FILE: FILE.PID
  Pipe,           // output=|COMMAND
  Fd,             // output=#FD (an already open descriptor, for embedders)
};

inline constexpr uint32_t kDefaultCallDepth = 100;
inline constexpr uint32_t kDefaultSampleFreq = 100;  // Hz
inline constexpr uint32_t kMaxSampleFreq = 1000000;  // Hz
inline constexpr uint32_t kDefaultFlushMs = 1000;
inline constexpr uint32_t kDefaultPushIntervalS = 15;  // push-interval= (docs/fleet.md)
inline constexpr uint32_t kMinFlushMs = 10;
inline constexpr uint32_t kMaxFlushMs = 3600000;
inline constexpr uint64_t kMinAllocSample = 1;
inline constexpr uint64_t kMaxAllocSample = uint64_t{1} << 40;  // 1 TiB
inline constexpr const char* kDefaultBindAddress = "127.0.0.1";
// zip-pack-above=NUM (MLPD_ZIP_PACK_ABOVE): full 64 KiB buffers waiting before threads compress their own.
inline constexpr uint32_t kDefaultZipPackAbove = 64;  // 4 MiB
inline constexpr uint32_t kMaxZipPackAbove = 4096;    // the agent's buffer limit (256 MiB)
// max_sample_hits() result meaning "no limit" (maxsamples=0); compares greater than any count.
inline constexpr uint64_t kNoSampleLimit = UINT64_MAX;

struct Options {
  // The option string as given (without the module prefix), and what the file header's args field
  // carries: "mlpd" for an empty string, else "mlpd:" + text (Mono writes e.g. "log:calls").
  std::string text;
  std::string header_args = "mlpd";

  // Compat ("legacy defaults") mode: true unless the first item is `nodefaults`. Enables
  // exception|counter by default, widens `alloc`, adds gcmove to heapshot modes, accepts
  // `sampling-real` and `nocalls`, and makes the runtime report GC roots at every GC.
  bool compat = true;

  // Event masks (mlpd::format::MASK_*). effective_mask = enable_mask & ~disable_mask.
  // A default-constructed Options equals the result of parsing "" (compat defaults applied).
  uint32_t enable_mask = format::MASK_EXCEPTION | format::MASK_COUNTER;
  uint32_t disable_mask = 0;
  uint32_t effective_mask = format::MASK_EXCEPTION | format::MASK_COUNTER;

  bool calls = false;                        // method enter/leave events
  uint32_t calldepth = kDefaultCallDepth;    // deepest call level written with `calls`
  uint32_t calls_min_us = 0;                 // calls-min=USEC: calls shorter are elided; 0: off
  std::string callspec;                      // raw spec (surrounding " removed); empty: all methods
  uint32_t maxframes = format::kMaxFrames;   // backtrace/sample depth, <= kMaxFrames; 0: none
  // Cap on sample-hit records. nullopt: not given (max_sample_hits() gives cpu_count*1000);
  // 0: no limit (what Mono's man page promises; Mono 6.8 itself treats 0 as "not given").
  std::optional<uint32_t> maxsamples;

  SampleMode sample_mode = SampleMode::None;
  uint32_t sample_freq = kDefaultSampleFreq;  // Hz, 1..kMaxSampleFreq

  uint8_t heapshot_mode = format::HEAPSHOT_NONE;  // format::HEAPSHOT_*
  uint32_t heapshot_gc = 0;  // HEAPSHOT_X_GC: every NUM major collections (>= 1)
  uint32_t heapshot_ms = 0;  // HEAPSHOT_X_MS: at most every NUM milliseconds
  bool heapshot_on_shutdown = false;

  std::string output;              // the raw value of output= (empty: not given)
  OutputKind output_kind = OutputKind::Default;
  std::string output_target;       // output without its +, | or # marker; not yet %-expanded
  int output_fd = -1;              // OutputKind::Fd

  bool zip = false;     // gzip the output
  bool report = false;  // pipe the data into `mprof-report -` instead of writing raw data

  // Command server: off unless port=, bind= or heapshot=ondemand asks for it (Mono always starts one
  // on 0.0.0.0). port 0: the kernel chooses.
  std::optional<uint16_t> port;
  std::string bind = kDefaultBindAddress;  // numeric IPv4 or IPv6 address
  bool bind_given = false;
  // Who may use the command port besides the agent's own uid and root: port-allow=any (everyone) or
  // port-allow=UID[:UID...].
  bool port_allow_any = false;
  std::vector<uint32_t> port_allow_uids;
  // metrics=PORT: GET /metrics (Prometheus' text format) on bind='s address, PORT 0: any free port
  // (docs/fleet.md). With metrics=, bind= alone no longer starts the command port: it is the address
  // of both.
  std::optional<uint16_t> metrics_port;
  // push=URL (docs/fleet.md): every push_interval_s seconds the interval's CPU samples and
  // allocations, each as a gzipped pprof, POSTed to URL's Pyroscope-compatible ingest API (push_url
  // ends in /ingest), with the labels service_name (the program's name unless push-labels= gives it),
  // pid, runtime and push_labels; the bearer token read from push-token-file= at start ("" none). Off
  // when push_url is empty.
  std::string push_url;
  uint32_t push_interval_s = kDefaultPushIntervalS;
  std::vector<std::pair<std::string, std::string>> push_labels;  // in the order given, names unique
  std::string push_token;
  // nochildren: exec'd children do not inherit the agent (LD_PRELOAD entry and MLPD_OPTIONS are
  // removed from the environment at start).
  bool nochildren = false;

  // perf's files about JIT'd code (docs/perf.md): DIR/jit-PID.dump and /tmp/perf-PID.map.
  bool jitdump = false;
  std::string jitdump_dir = ".";
  bool perfmap = false;

  uint32_t flush_ms = kDefaultFlushMs;  // flush interval for threads that log and then go quiet

  // Rotation (docs/options.md): a new output file at the first flush round after rotate_ms or after the
  // file reached rotate_bytes (0: that limit is off); only the newest rotate_keep files are kept (0: all).
  uint64_t rotate_ms = 0;
  uint64_t rotate_bytes = 0;
  uint32_t rotate_keep = 0;
  // Flight recorder: thread buffers kept in a ring of this many bytes instead of written (0: off).
  uint64_t ring_bytes = 0;
  // `dumpsignal=NAME`: the signal (USR1, USR2 or HUP) that asks for a dump in ring mode, a flush round in
  // file mode; 0: off. dump_signal_name is "SIGUSR2" etc.
  int dump_signal = 0;
  std::string dump_signal_name;
  // `alloc-sample=BYTES`: allocation events are samples, one on average per BYTES allocated by a
  // thread (exponential intervals); 0: every allocation (plain gcalloc). Enables gcalloc.
  uint64_t alloc_sample = 0;
  // `start-paused`: nothing is recorded until `resume` (command port or LogProfiler); metadata is.
  bool start_paused = false;
  bool attached = false;  // not an option: started by `mlpd attach` (the helper keeps the metadata for the next attach)
  // For testing and comparing; each has an environment alias (docs/options.md).
  ClockKind clock = ClockKind::Tsc;
  WalkerMode walker = WalkerMode::Ours;
  bool eager_metadata = false;  // describe methods and classes when loaded, not when first used
  uint32_t zip_pack_above = kDefaultZipPackAbove;
  bool verbose = false;
  bool debug = false;  // accepted for compatibility; no effect (as in Mono 6.8)
  bool help = false;   // the caller prints help_text() and does not profile
};

// getenv, or a stand-in for tests.
using EnvLookup = const char* (*)(const char* name);

// Parses `text` into `out` (reset to the defaults first). With `env`, the environment variables that
// are aliases of options (MLPD_CLOCK, MLPD_WALKER, MLPD_EAGER_METADATA, MLPD_ZIP_PACK_ABOVE; see the
// option table) are applied first, so that the option string wins over them. On an unknown or malformed item returns
// false and sets `error` to one line (no newline) naming the item and the reason, e.g.
//   mlpd: unknown option 'foo' (see MLPD_OPTIONS=help)
//   mlpd: bad value in 'calldepth=x': expected a number
// `out` is then only partly filled and must not be used. Safe for any input; never throws.
bool parse_options(std::string_view text, Options& out, std::string& error, EnvLookup env = nullptr) noexcept;

// The usage text (several lines, ending in a newline) for MLPD_OPTIONS=help / --profile=mlpd:help,
// made from the option table.
std::string_view help_text() noexcept;

// `dumpsignal=NAME`: NAME (USR2, SIGUSR2, usr2) as a signal the agent may take, or 0 with `why` saying
// why not (not a signal name; a signal Mono, the program or the terminal owns; one that cannot be
// caught). `canonical`, if given, gets "SIGUSR2" etc.
int dump_signal_from_name(std::string_view name, std::string& why, std::string* canonical = nullptr);

// The option part of a Mono profiler description: "mlpd:calls,zip" -> "calls,zip", "mlpd" -> "".
std::string_view options_from_profiler_desc(std::string_view desc) noexcept;

// Which options a start takes when they may come from both MLPD_OPTIONS (`env`, nullopt when absent)
// and `mono --profile=mlpd:OPTS` (`profile`, the part after the colon; empty without options): the
// non-empty one; both non-empty and different: --profile's, and `note` is one line saying that
// MLPD_OPTIONS is ignored (always printed: options are never silently ignored). Empty `note` otherwise.
struct ChosenOptions {
  std::string text;
  std::string note;
};
ChosenOptions choose_options(std::optional<std::string_view> env, std::string_view profile);

// Expands %p (pid), %t (UTC time as YYYYMMDDhhmmss), %n (`seq`, the file's sequence number with at
// least 4 digits: 0000, 0001, ...) and %% (%) in an output name. Any other %x, and a trailing lone %,
// are kept as they are.
std::string expand_output_name(std::string_view pattern, long pid, std::time_t when, uint64_t seq = 0);

// Whether rotation (rotate= or rotate-size=) is on.
inline bool rotation_on(const Options& o) { return o.rotate_ms != 0 || o.rotate_bytes != 0; }

// "output.<pid>.mlpd" ("output.<pid>.mlpd.gz" with `zip`): the file written when no output= is given.
std::string default_output_name(long pid, bool zip = false);

// Where the data goes, with +FILE, %-expansion, the default name and `report` applied.
struct ResolvedOutput {
  enum class Kind : uint8_t { File, Pipe, Fd };
  Kind kind = Kind::File;
  std::string target;  // file name (Kind::File) or shell command for popen (Kind::Pipe)
  int fd = -1;         // Kind::Fd
};
ResolvedOutput resolve_output(const Options& options, long pid, std::time_t when, uint64_t seq = 0);

// The cap on sample-hit records: maxsamples if given (0 -> kNoSampleLimit), else cpu_count * 1000
// (cpu_count 0 counts as 1).
uint64_t max_sample_hits(const Options& options, unsigned cpu_count) noexcept;

// Whether the TCP command server should run: port= given, bind= given without metrics=,
// heapshot=ondemand (whose heapshots are requested through it) or start-paused (resumed through it).
bool wants_command_server(const Options& options) noexcept;

// An event name of the option string (exception, gc, gcalloc, alloc, legacy, counters, ...; not the
// `no` form): its mask bits, as they are with (`compat`) or without `nodefaults`. False when unknown.
bool event_name_mask(std::string_view name, bool compat, uint32_t& mask) noexcept;

// The names of the single events set in `mask`, space-separated, in the option table's order
// (aliases such as alloc or legacy are not used).
std::string event_mask_names(uint32_t mask);

}  // namespace mlpd::agent
