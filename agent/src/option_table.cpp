// The option table: every option's name, kind, help text and setter (option_table.h).
#include "option_table.h"

#include <arpa/inet.h>

#include <array>

#include "mlpd/event_names.h"

namespace mlpd::agent {
namespace {

using namespace mlpd::format;
using option_syntax::Item;
using option_syntax::Num;
using option_syntax::parse_number;

constexpr uint64_t kInt32Max = 2147483647;
constexpr uint32_t kHeapshotAlias = MASK_GC | MASK_GC_ROOT;

// -- generic setters

template <bool Options::*M>
bool flag(OptionParser& p, const OptionSpec&, const Item& it) {
  if (it.has_value) return p.no_value_allowed(it.text, it.name);
  p.o.*M = true;
  return true;
}

template <uint32_t Options::*M>
bool number_u32(OptionParser& p, const OptionSpec& s, const Item& it) {
  if (!it.has_value) return p.missing_value(it.text, s.expect);
  uint64_t n = 0;
  if (!p.number(it.text, it.value, s.lo, s.hi, n)) return false;
  p.o.*M = static_cast<uint32_t>(n);
  return true;
}

template <typename E, E Options::*M>
bool choice(OptionParser& p, const OptionSpec& s, const Item& it) {
  if (!it.has_value) return p.missing_value(it.text, s.expect);
  std::string_view rest = s.choices;
  for (unsigned i = 0;; ++i) {
    const size_t bar = rest.find('|');
    if (rest.substr(0, bar) == it.value) {
      p.o.*M = static_cast<E>(i);
      return true;
    }
    if (bar == std::string_view::npos) break;
    rest.remove_prefix(bar + 1);
  }
  std::string why = "expected ";
  why.append(s.expect);
  return p.bad_value(it.text, why);
}

// NUM followed by a unit: ms, s, m or h (a bare NUM is seconds). False when malformed or too big.
bool duration_ms(std::string_view v, uint64_t& out) {
  size_t digits = 0;
  while (digits < v.size() && v[digits] >= '0' && v[digits] <= '9') ++digits;
  if (digits == 0 || digits > 12) return false;
  uint64_t n = 0;
  if (parse_number(v.substr(0, digits), n) != Num::Ok) return false;
  const std::string_view unit = v.substr(digits);
  uint64_t scale = 0;
  if (unit.empty() || unit == "s") scale = 1000;
  else if (unit == "ms") scale = 1;
  else if (unit == "m") scale = 60 * 1000;
  else if (unit == "h") scale = 3600 * 1000;
  else return false;
  out = n * scale;  // at most 12 digits times 3.6e6: no overflow
  return true;
}

// NUM followed by nothing (bytes), k, m or g (KiB, MiB, GiB; either case). False when malformed or too big.
bool size_bytes(std::string_view v, uint64_t& out) {
  size_t digits = 0;
  while (digits < v.size() && v[digits] >= '0' && v[digits] <= '9') ++digits;
  if (digits == 0 || digits > 12) return false;
  uint64_t n = 0;
  if (parse_number(v.substr(0, digits), n) != Num::Ok) return false;
  const std::string_view unit = v.substr(digits);
  unsigned shift = 0;
  if (unit.empty()) shift = 0;
  else if (unit == "k" || unit == "K") shift = 10;
  else if (unit == "m" || unit == "M") shift = 20;
  else if (unit == "g" || unit == "G") shift = 30;
  else return false;
  out = n << shift;  // at most 12 digits (< 2^40) << 30: fits in 64 bits
  return true;
}

bool all_alpha(std::string_view s) {
  for (const char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) return false;
  return true;
}

// -- the options' own setters

bool set_nodefaults(OptionParser& p, const OptionSpec&, const Item& it) {
  if (it.has_value) return p.no_value_allowed(it.text, it.name);
  if (!p.first) return p.fail("'nodefaults' is only allowed as the first option");
  p.o.compat = false;
  p.o.enable_mask = 0;
  return true;
}

bool set_jitdump(OptionParser& p, const OptionSpec&, const Item& it) {
  if (it.has_value && it.value.empty()) return p.bad_value(it.text, "expected jitdump or jitdump=DIRECTORY");
  p.o.jitdump = true;
  if (it.has_value) p.o.jitdump_dir.assign(it.value);
  return true;
}

bool set_nocalls(OptionParser& p, const OptionSpec&, const Item& it) {
  if (!p.o.compat) return p.fail("'nocalls' is only accepted without 'nodefaults' (calls are off unless 'calls' is given)");
  if (it.has_value) return p.no_value_allowed(it.text, it.name);
  p.nocalls = true;
  return true;
}

bool set_coverage(OptionParser& p, const OptionSpec&, const Item&) {
  return p.fail("option 'coverage': the log profiler no longer supports code coverage; use Mono's coverage "
                "profiler (--profile=coverage)");
}

bool set_heapshot_on_shutdown(OptionParser& p, const OptionSpec& s, const Item& it) {
  if (!flag<&Options::heapshot_on_shutdown>(p, s, it)) return false;
  p.o.enable_mask |= kHeapshotAlias;  // no gcmove here, even in compat mode (as Mono)
  return true;
}

bool sample(OptionParser& p, const Item& it, SampleMode mode) {
  if (it.has_value) {
    // FREQ, or the pre-5.6 form TYPE/FREQ (the TYPE, e.g. "cycles", is ignored, as in Mono).
    std::string_view digits = it.value;
    const size_t slash = it.value.find('/');
    if (slash != std::string_view::npos && slash > 0 && all_alpha(it.value.substr(0, slash)))
      digits = it.value.substr(slash + 1);
    uint64_t freq = 0;
    const Num r = parse_number(digits, freq);
    if (r == Num::NotANumber)
      return p.bad_value(it.text, "expected a frequency in Hz (e.g. sample=1000 or sample=cycles/1000)");
    if (r == Num::TooBig || freq < 1 || freq > kMaxSampleFreq)
      return p.bad_value(it.text, "expected a frequency from 1 to " + std::to_string(kMaxSampleFreq) + " Hz");
    p.o.sample_freq = static_cast<uint32_t>(freq);
  }
  // A bare `sample` keeps the frequency of an earlier sample=FREQ (as Mono).
  p.o.sample_mode = mode;
  p.o.enable_mask |= MASK_SAMPLE;
  return true;
}
bool set_sample(OptionParser& p, const OptionSpec&, const Item& it) { return sample(p, it, SampleMode::Process); }
bool set_sample_real(OptionParser& p, const OptionSpec&, const Item& it) { return sample(p, it, SampleMode::Real); }
bool set_sampling_real(OptionParser& p, const OptionSpec&, const Item& it) {
  if (!p.o.compat) return p.fail("'sampling-real' is only accepted without 'nodefaults'; use 'sample-real'");
  return sample(p, it, SampleMode::Real);
}

bool set_heapshot(OptionParser& p, const OptionSpec&, const Item& it) {
  const std::string_view value = it.value;
  if (!it.has_value) {
    p.o.heapshot_mode = HEAPSHOT_MAJOR;
  } else if (value == "ondemand") {
    p.o.heapshot_mode = HEAPSHOT_ON_DEMAND;
  } else {
    size_t digits = 0;
    while (digits < value.size() && value[digits] >= '0' && value[digits] <= '9') ++digits;
    const std::string_view suffix = value.substr(digits);
    constexpr std::string_view kUsage = "expected heapshot, heapshot=NUMgc, heapshot=NUMms or heapshot=ondemand";
    if (digits == 0 || (suffix != "gc" && suffix != "ms")) return p.bad_value(it.text, kUsage);
    uint64_t n = 0;
    if (suffix == "gc") {
      // 0gc would divide by zero in Mono (the process hangs); every collection is 1gc.
      if (parse_number(value.substr(0, digits), n) != Num::Ok || n < 1 || n > kInt32Max)
        return p.bad_value(it.text, "expected NUMgc with NUM from 1 to " + std::to_string(kInt32Max));
      p.o.heapshot_mode = HEAPSHOT_X_GC;
      p.o.heapshot_gc = static_cast<uint32_t>(n);
    } else {
      if (parse_number(value.substr(0, digits), n) != Num::Ok || n > kInt32Max)
        return p.bad_value(it.text, "expected NUMms with NUM from 0 to " + std::to_string(kInt32Max));
      p.o.heapshot_mode = HEAPSHOT_X_MS;
      p.o.heapshot_ms = static_cast<uint32_t>(n);
    }
  }
  p.o.enable_mask |= kHeapshotAlias;
  if (p.o.compat) p.o.enable_mask |= MASK_GC_MOVE;
  return true;
}

bool set_output(OptionParser& p, const OptionSpec& s, const Item& it) {
  if (!it.has_value) return p.missing_value(it.text, s.expect);
  p.output_item.assign(it.text);
  const std::string_view value = it.value;
  Options& o = p.o;
  if (value.empty()) return p.bad_value(it.text, "expected a file name");
  o.output.assign(value);
  o.output_fd = -1;
  const std::string_view rest = value.substr(1);
  switch (value.front()) {
    case '+':
      if (rest.empty()) return p.bad_value(it.text, "expected output=+FILE with a non-empty FILE");
      o.output_kind = OutputKind::FileAppendPid;
      o.output_target.assign(rest);
      return true;
    case '|':
      if (rest.empty()) return p.bad_value(it.text, "expected output=|COMMAND with a non-empty COMMAND");
      o.output_kind = OutputKind::Pipe;
      o.output_target.assign(rest);
      return true;
    case '#': {
      uint64_t fd = 0;
      if (parse_number(rest, fd) != Num::Ok || fd > kInt32Max)
        return p.bad_value(it.text, "expected output=#FD with FD a file descriptor number");
      o.output_kind = OutputKind::Fd;
      o.output_target.assign(rest);
      o.output_fd = static_cast<int>(fd);
      return true;
    }
    default:
      o.output_kind = OutputKind::File;
      o.output_target.assign(value);
      return true;
  }
}

bool set_port(OptionParser& p, const OptionSpec& s, const Item& it) {
  if (!it.has_value) return p.missing_value(it.text, s.expect);
  uint64_t n = 0;
  if (!p.number(it.text, it.value, s.lo, s.hi, n)) return false;
  p.o.port = static_cast<uint16_t>(n);
  return true;
}

bool set_bind(OptionParser& p, const OptionSpec& s, const Item& it) {
  if (!it.has_value) return p.missing_value(it.text, s.expect);
  constexpr std::string_view kWhy = "expected a numeric IPv4 or IPv6 address (e.g. 127.0.0.1, 0.0.0.0, ::1)";
  const std::string_view value = it.value;
  char text[64];
  if (value.empty() || value.size() >= sizeof text) return p.bad_value(it.text, kWhy);
  value.copy(text, value.size());
  text[value.size()] = '\0';
  unsigned char addr[16];
  if (inet_pton(AF_INET, text, addr) != 1 && inet_pton(AF_INET6, text, addr) != 1) return p.bad_value(it.text, kWhy);
  p.o.bind.assign(value);
  p.o.bind_given = true;
  return true;
}

bool set_port_allow(OptionParser& p, const OptionSpec& s, const Item& it) {
  if (!it.has_value) return p.missing_value(it.text, s.expect);
  if (it.value == "any") {
    p.o.port_allow_any = true;
    return true;
  }
  p.o.port_allow_uids.clear();
  for (std::string_view rest = it.value;;) {
    const size_t colon = rest.find(':');
    uint64_t n = 0;
    if (parse_number(rest.substr(0, colon), n) != Num::Ok || n > 0xFFFFFFFEu)
      return p.bad_value(it.text, "expected 'any' or user ids separated by ':'");
    p.o.port_allow_uids.push_back(static_cast<uint32_t>(n));
    if (colon == std::string_view::npos) return true;
    rest.remove_prefix(colon + 1);
  }
}

bool set_maxframes(OptionParser& p, const OptionSpec& s, const Item& it) {
  if (!it.has_value) return p.missing_value(it.text, s.expect);
  uint64_t n = 0;
  const Num r = parse_number(it.value, n);
  if (r == Num::NotANumber) return p.bad_value(it.text, "expected a number");
  p.o.maxframes = (r == Num::TooBig || n > kMaxFrames) ? kMaxFrames : static_cast<uint32_t>(n);
  return true;
}

bool set_maxsamples(OptionParser& p, const OptionSpec& s, const Item& it) {
  if (!it.has_value) return p.missing_value(it.text, s.expect);
  uint64_t n = 0;
  if (!p.number(it.text, it.value, s.lo, s.hi, n)) return false;
  p.o.maxsamples = static_cast<uint32_t>(n);
  return true;
}

bool set_calls_min(OptionParser& p, const OptionSpec& s, const Item& it) {
  if (!number_u32<&Options::calls_min_us>(p, s, it)) return false;
  p.calls_min_item.assign(it.text);
  return true;
}

bool set_callspec(OptionParser& p, const OptionSpec& s, const Item& it) {
  if (!it.has_value) return p.missing_value(it.text, s.expect);
  std::string_view spec = it.value;
  // Mono strips one " at each end (an escaped or quoted-in-quotes pair reaches us).
  if (!spec.empty() && spec.front() == '"') spec.remove_prefix(1);
  if (!spec.empty() && spec.back() == '"') spec.remove_suffix(1);
  if (spec.empty()) return p.bad_value(it.text, "expected callspec=SPEC with a non-empty SPEC");
  p.o.callspec.assign(spec);
  p.callspec_item.assign(it.text);
  return true;
}

bool set_rotate(OptionParser& p, const OptionSpec& s, const Item& it) {
  if (!it.has_value) return p.missing_value(it.text, s.expect);
  uint64_t n = 0;
  if (!duration_ms(it.value, n) || n < 1000)
    return p.bad_value(it.text, "expected a duration of at least 1s: NUM followed by s, m or h (e.g. 30s, 10m, 1h)");
  p.o.rotate_ms = n;
  return true;
}

bool set_rotate_size(OptionParser& p, const OptionSpec& s, const Item& it) {
  if (!it.has_value) return p.missing_value(it.text, s.expect);
  uint64_t n = 0;
  if (!size_bytes(it.value, n) || n < 4096)
    return p.bad_value(it.text, "expected a size of at least 4k: NUM, NUMk, NUMm or NUMg (e.g. 100m)");
  p.o.rotate_bytes = n;
  return true;
}

bool set_ring(OptionParser& p, const OptionSpec& s, const Item& it) {
  if (!it.has_value) return p.missing_value(it.text, s.expect);
  uint64_t n = 0;
  if (!size_bytes(it.value, n) || n < (1u << 20))
    return p.bad_value(it.text, "expected a size of at least 1m: NUMk, NUMm or NUMg (e.g. 64m)");
  p.o.ring_bytes = n;
  return true;
}

bool set_dumpsignal(OptionParser& p, const OptionSpec& s, const Item& it) {
  if (!it.has_value) return p.missing_value(it.text, s.expect);
  std::string why;
  const int sig = dump_signal_from_name(it.value, why, &p.o.dump_signal_name);
  if (!sig) return p.bad_value(it.text, why);
  p.o.dump_signal = sig;
  return true;
}

// alloc-sample=BYTES: a number with an optional k, m or g suffix (powers of 1024).
bool set_alloc_sample(OptionParser& p, const OptionSpec& s, const Item& it) {
  if (!it.has_value) return p.missing_value(it.text, s.expect);
  uint64_t n = 0;
  const Num r = option_syntax::parse_scaled_bytes(it.value, kMaxAllocSample, n);
  if (r == Num::NotANumber) return p.bad_value(it.text, std::string("expected ") + std::string(s.expect));
  if (r == Num::TooBig) return p.bad_value(it.text, "expected from 1 byte to 1024g");
  p.o.alloc_sample = n;
  p.o.enable_mask |= MASK_GC_ALLOC;
  return true;
}

bool set_zip_pack_above(OptionParser& p, const OptionSpec& s, const Item& it) {
  return number_u32<&Options::zip_pack_above>(p, s, it);
}

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
    {"help", K::Flag, flag<&Options::help>, "help", "show this usage info (nothing is profiled)", {}},
    {"nodefaults", K::Flag, set_nodefaults, "nodefaults",
     "only as the first option: enable no events by default\n"
     "(otherwise exception and counter are on, as with Mono's log profiler)", {}},
    {"EVENT", K::Event, nullptr, "[no]EVENT", "enable/disable an individual profiling event; EVENT values:\n%EVENTS%", {}},
    {"alloc", K::Event, nullptr, "[no]alloc",
     "enable/disable allocation info: gc, gcalloc, gcmove (and gcroot\nwithout nodefaults)", {}},
    {"legacy", K::Event, nullptr, "[no]legacy", "enable/disable the pre Mono 5.6 default events", {}},
    {"sample", K::String, set_sample, "sample[-real][=FREQ]",
     "statistical sampling of threads, FREQ in Hz (100 by default);\n"
     "the -real variant uses wall clock time instead of process time", {}},
    {"sample-real", K::String, set_sample_real, {}, {}, {}},
    {"sampling-real", K::String, set_sampling_real, {}, {}, {}},
    {"maxsamples", K::Number, set_maxsamples, "maxsamples=NUM",
     "keep at most NUM samples in flight (default: CPUs * 1000; 0: no limit)", "maxsamples=NUM", 0, kInt32Max},
    {"heapshot", K::String, set_heapshot, "heapshot[=MODE]",
     "record heapshots (by default at each major collection); MODE:\n"
     "NUMgc every NUM major collections, NUMms at most every NUM ms,\n"
     "ondemand when asked through the command port", {}},
    {"heapshot-on-shutdown", K::Flag, set_heapshot_on_shutdown, "heapshot-on-shutdown",
     "one heapshot at runtime shutdown (independent of heapshot)", {}},
    {"calls", K::Flag, flag<&Options::calls>, "calls", "record method enter/leave events (very heavy)", {}},
    {"nocalls", K::Flag, set_nocalls, {}, {}, {}},
    {"calldepth", K::Number, number_u32<&Options::calldepth>, "calldepth=NUM",
     "ignore enter/leave events deeper than NUM calls (default 100)", "calldepth=NUM", 0, kInt32Max},
    {"calls-min", K::Number, set_calls_min, "calls-min=USEC",
     "with calls, leave out calls shorter than USEC microseconds", "calls-min=USEC", 0, 1000000000},
    {"callspec", K::String, set_callspec, "callspec=SPEC",
     "limit calls to methods matching SPEC (the syntax of mono --trace)", "callspec=SPEC"},
    {"maxframes", K::Number, set_maxframes, "maxframes=NUM",
     "collect up to NUM stack frames, at most 32 (default 32; 0: none);\n"
     "samples keep up to 256 unless NUM is below 32", "maxframes=NUM"},
    {"output", K::String, set_output, "output=FILENAME",
     "write the data to FILENAME (overwritten; default output.PID.mlpd)\n"
     "output=+FILENAME\twrite the data to FILENAME.PID\n"
     "output=|PROGRAM\twrite the data to the stdin of PROGRAM\n"
     "output=#FD\twrite the data to the open file descriptor FD\n"
     "%t is substituted with the UTC date and time, %p with the pid, %n with the file number, %% with %",
     "output=FILE, output=+FILE, output=|COMMAND or output=#FD"},
    {"zip", K::Flag, flag<&Options::zip>, "zip", "compress the output data (gzip)", {}},
    {"report", K::Flag, flag<&Options::report>, "report", "pipe the data into mprof-report instead of writing a file", {}},
    {"port", K::Number, set_port, "port=PORTNUM",
     "serve the command port on PORTNUM (0: any free port; default: no\n"
     "command port unless bind=, heapshot=ondemand or start-paused is given)", "port=PORT", 0, 65535},
    {"bind", K::String, set_bind, "bind=ADDRESS",
     "address of the command port (default 127.0.0.1); any other than a\n"
     "loopback address lets other hosts use the port", "bind=ADDRESS"},
    {"port-allow", K::String, set_port_allow, "port-allow=any|UID[:UID...]",
     "who may use the command port besides the agent's own user and\n"
     "root (default: nobody else; peers identified over loopback)", "port-allow=any or port-allow=UID[:UID...]"},
    {"nochildren", K::Flag, flag<&Options::nochildren>, "nochildren",
     "exec'd child processes do not inherit the agent (LD_PRELOAD and\n"
     "MLPD_OPTIONS are removed from the environment)", {}},
    {"jitdump", K::String, set_jitdump, "jitdump[=DIR]",
     "write perf's jitdump of the JIT'd code to DIR/jit-PID.dump (default:\n"
     "the current directory) for perf inject --jit (see docs/perf.md)", {}},
    {"perfmap", K::Flag, flag<&Options::perfmap>, "perfmap",
     "write /tmp/perf-PID.map (address, size, name of the JIT'd code) for perf", {}},
    {"flush", K::Number, number_u32<&Options::flush_ms>, "flush=MS",
     "write the events of quiet threads at least every MS ms (default 1000)", "flush=MILLISECONDS", kMinFlushMs,
     kMaxFlushMs},
    {"rotate", K::Duration, set_rotate, "rotate=DURATION",
     "start a new output file every DURATION (30s, 10m, 1h); the name needs %n or %t",
     "rotate=DURATION (e.g. 30s, 10m, 1h)"},
    {"rotate-size", K::Size, set_rotate_size, "rotate-size=SIZE",
     "start a new output file once it has SIZE bytes (100m, 1g)", "rotate-size=SIZE (e.g. 100m)"},
    {"rotate-keep", K::Number, number_u32<&Options::rotate_keep>, "rotate-keep=NUM",
     "with rotation, keep only the newest NUM files", "rotate-keep=NUM", 1, kInt32Max},
    {"ring", K::Size, set_ring, "ring=SIZE",
     "flight recorder: keep the last SIZE bytes of events in memory; write them on\n"
     "the command port's `dump [FILE]` and at exit (to output=, if given)", "ring=SIZE (e.g. 64m)"},
    {"dumpsignal", K::String, set_dumpsignal, "dumpsignal=NAME",
     "on signal NAME (USR1, USR2 or HUP) dump the ring, or flush without ring", "dumpsignal=NAME (USR1, USR2 or HUP)"},
    {"alloc-sample", K::Size, set_alloc_sample, "alloc-sample=BYTES",
     "record allocations as samples, one per BYTES allocated on average per\n"
     "thread (e.g. 512k; suffixes k, m, g); enables gcalloc", "alloc-sample=BYTES (e.g. 512k; suffixes k, m, g)"},
    {"start-paused", K::Flag, flag<&Options::start_paused>, "start-paused",
     "record nothing until 'resume' (command port or LogProfiler)", {}},
    {"verbose", K::Flag, flag<&Options::verbose>, "verbose", "report what the agent does on stderr", {}},
    // For testing and comparing (each was an environment variable first, still an alias).
    {"clock", K::Enum, choice<ClockKind, &Options::clock>, "clock=tsc|monotonic",
     "time stamps from the CPU's cycle counter (default, when invariant) or\n"
     "CLOCK_MONOTONIC (alias: MLPD_CLOCK=monotonic)", "clock=tsc or clock=monotonic", 0, 0, "tsc|monotonic",
     "MLPD_CLOCK", clock_from_env},
    {"walker", K::Enum, choice<WalkerMode, &Options::walker>, "walker=ours|mono|check",
     "backtraces by our stack walker (default), by Mono's, or both compared\n"
     "(alias: MLPD_WALKER=mono|check)", "walker=ours, walker=mono or walker=check", 0, 0, "ours|mono|check",
     "MLPD_WALKER", walker_from_env},
    {"eager-metadata", K::Flag, flag<&Options::eager_metadata>, "eager-metadata",
     "describe every method and class when loaded, not when first used\n"
     "(alias: MLPD_EAGER_METADATA set to any value)", {}, 0, 0, {}, "MLPD_EAGER_METADATA", eager_from_env},
    {"zip-pack-above", K::Number, set_zip_pack_above, "zip-pack-above=NUM",
     "with zip, threads compress their own buffers while NUM or more full\n"
     "64 KiB buffers wait (default 64; 0: always; alias: MLPD_ZIP_PACK_ABOVE)", "zip-pack-above=NUM", 0,
     kMaxZipPackAbove, {}, "MLPD_ZIP_PACK_ABOVE", zip_pack_above_from_env},
    {"debug", K::Flag, flag<&Options::debug>, {}, {}, {}},
    {"coverage", K::Flag, set_coverage, {}, {}, {}},
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
