// The option table's setters: what each option does with its value (option_setters.h).
#include "option_setters.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace mlpd::agent::setters {

using namespace mlpd::format;
using option_syntax::Num;
using option_syntax::parse_number;

namespace {

constexpr uint64_t kInt32Max = 2147483647;
constexpr uint32_t kHeapshotAlias = MASK_GC | MASK_GC_ROOT;

}  // namespace

// NUM followed by a unit: ms, s, m or h (a bare NUM is seconds). False when malformed or too big.
static bool duration_ms(std::string_view v, uint64_t& out) {
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
static bool size_bytes(std::string_view v, uint64_t& out) {
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

static bool all_alpha(std::string_view s) {
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

static bool sample(OptionParser& p, const Item& it, SampleMode mode) {
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

bool set_metrics(OptionParser& p, const OptionSpec& s, const Item& it) {
  if (!it.has_value) return p.missing_value(it.text, s.expect);
  uint64_t n = 0;
  if (!p.number(it.text, it.value, s.lo, s.hi, n)) return false;
  p.o.metrics_port = static_cast<uint16_t>(n);
  return true;
}

// push=URL: http:// or https://, a host, no query or fragment, nothing a request line cannot carry.
bool set_push(OptionParser& p, const OptionSpec& s, const Item& it) {
  if (!it.has_value) return p.missing_value(it.text, s.expect);
  constexpr std::string_view kWhy = "expected http://HOST[:PORT][/PATH] or https://... (no query)";
  std::string_view v = it.value;
  size_t host = 0;
  if (v.rfind("http://", 0) == 0)
    host = 7;
  else if (v.rfind("https://", 0) == 0)
    host = 8;
  else
    return p.bad_value(it.text, kWhy);
  if (host >= v.size() || v[host] == '/' || v[host] == ':' || v.size() > 2048) return p.bad_value(it.text, kWhy);
  for (const char c : v) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= ' ' || u == 0x7f || c == '?' || c == '#' || c == '"' || c == '\\') return p.bad_value(it.text, kWhy);
  }
  while (v.size() > host + 1 && v.back() == '/') v.remove_suffix(1);
  p.o.push_url.assign(v);
  constexpr std::string_view kIngest = "/ingest";
  if (v.size() < kIngest.size() || v.substr(v.size() - kIngest.size()) != kIngest) p.o.push_url.append(kIngest);
  return true;
}

namespace {
bool label_name_ok(std::string_view k) {
  if (k.empty() || k.size() > 128 || (k[0] >= '0' && k[0] <= '9')) return false;
  for (const char c : k)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}
// Pyroscope's name syntax (SERVICE{k=v,...}) has no quoting: a value cannot hold its separators.
bool label_value_ok(std::string_view v) {
  if (v.empty() || v.size() > 1024) return false;
  for (const char c : v) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= ' ' || u == 0x7f || c == ',' || c == '=' || c == '{' || c == '}' || c == '"') return false;
  }
  return true;
}
}  // namespace

bool set_push_labels(OptionParser& p, const OptionSpec& s, const Item& it) {
  if (!it.has_value) return p.missing_value(it.text, s.expect);
  p.o.push_labels.clear();
  std::string_view rest = it.value;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view kv = rest.substr(0, comma);
    const size_t eq = kv.find('=');
    if (eq == std::string_view::npos || !label_name_ok(kv.substr(0, eq)) || !label_value_ok(kv.substr(eq + 1)))
      return p.bad_value(it.text,
                         "expected K=V[,K=V...] (quoted), K letters, digits and '_', V printable without spaces , = { } \"");
    const std::string k(kv.substr(0, eq)), val(kv.substr(eq + 1));
    bool replaced = false;
    for (auto& [lk, lv] : p.o.push_labels)
      if (lk == k) {
        lv = val;
        replaced = true;
      }
    if (!replaced) p.o.push_labels.emplace_back(k, val);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  if (p.o.push_labels.empty()) return p.bad_value(it.text, "expected K=V[,K=V...]");
  return true;
}

// The token is read now, once: a file that cannot be read is refused as a bad option.
bool set_push_token_file(OptionParser& p, const OptionSpec& s, const Item& it) {
  if (!it.has_value || it.value.empty()) return p.missing_value(it.text, s.expect);
  const std::string path(it.value);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return p.bad_value(it.text, std::string("cannot read the token file: ") + std::strerror(errno));
  char buf[8192];
  ssize_t n;
  do {
    n = ::read(fd, buf, sizeof buf);
  } while (n < 0 && errno == EINTR);
  const int err = errno;
  ::close(fd);
  if (n < 0) return p.bad_value(it.text, std::string("cannot read the token file: ") + std::strerror(err));
  std::string_view t(buf, static_cast<size_t>(n));
  t = t.substr(0, t.find('\n'));
  while (!t.empty() && (t.back() == '\r' || t.back() == ' ' || t.back() == '\t')) t.remove_suffix(1);
  while (!t.empty() && (t.front() == ' ' || t.front() == '\t')) t.remove_prefix(1);
  if (t.empty()) return p.bad_value(it.text, "the token file's first line is empty");
  for (const char c : t)
    if (static_cast<unsigned char>(c) < ' ' || c == 0x7f) return p.bad_value(it.text, "the token has control characters");
  p.o.push_token.assign(t);
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

}  // namespace mlpd::agent::setters
