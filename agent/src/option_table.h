// The agent's option table (docs/design.md, "The option table"): one row per option name, from which
// the parser (option_parser.cpp), MLPD_OPTIONS=help (help_text) and the documented list
// (docs/options.md, checked by option_table_test.cpp) all come. The event names are
// format::kEventBitNames (mlpd/event_names.h), shared with the command port and LogProfiler.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "mlpd/agent/options.h"
#include "mlpd/option_syntax.h"

namespace mlpd::agent {

enum class OptionKind : uint8_t {
  Flag,      // NAME, no value
  Number,    // NAME=NUM, decimal, in [lo, hi]
  Size,      // NAME=SIZE with k/m/g
  Duration,  // NAME=DURATION with ms/s/m/h
  Enum,      // NAME=CHOICE, one of `choices` ("a|b|c")
  String,    // NAME=TEXT (or NAME[=TEXT])
  Event,     // [no]NAME: event-mask bits (no setter; the parser's event lookup does them)
};

class OptionParser;
struct OptionSpec;
using OptionSetter = bool (*)(OptionParser&, const OptionSpec&, const option_syntax::Item&);

struct OptionSpec {
  std::string_view name;     // as matched (exactly); "EVENT" is the help's row for the single events
  OptionKind kind;
  OptionSetter set;          // nullptr: not matched by name (Event rows)
  std::string_view dflt;     // the default, as docs/options.md's list says it (checked by a test)
  std::string_view usage;    // the help's left column; empty: not in the help (compat aliases, no-ops)
  std::string_view help;     // the help's text; '\n' starts a continuation line, "USAGE\tTEXT" a new row
  std::string_view expect;   // what a missing value message expects, e.g. "calldepth=NUM"
  uint64_t lo = 0, hi = 0;   // Number: the accepted range
  std::string_view choices;  // Enum: "a|b|c" (the stored value is the index)
  std::string_view env;      // environment variable that is an alias of this option; empty: none
  // Env alias: the option's value for the variable's value (true), or nothing to set (false: the
  // variable keeps the behaviour it had before it became an option, e.g. unknown values ignored).
  bool (*from_env)(std::string_view env_value, std::string& option_value) = nullptr;
};

std::span<const OptionSpec> option_table() noexcept;
const OptionSpec* find_option(std::string_view name) noexcept;

// The parser state the setters use (option_parser.cpp).
class OptionParser {
 public:
  OptionParser(Options& options, std::string& error) : o(options), error_(error) {}

  bool item(const option_syntax::Item& it, bool first);
  bool finish();
  bool fail(const std::string& message);
  bool bad_value(std::string_view it, std::string_view why);
  bool no_value_allowed(std::string_view it, std::string_view name);
  bool missing_value(std::string_view it, std::string_view usage);
  bool number(std::string_view it, std::string_view value, uint64_t lo, uint64_t hi, uint64_t& out);
  bool event(std::string_view it, std::string_view name, bool has_value);

  Options& o;
  bool first = false;           // the item being parsed is the first
  std::string callspec_item;    // for messages about options that conflict at the end
  std::string calls_min_item;
  std::string output_item;
  bool nocalls = false;

 private:
  std::string& error_;
};

// An item as it may appear inside a one-line message: control bytes as \xNN, long items cut short.
std::string printable(std::string_view s);

// Whether `name` with its `no` prefix removed is an event name (its bits with/without compat).
bool event_name_masks(std::string_view name, uint32_t& mask, uint32_t& compat_mask) noexcept;

}  // namespace mlpd::agent
