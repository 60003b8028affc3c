// Where the data goes (output names, %-expansion, resolve_output), which option string a start takes,
// and the small derived settings (max_sample_hits, wants_command_server).
#include <cstdio>

#include "mlpd/agent/options.h"
#include "option_table.h"

namespace mlpd::agent {
namespace {

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

bool wants_command_server(const Options& options) noexcept {
  // start-paused: `resume` comes through the port (Mono's LogProfiler has no pause/resume).
  return options.port.has_value() || (options.bind_given && !options.metrics_port) || options.heapshot_mode == format::HEAPSHOT_ON_DEMAND ||
         options.start_paused;
}

}  // namespace mlpd::agent
