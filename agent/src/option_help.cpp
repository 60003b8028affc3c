// MLPD_OPTIONS=help: the usage text, made from the option table's help column.
#include <string>

#include "mlpd/agent/options.h"
#include "mlpd/event_names.h"
#include "option_table.h"

namespace mlpd::agent {
namespace {

constexpr size_t kUsageWidth = 21;  // the help's left column
constexpr size_t kEventLineWidth = 66;

void row(std::string& out, std::string_view usage, std::string_view text) {
  out += '\t';
  out += usage;
  if (usage.size() < kUsageWidth)
    out.append(kUsageWidth - usage.size(), ' ');
  else
    out += "  ";
  out += text;
  out += '\n';
}

// The single event names, wrapped, indented by four within the text column.
std::string event_list() {
  std::string out, line = "    ";
  const size_t n = std::size(format::kEventBitNames);
  for (size_t i = 0; i < n; ++i) {
    std::string word(format::kEventBitNames[i].option);
    if (word == "counter") word += " (or counters)";
    if (i + 1 < n) word += ',';
    if (line.size() > 4 && line.size() + 1 + word.size() > kEventLineWidth) {
      out += line;
      out += '\n';
      line = "    ";
    }
    if (line.size() > 4) line += ' ';
    line += word;
  }
  return out + line;
}

std::string make_help() {
  std::string out =
      "mlpd: low-overhead profiler agent for Mono; writes Mono log profiler files (.mlpd, format 3.0,\n"
      "data version 17) that mprof-report and Mono.Profiler.Log read.\n"
      "Usage: MLPD_OPTIONS='OPTION1[,OPTION2...]' LD_PRELOAD=libmlpd.so mono program.exe\n"
      "   or: mono --profile=mlpd[:OPTION1[,OPTION2...]] program.exe\n"
      "Options are comma-separated; ' or \" quote a section (commas inside are kept), \\ escapes one char.\n"
      "Options:\n";
  for (const OptionSpec& s : option_table()) {
    if (s.usage.empty()) continue;
    std::string text(s.help);
    if (const size_t at = text.find("%EVENTS%"); at != std::string::npos) text.replace(at, 8, event_list());
    std::string_view usage = s.usage;
    std::string_view rest = text;
    while (true) {
      const size_t nl = rest.find('\n');
      std::string_view line = rest.substr(0, nl);
      if (const size_t tab = line.find('\t'); tab != std::string_view::npos) {
        usage = line.substr(0, tab);  // a row of its own (output=+FILENAME ...)
        line.remove_prefix(tab + 1);
      }
      row(out, usage, line);
      usage = {};
      if (nl == std::string_view::npos) break;
      rest.remove_prefix(nl + 1);
    }
  }
  return out;
}

}  // namespace

std::string_view help_text() noexcept {
  try {
    static const std::string text = make_help();
    return text;
  } catch (...) {
    return "mlpd: out of memory while making the help text\n";
  }
}

}  // namespace mlpd::agent
