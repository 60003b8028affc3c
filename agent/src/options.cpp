// The agent's option parser. Syntax and names follow Mono 6.8's log profiler (log-args.c); the places
// where we refuse what Mono silently misreads are listed in docs/options.md.
#include "mlpd/agent/options.h"

#include <arpa/inet.h>
#include <signal.h>

#include <cstdio>
#include <new>

namespace mlpd::agent {
namespace {

using namespace mlpd::format;

constexpr uint64_t kInt32Max = 2147483647;

constexpr uint32_t kAllocAlias = MASK_GC | MASK_GC_ALLOC | MASK_GC_MOVE;
constexpr uint32_t kLegacyAlias = MASK_EXCEPTION | MASK_MONITOR | MASK_GC | MASK_GC_MOVE | MASK_GC_ROOT |
                                  MASK_GC_HANDLE | MASK_GC_FINALIZATION | MASK_COUNTER;
constexpr uint32_t kHeapshotAlias = MASK_GC | MASK_GC_ROOT;
constexpr uint32_t kCompatDefaults = MASK_EXCEPTION | MASK_COUNTER;

struct EventName {
  std::string_view name;
  uint32_t mask;
  uint32_t compat_mask;  // what the name means without `nodefaults`
};

constexpr EventName kEvents[] = {
    {"exception", MASK_EXCEPTION, MASK_EXCEPTION},
    {"monitor", MASK_MONITOR, MASK_MONITOR},
    {"gc", MASK_GC, MASK_GC},
    {"gcalloc", MASK_GC_ALLOC, MASK_GC_ALLOC},
    {"gcmove", MASK_GC_MOVE, MASK_GC_MOVE},
    {"gcroot", MASK_GC_ROOT, MASK_GC_ROOT},
    {"gchandle", MASK_GC_HANDLE, MASK_GC_HANDLE},
    {"finalization", MASK_GC_FINALIZATION, MASK_GC_FINALIZATION},
    {"counter", MASK_COUNTER, MASK_COUNTER},
    {"jit", MASK_JIT, MASK_JIT},
    {"counters", MASK_COUNTER, MASK_COUNTER},
    {"alloc", kAllocAlias, kAllocAlias | MASK_GC_ROOT},
    {"legacy", kLegacyAlias, kLegacyAlias},
};

// An item as it may appear inside a one-line message: control bytes as \xNN, long items cut short.
std::string printable(std::string_view s) {
  constexpr size_t kMaxShown = 160;
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (out.size() >= kMaxShown) {
      out += "...";
      break;
    }
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7F) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02X", c);
      out += hex;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

enum class Num { Ok, NotANumber, TooBig };

// Plain decimal digits only: no sign, no spaces, no 0x. Values beyond 10^18 are TooBig.
Num parse_number(std::string_view s, uint64_t& out) {
  if (s.empty()) return Num::NotANumber;
  uint64_t v = 0;
  bool big = false;
  for (const char c : s) {
    if (c < '0' || c > '9') return Num::NotANumber;
    if (v >= 100000000000000000ull)
      big = true;
    else
      v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  if (big) return Num::TooBig;
  out = v;
  return Num::Ok;
}

bool all_alpha(std::string_view s) {
  for (const char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) return false;
  return true;
}

class Parser {
 public:
  Parser(Options& options, std::string& error) : o_(options), error_(error) {}

  bool item(std::string_view it, bool first);
  bool finish();
  bool fail(const std::string& message) {
    error_ = "mlpd: " + message;
    return false;
  }

 private:
  bool bad_value(std::string_view it, std::string_view why) {
    return fail("bad value in '" + printable(it) + "': " + std::string(why));
  }
  bool no_value_allowed(std::string_view it, std::string_view name) {
    std::string why = "'";  // appended, not "'" + string: GCC 12 -O2 warns -Wrestrict on that
    why.append(name).append("' takes no value");
    return bad_value(it, why);
  }
  bool missing_value(std::string_view it, std::string_view usage) {
    return fail("missing value in '" + printable(it) + "': expected " + std::string(usage));
  }
  // A decimal number in [lo, hi].
  bool number(std::string_view it, std::string_view value, uint64_t lo, uint64_t hi, uint64_t& out) {
    const Num r = parse_number(value, out);
    if (r == Num::NotANumber) return bad_value(it, "expected a number");
    if (r == Num::TooBig || out < lo || out > hi)
      return bad_value(it, "expected a number from " + std::to_string(lo) + " to " + std::to_string(hi));
    return true;
  }
  bool sample(std::string_view it, bool has_value, std::string_view value, SampleMode mode);
  bool heapshot(std::string_view it, bool has_value, std::string_view value);
  bool output(std::string_view it, std::string_view value);
  bool bind(std::string_view it, std::string_view value);
  bool event(std::string_view it, std::string_view name, bool has_value);
  bool alloc_sample(std::string_view it, bool has_value, std::string_view value);

  Options& o_;
  std::string& error_;
  std::string callspec_item_;
  std::string calls_min_item_;  // for messages about options that conflict at the end
  std::string output_item_;
  bool nocalls_ = false;
};

// NUM followed by a unit: ms, s, m or h (a bare NUM is seconds). False when malformed or too big.
bool duration_ms(std::string_view v, uint64_t& out) {
  size_t digits = 0;
  while (digits < v.size() && v[digits] >= '0' && v[digits] <= '9') ++digits;
  if (digits == 0 || digits > 12) return false;
  uint64_t n = 0;
  if (parse_number(v.substr(0, digits), n) != Num::Ok) return false;
  const std::string_view unit = v.substr(digits);
  uint64_t scale = 0;
  if (unit == "ms") scale = 1;
  else if (unit.empty() || unit == "s") scale = 1000;
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

bool Parser::item(std::string_view it, bool first) {
  const size_t eq = it.find('=');
  const bool has_value = eq != std::string_view::npos;
  const std::string_view name = it.substr(0, eq);
  const std::string_view value = has_value ? it.substr(eq + 1) : std::string_view();
  uint64_t n = 0;

  // Flags: exact name, no value.
  auto flag = [&](bool& f) {
    if (has_value) return no_value_allowed(it, name);
    f = true;
    return true;
  };

  if (name == "nodefaults") {
    if (has_value) return no_value_allowed(it, name);
    if (!first) return fail("'nodefaults' is only allowed as the first option");
    o_.compat = false;
    o_.enable_mask = 0;
    return true;
  }
  // Any other first item keeps compat mode and its defaults (set in parse_all).

  if (name == "help") return flag(o_.help);
  if (name == "report") return flag(o_.report);
  if (name == "debug") return flag(o_.debug);
  if (name == "zip") return flag(o_.zip);
  if (name == "verbose") return flag(o_.verbose);
  if (name == "calls") return flag(o_.calls);
  if (name == "perfmap") return flag(o_.perfmap);
  if (name == "jitdump") {
    if (has_value && value.empty()) return bad_value(it, "expected jitdump or jitdump=DIRECTORY");
    o_.jitdump = true;
    if (has_value) o_.jitdump_dir.assign(value);
    return true;
  }
  if (name == "nocalls") {
    if (!o_.compat) return fail("'nocalls' is only accepted without 'nodefaults' (calls are off unless 'calls' is given)");
    return flag(nocalls_);
  }
  if (name == "coverage") {
    return fail("option 'coverage': the log profiler no longer supports code coverage; use Mono's coverage "
                "profiler (--profile=coverage)");
  }
  if (name == "heapshot-on-shutdown") {
    if (!flag(o_.heapshot_on_shutdown)) return false;
    o_.enable_mask |= kHeapshotAlias;  // no gcmove here, even in compat mode (as Mono)
    return true;
  }
  if (name == "heapshot") return heapshot(it, has_value, value);
  if (name == "sample") return sample(it, has_value, value, SampleMode::Process);
  if (name == "sample-real") return sample(it, has_value, value, SampleMode::Real);
  if (name == "sampling-real") {
    if (!o_.compat) return fail("'sampling-real' is only accepted without 'nodefaults'; use 'sample-real'");
    return sample(it, has_value, value, SampleMode::Real);
  }

  // Options that need a value.
  if (name == "output") {
    if (!has_value) return missing_value(it, "output=FILE, output=+FILE, output=|COMMAND or output=#FD");
    output_item_.assign(it);
    return output(it, value);
  }
  if (name == "port") {
    if (!has_value) return missing_value(it, "port=PORT");
    if (!number(it, value, 0, 65535, n)) return false;
    o_.port = static_cast<uint16_t>(n);
    return true;
  }
  if (name == "bind") {
    if (!has_value) return missing_value(it, "bind=ADDRESS");
    return bind(it, value);
  }
  if (name == "port-allow") {
    if (!has_value) return missing_value(it, "port-allow=any or port-allow=UID[:UID...]");
    if (value == "any") {
      o_.port_allow_any = true;
      return true;
    }
    o_.port_allow_uids.clear();
    for (std::string_view rest = value;;) {
      const size_t colon = rest.find(':');
      if (parse_number(rest.substr(0, colon), n) != Num::Ok || n > 0xFFFFFFFEu)
        return bad_value(it, "expected 'any' or user ids separated by ':'");
      o_.port_allow_uids.push_back(static_cast<uint32_t>(n));
      if (colon == std::string_view::npos) return true;
      rest.remove_prefix(colon + 1);
    }
  }
  if (name == "nochildren") return flag(o_.nochildren);
  if (name == "maxframes") {
    if (!has_value) return missing_value(it, "maxframes=NUM");
    const Num r = parse_number(value, n);
    if (r == Num::NotANumber) return bad_value(it, "expected a number");
    o_.maxframes = (r == Num::TooBig || n > kMaxFrames) ? kMaxFrames : static_cast<uint32_t>(n);
    return true;
  }
  if (name == "maxsamples") {
    if (!has_value) return missing_value(it, "maxsamples=NUM");
    if (!number(it, value, 0, kInt32Max, n)) return false;
    o_.maxsamples = static_cast<uint32_t>(n);
    return true;
  }
  if (name == "calldepth") {
    if (!has_value) return missing_value(it, "calldepth=NUM");
    if (!number(it, value, 0, kInt32Max, n)) return false;
    o_.calldepth = static_cast<uint32_t>(n);
    return true;
  }
  if (name == "calls-min") {
    if (!has_value) return missing_value(it, "calls-min=USEC");
    if (!number(it, value, 0, 1000000000, n)) return false;
    o_.calls_min_us = static_cast<uint32_t>(n);
    calls_min_item_.assign(it);
    return true;
  }
  if (name == "callspec") {
    if (!has_value) return missing_value(it, "callspec=SPEC");
    std::string_view spec = value;
    // Mono strips one " at each end (an escaped or quoted-in-quotes pair reaches us).
    if (!spec.empty() && spec.front() == '"') spec.remove_prefix(1);
    if (!spec.empty() && spec.back() == '"') spec.remove_suffix(1);
    if (spec.empty()) return bad_value(it, "expected callspec=SPEC with a non-empty SPEC");
    o_.callspec.assign(spec);
    callspec_item_.assign(it);
    return true;
  }
  if (name == "rotate") {
    if (!has_value) return missing_value(it, "rotate=DURATION (e.g. 30s, 10m, 1h)");
    if (!duration_ms(value, n) || n < 1000)
      return bad_value(it, "expected a duration of at least 1s: NUM followed by s, m or h (e.g. 30s, 10m, 1h)");
    o_.rotate_ms = n;
    return true;
  }
  if (name == "rotate-size") {
    if (!has_value) return missing_value(it, "rotate-size=SIZE (e.g. 100m)");
    if (!size_bytes(value, n) || n < 4096)
      return bad_value(it, "expected a size of at least 4k: NUM, NUMk, NUMm or NUMg (e.g. 100m)");
    o_.rotate_bytes = n;
    return true;
  }
  if (name == "ring") {
    if (!has_value) return missing_value(it, "ring=SIZE (e.g. 64m)");
    if (!size_bytes(value, n) || n < (1u << 20))
      return bad_value(it, "expected a size of at least 1m: NUMk, NUMm or NUMg (e.g. 64m)");
    o_.ring_bytes = n;
    return true;
  }
  if (name == "dumpsignal") {
    if (!has_value) return missing_value(it, "dumpsignal=NAME (USR1, USR2 or HUP)");
    std::string why;
    const int sig = dump_signal_from_name(value, why, &o_.dump_signal_name);
    if (!sig) return bad_value(it, why);
    o_.dump_signal = sig;
    return true;
  }
  if (name == "rotate-keep") {
    if (!has_value) return missing_value(it, "rotate-keep=NUM");
    if (!number(it, value, 1, kInt32Max, n)) return false;
    o_.rotate_keep = static_cast<uint32_t>(n);
    return true;
  }
  if (name == "start-paused") return flag(o_.start_paused);
  if (name == "alloc-sample") return alloc_sample(it, has_value, value);
  if (name == "flush") {
    if (!has_value) return missing_value(it, "flush=MILLISECONDS");
    if (!number(it, value, kMinFlushMs, kMaxFlushMs, n)) return false;
    o_.flush_ms = static_cast<uint32_t>(n);
    return true;
  }

  return event(it, name, has_value);
}

bool Parser::event(std::string_view it, std::string_view name, bool has_value) {
  const bool negated = name.size() > 2 && name.substr(0, 2) == "no";
  const std::string_view base = negated ? name.substr(2) : name;
  for (const EventName& e : kEvents) {
    const uint32_t mask = o_.compat ? e.compat_mask : e.mask;
    if (name == e.name) {
      if (has_value) return no_value_allowed(it, name);
      o_.enable_mask |= mask;
      return true;
    }
    if (negated && base == e.name) {
      if (has_value) return no_value_allowed(it, name);
      o_.disable_mask |= mask;
      return true;
    }
  }
  return fail("unknown option '" + printable(it) + "' (see MLPD_OPTIONS=help)");
}

// alloc-sample=BYTES: a number with an optional k, m or g suffix (powers of 1024).
bool Parser::alloc_sample(std::string_view it, bool has_value, std::string_view value) {
  constexpr std::string_view kUsage = "alloc-sample=BYTES (e.g. 512k; suffixes k, m, g)";
  if (!has_value) return missing_value(it, kUsage);
  uint64_t scale = 1;
  std::string_view digits = value;
  if (!digits.empty()) {
    const char s = digits.back();
    if (s == 'k' || s == 'K') scale = uint64_t{1} << 10;
    if (s == 'm' || s == 'M') scale = uint64_t{1} << 20;
    if (s == 'g' || s == 'G') scale = uint64_t{1} << 30;
    if (scale != 1) digits.remove_suffix(1);
  }
  uint64_t n = 0;
  const Num r = parse_number(digits, n);
  if (r == Num::NotANumber) return bad_value(it, std::string("expected ") + std::string(kUsage));
  if (r == Num::TooBig || n < kMinAllocSample || n > kMaxAllocSample / scale)
    return bad_value(it, "expected from 1 byte to 1024g");
  o_.alloc_sample = n * scale;
  o_.enable_mask |= MASK_GC_ALLOC;
  return true;
}

bool Parser::sample(std::string_view it, bool has_value, std::string_view value, SampleMode mode) {
  if (has_value) {
    // FREQ, or the pre-5.6 form TYPE/FREQ (the TYPE, e.g. "cycles", is ignored, as in Mono).
    std::string_view digits = value;
    const size_t slash = value.find('/');
    if (slash != std::string_view::npos && slash > 0 && all_alpha(value.substr(0, slash)))
      digits = value.substr(slash + 1);
    uint64_t freq = 0;
    const Num r = parse_number(digits, freq);
    if (r == Num::NotANumber) return bad_value(it, "expected a frequency in Hz (e.g. sample=1000 or sample=cycles/1000)");
    if (r == Num::TooBig || freq < 1 || freq > kMaxSampleFreq)
      return bad_value(it, "expected a frequency from 1 to " + std::to_string(kMaxSampleFreq) + " Hz");
    o_.sample_freq = static_cast<uint32_t>(freq);
  }
  // A bare `sample` keeps the frequency of an earlier sample=FREQ (as Mono).
  o_.sample_mode = mode;
  o_.enable_mask |= MASK_SAMPLE;
  return true;
}

bool Parser::heapshot(std::string_view it, bool has_value, std::string_view value) {
  if (!has_value) {
    o_.heapshot_mode = HEAPSHOT_MAJOR;
  } else if (value == "ondemand") {
    o_.heapshot_mode = HEAPSHOT_ON_DEMAND;
  } else {
    size_t digits = 0;
    while (digits < value.size() && value[digits] >= '0' && value[digits] <= '9') ++digits;
    const std::string_view suffix = value.substr(digits);
    constexpr std::string_view kUsage = "expected heapshot, heapshot=NUMgc, heapshot=NUMms or heapshot=ondemand";
    if (digits == 0 || (suffix != "gc" && suffix != "ms")) return bad_value(it, kUsage);
    uint64_t n = 0;
    if (suffix == "gc") {
      // 0gc would divide by zero in Mono (the process hangs); every collection is 1gc.
      if (parse_number(value.substr(0, digits), n) != Num::Ok || n < 1 || n > kInt32Max)
        return bad_value(it, "expected NUMgc with NUM from 1 to " + std::to_string(kInt32Max));
      o_.heapshot_mode = HEAPSHOT_X_GC;
      o_.heapshot_gc = static_cast<uint32_t>(n);
    } else {
      if (parse_number(value.substr(0, digits), n) != Num::Ok || n > kInt32Max)
        return bad_value(it, "expected NUMms with NUM from 0 to " + std::to_string(kInt32Max));
      o_.heapshot_mode = HEAPSHOT_X_MS;
      o_.heapshot_ms = static_cast<uint32_t>(n);
    }
  }
  o_.enable_mask |= kHeapshotAlias;
  if (o_.compat) o_.enable_mask |= MASK_GC_MOVE;
  return true;
}

bool Parser::output(std::string_view it, std::string_view value) {
  if (value.empty()) return bad_value(it, "expected a file name");
  o_.output.assign(value);
  o_.output_fd = -1;
  const std::string_view rest = value.substr(1);
  switch (value.front()) {
    case '+':
      if (rest.empty()) return bad_value(it, "expected output=+FILE with a non-empty FILE");
      o_.output_kind = OutputKind::FileAppendPid;
      o_.output_target.assign(rest);
      return true;
    case '|':
      if (rest.empty()) return bad_value(it, "expected output=|COMMAND with a non-empty COMMAND");
      o_.output_kind = OutputKind::Pipe;
      o_.output_target.assign(rest);
      return true;
    case '#': {
      uint64_t fd = 0;
      if (parse_number(rest, fd) != Num::Ok || fd > kInt32Max)
        return bad_value(it, "expected output=#FD with FD a file descriptor number");
      o_.output_kind = OutputKind::Fd;
      o_.output_target.assign(rest);
      o_.output_fd = static_cast<int>(fd);
      return true;
    }
    default:
      o_.output_kind = OutputKind::File;
      o_.output_target.assign(value);
      return true;
  }
}

bool Parser::bind(std::string_view it, std::string_view value) {
  constexpr std::string_view kWhy = "expected a numeric IPv4 or IPv6 address (e.g. 127.0.0.1, 0.0.0.0, ::1)";
  char text[64];
  if (value.empty() || value.size() >= sizeof text) return bad_value(it, kWhy);
  value.copy(text, value.size());
  text[value.size()] = '\0';
  unsigned char addr[16];
  if (inet_pton(AF_INET, text, addr) != 1 && inet_pton(AF_INET6, text, addr) != 1) return bad_value(it, kWhy);
  o_.bind.assign(value);
  o_.bind_given = true;
  return true;
}

bool Parser::finish() {
  if (nocalls_) o_.calls = false;  // like the event masks: the `no` form wins whatever the order
  if (rotation_on(o_)) {
    if (o_.report || (o_.output_kind != OutputKind::File && o_.output_kind != OutputKind::FileAppendPid))
      return fail("rotation (rotate=, rotate-size=) needs output=FILE with %n or %t in the name (e.g. "
                  "output=app-%n.mlpd)");
    const std::string& t = o_.output_target;
    if (t.find("%n") == std::string::npos && t.find("%t") == std::string::npos)
      return fail("rotation (rotate=, rotate-size=) needs %n or %t in the output name, so that files do not "
                  "overwrite each other (e.g. output=app-%n.mlpd)");
  } else if (o_.rotate_keep) {
    return fail("'rotate-keep' has no effect without rotate= or rotate-size=");
  }
  if (o_.ring_bytes) {
    if (rotation_on(o_)) return fail("'ring' cannot be combined with rotation (each dump is a file of its own)");
    if (o_.report || o_.output_kind == OutputKind::Pipe || o_.output_kind == OutputKind::Fd)
      return fail("'ring' writes dumps to files: output= must name a file (the exit dump), or be left out");
  }
  if (o_.calls_min_us && !o_.calls) {
    std::string m = "'";
    m.append(printable(calls_min_item_)).append("' has no effect without 'calls'");
    return fail(m);
  }
  // Messages appended, not "'" + string: GCC 12's -O2/-O3 inlining warns -Wrestrict on that.
  if (!o_.callspec.empty() && !o_.calls) {
    std::string m = "'";
    m.append(printable(callspec_item_)).append("' has no effect without 'calls'");
    return fail(m);
  }
  if (o_.report && (o_.output_kind == OutputKind::Pipe || o_.output_kind == OutputKind::Fd)) {
    std::string m = "'report' cannot be combined with '";
    m.append(printable(output_item_)).append("' (report pipes the data into mprof-report)");
    return fail(m);
  }
  if (o_.report && o_.zip)
    return fail("'report' cannot be combined with 'zip' (mprof-report cannot read compressed data from a pipe)");
  o_.effective_mask = o_.enable_mask & ~o_.disable_mask;
  return true;
}

bool parse_all(std::string_view text, Options& out, std::string& error) {
  out = Options{};
  // Compat mode and its defaults unless the first item is `nodefaults` (Parser::item undoes them).
  // Mono applies them only when some item exists; we also apply them to an empty string.
  out.compat = true;
  out.enable_mask = kCompatDefaults;
  out.text.assign(text);
  out.header_args = text.empty() ? std::string("mlpd") : "mlpd:" + out.text;
  Parser parser(out, error);

  // Mono's splitting: ',' ends an item outside quotes; ' or " open a quoted section that only the same
  // quote char closes (the quote chars are dropped); '\' takes the next char literally, inside quotes
  // too. Empty items are skipped, so the "first item" is the first non-empty one.
  std::string cur;
  bool first = true;
  bool in_quotes = false;
  char quote = 0;
  auto end_item = [&]() {
    if (cur.empty()) return true;
    const bool ok = parser.item(cur, first);
    first = false;
    cur.clear();
    return ok;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\0' || (c == '\\' && i + 1 < text.size() && text[i + 1] == '\0'))
      return parser.fail("NUL character in the option string after '" + printable(cur) + "'");
    if (c == ',' && !in_quotes) {
      if (!end_item()) return false;
    } else if (c == '\\') {
      if (i + 1 == text.size()) return parser.fail("trailing backslash in '" + printable(cur) + "\\'");
      cur += text[++i];
    } else if (c == '\'' || c == '"') {
      if (!in_quotes) {
        in_quotes = true;
        quote = c;
      } else if (c == quote) {
        in_quotes = false;
      } else {
        cur += c;
      }
    } else {
      cur += c;
    }
  }
  if (in_quotes) return parser.fail("unterminated quote (" + std::string(1, quote) + ") in '" + printable(cur) + "'");
  if (!end_item()) return false;
  // No item at all: the compat defaults stay (Mono 6.8 enables nothing then; we do not copy that).
  return parser.finish();
}

void append_time(std::string& out, std::time_t when) {
  std::tm tm{};
  if (!gmtime_r(&when, &tm)) {
    out += "00000000000000";
    return;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04d%02d%02d%02d%02d%02d", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec);
  out += buf;
}

// `s` inside a single-quoted shell word.
std::string shell_single_quoted_body(std::string_view s) {
  std::string out;
  for (const char c : s) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out;
}

}  // namespace

bool parse_options(std::string_view text, Options& out, std::string& error) noexcept {
  try {
    error.clear();
    return parse_all(text, out, error);
  } catch (...) {  // std::bad_alloc from a string: refuse rather than take the host down
    try {
      error = "mlpd: out of memory while parsing the options";
    } catch (...) {
    }
    return false;
  }
}

std::string_view help_text() noexcept {
  static constexpr std::string_view kText =
      "mlpd: low-overhead profiler agent for Mono; writes Mono log profiler files (.mlpd, format 3.0,\n"
      "data version 17) that mprof-report and Mono.Profiler.Log read.\n"
      "Usage: MLPD_OPTIONS='OPTION1[,OPTION2...]' LD_PRELOAD=libmlpd.so mono program.exe\n"
      "   or: mono --profile=mlpd[:OPTION1[,OPTION2...]] program.exe\n"
      "Options are comma-separated; ' or \" quote a section (commas inside are kept), \\ escapes one char.\n"
      "Options:\n"
      "\thelp                 show this usage info (nothing is profiled)\n"
      "\tnodefaults           only as the first option: enable no events by default\n"
      "\t                     (otherwise exception and counter are on, as with Mono's log profiler)\n"
      "\t[no]EVENT            enable/disable an individual profiling event; EVENT values:\n"
      "\t                         exception, monitor, gc, gcalloc, gcmove, gcroot, gchandle,\n"
      "\t                         finalization, counter (or counters), jit\n"
      "\t[no]alloc            enable/disable allocation info: gc, gcalloc, gcmove (and gcroot\n"
      "\t                     without nodefaults)\n"
      "\t[no]legacy           enable/disable the pre Mono 5.6 default events\n"
      "\tsample[-real][=FREQ] statistical sampling of threads, FREQ in Hz (100 by default);\n"
      "\t                     the -real variant uses wall clock time instead of process time\n"
      "\tmaxsamples=NUM       keep at most NUM samples in flight (default: CPUs * 1000; 0: no limit)\n"
      "\theapshot[=MODE]      record heapshots (by default at each major collection); MODE:\n"
      "\t                     NUMgc every NUM major collections, NUMms at most every NUM ms,\n"
      "\t                     ondemand when asked through the command port\n"
      "\theapshot-on-shutdown one heapshot at runtime shutdown (independent of heapshot)\n"
      "\tcalls                record method enter/leave events (very heavy)\n"
      "\tcalldepth=NUM        ignore enter/leave events deeper than NUM calls (default 100)\n"
      "\tcalls-min=USEC       with calls, leave out calls shorter than USEC microseconds\n"
      "\tcallspec=SPEC        limit calls to methods matching SPEC (the syntax of mono --trace)\n"
      "\tmaxframes=NUM        collect up to NUM stack frames, at most 32 (default 32; 0: none);\n"
      "\t                     samples keep up to 256 unless NUM is below 32\n"
      "\toutput=FILENAME      write the data to FILENAME (overwritten; default output.PID.mlpd)\n"
      "\toutput=+FILENAME     write the data to FILENAME.PID\n"
      "\toutput=|PROGRAM      write the data to the stdin of PROGRAM\n"
      "\toutput=#FD           write the data to the open file descriptor FD\n"
      "\t                     %t is substituted with the UTC date and time, %p with the pid, %n with the file number, %% with %\n"
      "\tzip                  compress the output data (gzip)\n"
      "\treport               pipe the data into mprof-report instead of writing a file\n"
      "\tport=PORTNUM         serve the command port on PORTNUM (0: any free port; default: no\n"
      "\t                     command port unless bind=, heapshot=ondemand or start-paused is given)\n"
      "\tbind=ADDRESS         address of the command port (default 127.0.0.1); any other than a\n"
      "\t                     loopback address lets other hosts use the port\n"
      "\tport-allow=any|UID[:UID...]  who may use the command port besides the agent's own user and\n"
      "\t                     root (default: nobody else; peers identified over loopback)\n"
      "\tnochildren           exec'd child processes do not inherit the agent (LD_PRELOAD and\n"
      "\t                     MLPD_OPTIONS are removed from the environment)\n"
      "\tjitdump[=DIR]        write perf's jitdump of the JIT'd code to DIR/jit-PID.dump (default:\n"
      "\t                     the current directory) for perf inject --jit (see docs/perf.md)\n"
      "\tperfmap              write /tmp/perf-PID.map (address, size, name of the JIT'd code) for perf\n"
      "\tflush=MS             write the events of quiet threads at least every MS ms (default 1000)\n"
      "\trotate=DURATION      start a new output file every DURATION (30s, 10m, 1h); the name needs %n or %t\n"
      "\trotate-size=SIZE     start a new output file once it has SIZE bytes (100m, 1g)\n"
      "\trotate-keep=NUM      with rotation, keep only the newest NUM files\n"
      "\tring=SIZE            flight recorder: keep the last SIZE bytes of events in memory; write them on\n"
      "\t                     the command port's `dump [FILE]` and at exit (to output=, if given)\n"
      "\tdumpsignal=NAME      on signal NAME (USR1, USR2 or HUP) dump the ring, or flush without ring\n"
      "\talloc-sample=BYTES   record allocations as samples, one per BYTES allocated on average per\n"
      "\t                     thread (e.g. 512k; suffixes k, m, g); enables gcalloc\n"
      "\tstart-paused         record nothing until 'resume' (command port or LogProfiler)\n"
      "\tverbose              report what the agent does on stderr\n";
  return kText;
}

int dump_signal_from_name(std::string_view name, std::string& why, std::string* canonical) {
  // Who owns the signals we do not take (Mono 6.8: mini-posix.c mono_runtime_posix_install_handlers,
  // utils/mono-threads-posix-signals.c, the sampler's signal; System.Console's console-unix.c).
  struct Sig {
    std::string_view name;
    int number;
    std::string_view owner;  // empty: the agent may take it
  };
  static constexpr Sig kSignals[] = {
      {"USR1", SIGUSR1, {}},
      {"USR2", SIGUSR2, {}},
      {"HUP", SIGHUP, {}},
      {"KILL", SIGKILL, "cannot be caught"},
      {"STOP", SIGSTOP, "cannot be caught"},
      {"SEGV", SIGSEGV, "Mono's (null references, crashes)"},
      {"BUS", SIGBUS, "Mono's (crashes)"},
      {"ILL", SIGILL, "Mono's (crashes)"},
      {"FPE", SIGFPE, "Mono's (division by zero)"},
      {"ABRT", SIGABRT, "Mono's (crash reports)"},
      {"SYS", SIGSYS, "Mono's (crashes)"},
      {"TRAP", SIGTRAP, "the debugger's"},
      {"QUIT", SIGQUIT, "Mono's (thread dump)"},
      {"PWR", SIGPWR, "Mono's (GC thread suspend)"},
      {"XCPU", SIGXCPU, "Mono's (GC thread restart)"},
      {"PROF", SIGPROF, "the sampler's"},
      {"CHLD", SIGCHLD, "Mono's (child processes)"},
      {"PIPE", SIGPIPE, "Mono's (ignored)"},
      {"INT", SIGINT, "the program's (Console.CancelKeyPress) and the terminal's"},
      {"TERM", SIGTERM, "the program's termination signal"},
      {"WINCH", SIGWINCH, "System.Console's"},
      {"CONT", SIGCONT, "System.Console's and job control's"},
      {"TSTP", SIGTSTP, "job control's"},
      {"TTIN", SIGTTIN, "job control's"},
      {"TTOU", SIGTTOU, "job control's"},
      {"ALRM", SIGALRM, "the program's (timers)"},
      {"VTALRM", SIGVTALRM, "the program's (timers)"},
      {"URG", SIGURG, "the program's (sockets)"},
      {"IO", SIGIO, "the program's (asynchronous I/O)"},
      {"POLL", SIGPOLL, "the program's (asynchronous I/O)"},
      {"XFSZ", SIGXFSZ, "the kernel's (file size limit)"},
      {"STKFLT", SIGSTKFLT, "unused by Linux"},
  };
  std::string upper;
  for (const char c : name) upper += (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c;
  std::string_view n = upper;
  if (n.substr(0, 3) == "SIG") n.remove_prefix(3);
  for (const Sig& s : kSignals) {
    if (s.name != n) continue;
    if (s.owner.empty()) {
      if (canonical) *canonical = "SIG" + std::string(s.name);
      return s.number;
    }
    why = "SIG" + std::string(s.name) + " is " + std::string(s.owner) + "; use USR1, USR2 or HUP";
    return 0;
  }
  if (n.substr(0, 2) == "RT")
    why = "real-time signals are Mono's (thread abort, sampling); use USR1, USR2 or HUP";
  else
    why = "not a signal name: use USR1, USR2 or HUP";
  return 0;
}

std::string_view options_from_profiler_desc(std::string_view desc) noexcept {
  const size_t colon = desc.find(':');
  return colon == std::string_view::npos ? std::string_view() : desc.substr(colon + 1);
}

ChosenOptions choose_options(std::optional<std::string_view> env, std::string_view profile) {
  ChosenOptions c;
  const std::string_view e = env.value_or(std::string_view());
  if (profile.empty()) {
    c.text = std::string(e);
    return c;
  }
  c.text = std::string(profile);
  if (!e.empty() && e != profile) {
    c.note = "mlpd: using the options of --profile=mlpd:" + printable(profile) + "; MLPD_OPTIONS='" + printable(e) +
             "' is ignored";
  }
  return c;
}

std::string expand_output_name(std::string_view pattern, long pid, std::time_t when, uint64_t seq) {
  std::string out;
  out.reserve(pattern.size() + 16);
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c != '%' || i + 1 == pattern.size()) {
      out += c;
      continue;
    }
    const char k = pattern[++i];
    if (k == 'p')
      out += std::to_string(pid);
    else if (k == 't')
      append_time(out, when);
    else if (k == 'n') {
      const std::string n = std::to_string(seq);
      if (n.size() < 4) out.append(4 - n.size(), '0');
      out += n;
    } else if (k == '%')
      out += '%';
    else {
      out += '%';
      out += k;
    }
  }
  return out;
}

std::string default_output_name(long pid, bool zip) {
  return "output." + std::to_string(pid) + (zip ? ".mlpd.gz" : ".mlpd");
}

ResolvedOutput resolve_output(const Options& options, long pid, std::time_t when, uint64_t seq) {
  ResolvedOutput r;
  switch (options.output_kind) {
    case OutputKind::Default:
      if (options.report) {
        r.kind = ResolvedOutput::Kind::Pipe;
        r.target = "mprof-report -";
      } else {
        r.target = default_output_name(pid, options.zip);
      }
      return r;
    case OutputKind::Pipe:
      r.kind = ResolvedOutput::Kind::Pipe;
      r.target = expand_output_name(options.output_target, pid, when, seq);
      return r;
    case OutputKind::Fd:
      r.kind = ResolvedOutput::Kind::Fd;
      r.fd = options.output_fd;
      return r;
    case OutputKind::File:
      r.target = expand_output_name(options.output_target, pid, when, seq);
      break;
    case OutputKind::FileAppendPid:
      // As Mono: ".PID" is appended first, then the %-expansion runs over the whole name.
      r.target = expand_output_name(options.output_target + "." + std::to_string(pid), pid, when, seq);
      break;
  }
  if (options.report) {
    r.kind = ResolvedOutput::Kind::Pipe;
    r.target = "mprof-report '--out=" + shell_single_quoted_body(r.target) + "' -";
  }
  return r;
}

uint64_t max_sample_hits(const Options& options, unsigned cpu_count) noexcept {
  if (options.maxsamples) return *options.maxsamples == 0 ? kNoSampleLimit : *options.maxsamples;
  return static_cast<uint64_t>(cpu_count == 0 ? 1 : cpu_count) * 1000;
}

bool event_name_mask(std::string_view name, bool compat, uint32_t& mask) noexcept {
  for (const EventName& e : kEvents) {
    if (name == e.name) {
      mask = compat ? e.compat_mask : e.mask;
      return true;
    }
  }
  return false;
}

std::string event_mask_names(uint32_t mask) {
  std::string out;
  uint32_t named = 0;
  for (const EventName& e : kEvents) {
    // Single bits only, each once (counter and counters are the same bit).
    if ((e.mask & (e.mask - 1)) != 0 || !(mask & e.mask) || (named & e.mask)) continue;
    named |= e.mask;
    if (!out.empty()) out += ' ';
    out += e.name;
  }
  return out;
}

bool wants_command_server(const Options& options) noexcept {
  // start-paused: `resume` comes through the port (Mono's LogProfiler has no pause/resume).
  return options.port.has_value() || options.bind_given || options.heapshot_mode == HEAPSHOT_ON_DEMAND ||
         options.start_paused;
}

}  // namespace mlpd::agent
