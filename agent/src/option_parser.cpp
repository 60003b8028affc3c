// The agent's option parser, driven by the option table (option_table.h). Syntax and names follow
// Mono 6.8's log profiler (log-args.c); the places where we refuse what Mono silently misreads are
// listed in docs/options.md.
#include <cstdio>

#include "mlpd/agent/options.h"
#include "mlpd/option_syntax.h"
#include "option_table.h"

namespace mlpd::agent {

using option_syntax::Item;
using option_syntax::Num;
using option_syntax::parse_number;

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

bool OptionParser::fail(const std::string& message) {
  error_ = "mlpd: " + message;
  return false;
}
bool OptionParser::bad_value(std::string_view it, std::string_view why) {
  return fail("bad value in '" + printable(it) + "': " + std::string(why));
}
bool OptionParser::no_value_allowed(std::string_view it, std::string_view name) {
  std::string why = "'";  // appended, not "'" + string: GCC 12 -O2 warns -Wrestrict on that
  why.append(name).append("' takes no value");
  return bad_value(it, why);
}
bool OptionParser::missing_value(std::string_view it, std::string_view usage) {
  return fail("missing value in '" + printable(it) + "': expected " + std::string(usage));
}
bool OptionParser::number(std::string_view it, std::string_view value, uint64_t lo, uint64_t hi, uint64_t& out) {
  const Num r = parse_number(value, out);
  if (r == Num::NotANumber) return bad_value(it, "expected a number");
  if (r == Num::TooBig || out < lo || out > hi)
    return bad_value(it, "expected a number from " + std::to_string(lo) + " to " + std::to_string(hi));
  return true;
}

bool OptionParser::item(const Item& it, bool is_first) {
  first = is_first;
  // Any first item but nodefaults keeps compat mode and its defaults (set in parse_all).
  const OptionSpec* spec = find_option(it.name);
  if (spec && spec->set) return spec->set(*this, *spec, it);
  return event(it.text, it.name, it.has_value);
}

bool OptionParser::event(std::string_view it, std::string_view name, bool has_value) {
  const bool negated = name.size() > 2 && name.substr(0, 2) == "no";
  uint32_t mask = 0, compat_mask = 0;
  // A name is looked up as itself first (no event name starts with "no").
  if (event_name_masks(name, mask, compat_mask)) {
    if (has_value) return no_value_allowed(it, name);
    o.enable_mask |= o.compat ? compat_mask : mask;
    return true;
  }
  if (negated && event_name_masks(name.substr(2), mask, compat_mask)) {
    if (has_value) return no_value_allowed(it, name);
    o.disable_mask |= o.compat ? compat_mask : mask;
    return true;
  }
  return fail("unknown option '" + printable(it) + "' (see MLPD_OPTIONS=help)");
}

bool OptionParser::finish() {
  if (nocalls) o.calls = false;  // like the event masks: the `no` form wins whatever the order
  if (rotation_on(o)) {
    if (o.report || (o.output_kind != OutputKind::File && o.output_kind != OutputKind::FileAppendPid))
      return fail("rotation (rotate=, rotate-size=) needs output=FILE with %n or %t in the name (e.g. "
                  "output=app-%n.mlpd)");
    const std::string& t = o.output_target;
    if (t.find("%n") == std::string::npos && t.find("%t") == std::string::npos)
      return fail("rotation (rotate=, rotate-size=) needs %n or %t in the output name, so that files do not "
                  "overwrite each other (e.g. output=app-%n.mlpd)");
  } else if (o.rotate_keep) {
    return fail("'rotate-keep' has no effect without rotate= or rotate-size=");
  }
  if (o.ring_bytes) {
    if (rotation_on(o)) return fail("'ring' cannot be combined with rotation (each dump is a file of its own)");
    if (o.report || o.output_kind == OutputKind::Pipe || o.output_kind == OutputKind::Fd)
      return fail("'ring' writes dumps to files: output= must name a file (the exit dump), or be left out");
  }
  if (o.calls_min_us && !o.calls) {
    std::string m = "'";
    m.append(printable(calls_min_item)).append("' has no effect without 'calls'");
    return fail(m);
  }
  // Messages appended, not "'" + string: GCC 12's -O2/-O3 inlining warns -Wrestrict on that.
  if (!o.callspec.empty() && !o.calls) {
    std::string m = "'";
    m.append(printable(callspec_item)).append("' has no effect without 'calls'");
    return fail(m);
  }
  if (o.report && (o.output_kind == OutputKind::Pipe || o.output_kind == OutputKind::Fd)) {
    std::string m = "'report' cannot be combined with '";
    m.append(printable(output_item)).append("' (report pipes the data into mprof-report)");
    return fail(m);
  }
  if (o.report && o.zip)
    return fail("'report' cannot be combined with 'zip' (mprof-report cannot read compressed data from a pipe)");
  if (o.push_url.empty() && (!o.push_labels.empty() || !o.push_token.empty() || o.push_interval_s != kDefaultPushIntervalS))
    return fail("push-interval=, push-labels= and push-token-file= have no effect without push=URL");
  o.effective_mask = o.enable_mask & ~o.disable_mask;
  return true;
}

namespace {

constexpr uint32_t kCompatDefaults = format::MASK_EXCEPTION | format::MASK_COUNTER;

bool parse_all(std::string_view text, Options& out, std::string& error, EnvLookup env) {
  out = Options{};
  // Compat mode and its defaults unless the first item is `nodefaults` (its setter undoes them).
  // Mono applies them only when some item exists; we also apply them to an empty string.
  out.compat = true;
  out.enable_mask = kCompatDefaults;
  out.text.assign(text);
  out.header_args = text.empty() ? std::string("mlpd") : "mlpd:" + out.text;
  OptionParser parser(out, error);

  // The environment aliases first: an option in the string wins (the last one wins).
  if (env) {
    std::string value;
    for (const OptionSpec& s : option_table()) {
      if (s.env.empty() || !s.from_env) continue;
      const char* v = env(std::string(s.env).c_str());
      value.clear();
      if (!v || !s.from_env(v, value)) continue;
      std::string item(s.name);
      if (s.kind != OptionKind::Flag) item.append("=").append(value);
      if (!parser.item(option_syntax::split_item(item), false)) return false;
    }
  }

  using option_syntax::SplitError;
  const option_syntax::SplitResult r =
      option_syntax::split_items(text, [&](const Item& it, bool first) { return parser.item(it, first); });
  switch (r.error) {
    case SplitError::Ok: break;
    case SplitError::Stopped: return false;
    case SplitError::Nul: return parser.fail("NUL character in the option string after '" + printable(r.item) + "'");
    case SplitError::TrailingBackslash: return parser.fail("trailing backslash in '" + printable(r.item) + "\\'");
    case SplitError::UnterminatedQuote:
      return parser.fail("unterminated quote (" + std::string(1, r.quote) + ") in '" + printable(r.item) + "'");
  }
  // No item at all: the compat defaults stay (Mono 6.8 enables nothing then; we do not copy that).
  return parser.finish();
}

}  // namespace

bool parse_options(std::string_view text, Options& out, std::string& error, EnvLookup env) noexcept {
  try {
    error.clear();
    return parse_all(text, out, error, env);
  } catch (...) {  // std::bad_alloc from a string: refuse rather than take the host down
    try {
      error = "mlpd: out of memory while parsing the options";
    } catch (...) {
    }
    return false;
  }
}

}  // namespace mlpd::agent
