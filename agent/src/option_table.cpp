// The option table: every option's name, kind, help text and setter (option_table.h).
#include "option_table.h"

#include <array>

#include "mlpd/event_names.h"
#include "option_setters.h"

namespace mlpd::agent {
namespace {

using namespace mlpd::format;
using option_syntax::Item;
using namespace setters;
using option_syntax::Num;
using option_syntax::parse_number;

constexpr uint64_t kInt32Max = 2147483647;

// -- environment aliases (their values as they were read before they became options)

bool clock_from_env(std::string_view v, std::string& out) {
  if (v != "monotonic") return false;  // anything else kept the cycle counter
  out = v;
  return true;
}
bool walker_from_env(std::string_view v, std::string& out) {
  if (v != "mono" && v != "check") return false;  // anything else kept our walker
  out = v;
  return true;
}
bool eager_from_env(std::string_view, std::string&) { return true; }  // any value, even empty
bool zip_pack_above_from_env(std::string_view v, std::string& out) {
  // Was strtoul(value, &end, 10) with nothing after the digits, at most kMaxZipPackAbove; empty ignored.
  size_t i = 0;
  while (i < v.size() && (v[i] == ' ' || (v[i] >= '\t' && v[i] <= '\r'))) ++i;
  if (i < v.size() && v[i] == '+') ++i;
  uint64_t n = 0;
  if (parse_number(v.substr(i), n) != Num::Ok || n > kMaxZipPackAbove) return false;
  out = std::to_string(n);
  return true;
}

using K = OptionKind;

// In the order of the help. Rows without `usage` are accepted but not in the help.
constexpr OptionSpec kTable[] = {
    {"help", K::Flag, flag<&Options::help>, {}, "help", "show this usage info (nothing is profiled)", {}},
    {"nodefaults", K::Flag, set_nodefaults, "compat mode", "nodefaults",
     "only as the first option: enable no events by default\n"
     "(otherwise exception and counter are on, as with Mono's log profiler)", {}},
    {"EVENT", K::Event, nullptr, "`exception,counter`", "[no]EVENT", "enable/disable an individual profiling event; EVENT values:\n%EVENTS%", {}},
    {"alloc", K::Event, nullptr, "`exception,counter`", "[no]alloc",
     "enable/disable allocation info: gc, gcalloc, gcmove (and gcroot\nwithout nodefaults)", {}},
    {"legacy", K::Event, nullptr, "`exception,counter`", "[no]legacy", "enable/disable the pre Mono 5.6 default events", {}},
    {"sample", K::String, set_sample, "off, 100 Hz", "sample[-real][=FREQ]",
     "statistical sampling of threads, FREQ in Hz (100 by default);\n"
     "the -real variant uses wall clock time instead of process time", {}},
    {"sample-real", K::String, set_sample_real, {}, {}, {}, {}},
    {"sampling-real", K::String, set_sampling_real, {}, {}, {}, {}},
    {"maxsamples", K::Number, set_maxsamples, "CPUs × 1000 (at most 16384)", "maxsamples=NUM",
     "keep at most NUM samples in flight (default: CPUs * 1000; 0: no limit)", "maxsamples=NUM", 0, kInt32Max},
    {"heapshot", K::String, set_heapshot, "off", "heapshot[=MODE]",
     "record heapshots (by default at each major collection); MODE:\n"
     "NUMgc every NUM major collections, NUMms at most every NUM ms,\n"
     "ondemand when asked through the command port", {}},
    {"heapshot-on-shutdown", K::Flag, set_heapshot_on_shutdown, "off", "heapshot-on-shutdown",
     "one heapshot at runtime shutdown (independent of heapshot)", {}},
    {"calls", K::Flag, flag<&Options::calls>, "off", "calls", "record method enter/leave events (very heavy)", {}},
    {"nocalls", K::Flag, set_nocalls, {}, {}, {}, {}},
    {"calldepth", K::Number, number_u32<&Options::calldepth>, "100", "calldepth=NUM",
     "ignore enter/leave events deeper than NUM calls (default 100)", "calldepth=NUM", 0, kInt32Max},
    {"calls-min", K::Number, set_calls_min, "off", "calls-min=USEC",
     "with calls, leave out calls shorter than USEC microseconds", "calls-min=USEC", 0, 1000000000},
    {"callspec", K::String, set_callspec, "all methods", "callspec=SPEC",
     "limit calls to methods matching SPEC (the syntax of mono --trace)", "callspec=SPEC"},
    {"maxframes", K::Number, set_maxframes, "32", "maxframes=NUM",
     "collect up to NUM stack frames, at most 32 (default 32; 0: none);\n"
     "samples keep up to 256 unless NUM is below 32", "maxframes=NUM"},
    {"output", K::String, set_output, "`output.PID.mlpd` (`output.PID.mlpd.gz` with `zip`)", "output=FILENAME",
     "write the data to FILENAME (overwritten; default output.PID.mlpd)\n"
     "output=+FILENAME\twrite the data to FILENAME.PID\n"
     "output=|PROGRAM\twrite the data to the stdin of PROGRAM\n"
     "output=#FD\twrite the data to the open file descriptor FD\n"
     "%t is substituted with the UTC date and time, %p with the pid, %n with the file number, %% with %",
     "output=FILE, output=+FILE, output=|COMMAND or output=#FD"},
    {"zip", K::Flag, flag<&Options::zip>, "off", "zip", "compress the output data (gzip)", {}},
    {"report", K::Flag, flag<&Options::report>, "off", "report", "pipe the data into mprof-report instead of writing a file", {}},
    {"port", K::Number, set_port, "no command server", "port=PORTNUM",
     "serve the command port on PORTNUM (0: any free port; default: no\n"
     "command port unless bind=, heapshot=ondemand or start-paused is given)", "port=PORT", 0, 65535},
    {"bind", K::String, set_bind, "127.0.0.1", "bind=ADDRESS",
     "address of the command port and of metrics= (default 127.0.0.1); any\n"
     "other than a loopback address lets other hosts use the port", "bind=ADDRESS"},
    {"port-allow", K::String, set_port_allow, "owner and root", "port-allow=any|UID[:UID...]",
     "who may use the command port besides the agent's own user and\n"
     "root (default: nobody else; peers identified over loopback)", "port-allow=any or port-allow=UID[:UID...]"},
    {"metrics", K::Number, set_metrics, "off", "metrics=PORT",
     "serve GET /metrics (Prometheus text format) on PORT (0: any free\n"
     "port) at bind='s address, to the users port-allow= admits", "metrics=PORT", 0, 65535},
    {"push", K::String, set_push, "off", "push=URL",
     "every push-interval= seconds, POST the interval's CPU samples and\n"
     "allocations as gzipped pprof to URL, a Pyroscope-compatible server's ingest\n"
     "API (http:// or https://; /ingest is added unless URL ends in it)", "push=URL (http://HOST:PORT or https://...)"},
    {"push-interval", K::Number, number_u32<&Options::push_interval_s>, "15", "push-interval=S",
     "seconds between pushes (default 15)", "push-interval=SECONDS", 1, 3600},
    {"push-labels", K::String, set_push_labels, "service_name, pid, runtime", "push-labels=K=V,...",
     "labels of the pushed profiles besides service_name (the program's\n"
     "name), pid and runtime (quote the list: push-labels='env=prod,dc=eu')", "push-labels=K=V[,K=V...]"},
    {"push-token-file", K::String, set_push_token_file, "none", "push-token-file=FILE",
     "send 'Authorization: Bearer TOKEN', TOKEN being FILE's first line (read\n"
     "at start)", "push-token-file=FILE"},
    {"nochildren", K::Flag, flag<&Options::nochildren>, "children inherit it", "nochildren",
     "exec'd child processes do not inherit the agent (LD_PRELOAD and\n"
     "MLPD_OPTIONS are removed from the environment)", {}},
    {"jitdump", K::String, set_jitdump, "off, current directory", "jitdump[=DIR]",
     "write perf's jitdump of the JIT'd code to DIR/jit-PID.dump (default:\n"
     "the current directory) for perf inject --jit (see docs/perf.md)", {}},
    {"perfmap", K::Flag, flag<&Options::perfmap>, "off", "perfmap",
     "write /tmp/perf-PID.map (address, size, name of the JIT'd code) for perf", {}},
    {"flush", K::Number, number_u32<&Options::flush_ms>, "1000", "flush=MS",
     "write the events of quiet threads at least every MS ms (default 1000)", "flush=MILLISECONDS", kMinFlushMs,
     kMaxFlushMs},
    {"rotate", K::Duration, set_rotate, "off", "rotate=DURATION",
     "start a new output file every DURATION (30s, 10m, 1h); the name needs %n or %t",
     "rotate=DURATION (e.g. 30s, 10m, 1h)"},
    {"rotate-size", K::Size, set_rotate_size, "off", "rotate-size=SIZE",
     "start a new output file once it has SIZE bytes (100m, 1g)", "rotate-size=SIZE (e.g. 100m)"},
    {"rotate-keep", K::Number, number_u32<&Options::rotate_keep>, "all kept", "rotate-keep=NUM",
     "with rotation, keep only the newest NUM files", "rotate-keep=NUM", 1, kInt32Max},
    {"ring", K::Size, set_ring, "off", "ring=SIZE",
     "flight recorder: keep the last SIZE bytes of events in memory; write them on\n"
     "the command port's `dump [FILE]` and at exit (to output=, if given)", "ring=SIZE (e.g. 64m)"},
    {"dumpsignal", K::String, set_dumpsignal, "off", "dumpsignal=NAME",
     "on signal NAME (USR1, USR2 or HUP) dump the ring, or flush without ring", "dumpsignal=NAME (USR1, USR2 or HUP)"},
    {"alloc-sample", K::Size, set_alloc_sample, "off (every allocation, with `gcalloc`)", "alloc-sample=BYTES",
     "record allocations as samples, one per BYTES allocated on average per\n"
     "thread (e.g. 512k; suffixes k, m, g); enables gcalloc", "alloc-sample=BYTES (e.g. 512k; suffixes k, m, g)"},
    {"start-paused", K::Flag, flag<&Options::start_paused>, "off", "start-paused",
     "record nothing until 'resume' (command port or LogProfiler)", {}},
    {"verbose", K::Flag, flag<&Options::verbose>, "off", "verbose", "report what the agent does on stderr", {}},
    // For testing and comparing (each was an environment variable first, still an alias).
    {"clock", K::Enum, choice<ClockKind, &Options::clock>, "`tsc`", "clock=tsc|monotonic",
     "time stamps from the CPU's cycle counter (default, when invariant) or\n"
     "CLOCK_MONOTONIC (alias: MLPD_CLOCK=monotonic)", "clock=tsc or clock=monotonic", 0, 0, "tsc|monotonic",
     "MLPD_CLOCK", clock_from_env},
    {"walker", K::Enum, choice<WalkerMode, &Options::walker>, "`ours`", "walker=ours|mono|check",
     "backtraces by our stack walker (default), by Mono's, or both compared\n"
     "(alias: MLPD_WALKER=mono|check)", "walker=ours, walker=mono or walker=check", 0, 0, "ours|mono|check",
     "MLPD_WALKER", walker_from_env},
    {"eager-metadata", K::Flag, flag<&Options::eager_metadata>, "off", "eager-metadata",
     "describe every method and class when loaded, not when first used\n"
     "(alias: MLPD_EAGER_METADATA set to any value)", {}, 0, 0, {}, "MLPD_EAGER_METADATA", eager_from_env},
    {"zip-pack-above", K::Number, set_zip_pack_above, "64 (4 MiB)", "zip-pack-above=NUM",
     "with zip, threads compress their own buffers while NUM or more full\n"
     "64 KiB buffers wait (default 64; 0: always; alias: MLPD_ZIP_PACK_ABOVE)", "zip-pack-above=NUM", 0,
     kMaxZipPackAbove, {}, "MLPD_ZIP_PACK_ABOVE", zip_pack_above_from_env},
    {"debug", K::Flag, flag<&Options::debug>, {}, {}, {}, {}},
    {"coverage", K::Flag, set_coverage, {}, {}, {}, {}},
};

// The single events in help order, `counters` as the alias of `counter`, then the aliases.
struct EventName {
  std::string_view name;
  uint32_t mask;
  uint32_t compat_mask;  // what the name means without `nodefaults`
};
constexpr uint32_t kAllocAlias = MASK_GC | MASK_GC_ALLOC | MASK_GC_MOVE;
constexpr uint32_t kLegacyAlias = MASK_EXCEPTION | MASK_MONITOR | MASK_GC | MASK_GC_MOVE | MASK_GC_ROOT |
                                  MASK_GC_HANDLE | MASK_GC_FINALIZATION | MASK_COUNTER;
constexpr size_t kSingleEvents = std::size(kEventBitNames);
constexpr auto kEvents = [] {
  std::array<EventName, kSingleEvents + 3> a{};
  for (size_t i = 0; i < kSingleEvents; ++i) a[i] = {kEventBitNames[i].option, kEventBitNames[i].mask, kEventBitNames[i].mask};
  a[kSingleEvents] = {"counters", MASK_COUNTER, MASK_COUNTER};
  a[kSingleEvents + 1] = {"alloc", kAllocAlias, kAllocAlias | MASK_GC_ROOT};
  a[kSingleEvents + 2] = {"legacy", kLegacyAlias, kLegacyAlias};
  return a;
}();

}  // namespace

std::span<const OptionSpec> option_table() noexcept { return kTable; }

const OptionSpec* find_option(std::string_view name) noexcept {
  for (const OptionSpec& s : kTable)
    if (s.name == name) return &s;
  return nullptr;
}

bool event_name_masks(std::string_view name, uint32_t& mask, uint32_t& compat_mask) noexcept {
  for (const EventName& e : kEvents) {
    if (name == e.name) {
      mask = e.mask;
      compat_mask = e.compat_mask;
      return true;
    }
  }
  return false;
}

bool event_name_mask(std::string_view name, bool compat, uint32_t& mask) noexcept {
  uint32_t plain = 0, with_compat = 0;
  if (!event_name_masks(name, plain, with_compat)) return false;
  mask = compat ? with_compat : plain;
  return true;
}

std::string event_mask_names(uint32_t mask) {
  std::string out;
  for (const EventBitName& e : kEventBitNames) {
    if (!(mask & e.mask)) continue;
    if (!out.empty()) out += ' ';
    out += e.option;
  }
  return out;
}

}  // namespace mlpd::agent
