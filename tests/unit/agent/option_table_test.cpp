// The option table (agent/src/option_table.h) against what is made from it and what must agree with
// it: the help text, docs/options.md's list of options, the environment aliases, the event vocabulary
// and the option syntax the reader shares.
#include "mlpd_catch.h"

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "mlpd/agent/options.h"
#include "mlpd/event_names.h"
#include "mlpd/option_syntax.h"
#include "../../../agent/src/option_table.h"

using namespace mlpd::agent;

namespace {

// "sample[-real][=FREQ]" -> "sample", "[no]alloc" -> "alloc", "output=\\|COMMAND" -> "output".
std::string base_name(std::string s) {
  if (s.rfind("[no]", 0) == 0) s.erase(0, 4);
  const size_t cut = s.find_first_of("=[");
  return s.substr(0, cut);
}

std::set<std::string> table_names() {
  std::set<std::string> names;
  for (const OptionSpec& s : option_table()) names.insert(std::string(s.name));
  return names;
}

std::map<std::string, std::string> g_env;
const char* fake_getenv(const char* name) {
  const auto it = g_env.find(name);
  return it == g_env.end() ? nullptr : it->second.c_str();
}

Options parse(const std::string& text, bool with_env = false) {
  Options o;
  std::string error;
  REQUIRE(parse_options(text, o, error, with_env ? &fake_getenv : nullptr));
  return o;
}

}  // namespace

TEST_CASE("option table: the help text is made from it, unchanged for the old options", "[options]") {
  // The hand-kept text of before the table, then the rows of the options that were variables.
  const std::string expected =
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
    "\tbind=ADDRESS         address of the command port and of metrics= (default 127.0.0.1); any\n"
    "\t                     other than a loopback address lets other hosts use the port\n"
    "\tport-allow=any|UID[:UID...]  who may use the command port besides the agent's own user and\n"
    "\t                     root (default: nobody else; peers identified over loopback)\n"
    "\tmetrics=PORT         serve GET /metrics (Prometheus text format) on PORT (0: any free\n"
    "\t                     port) at bind='s address, to the users port-allow= admits\n"
    "\tpush=URL             every push-interval= seconds, POST the interval's CPU samples and\n"
    "\t                     allocations as gzipped pprof to URL, a Pyroscope-compatible server's ingest\n"
    "\t                     API (http:// or https://; /ingest is added unless URL ends in it)\n"
    "\tpush-interval=S      seconds between pushes (default 15)\n"
    "\tpush-labels=K=V,...  labels of the pushed profiles besides service_name (the program's\n"
    "\t                     name), pid and runtime (quote the list: push-labels='env=prod,dc=eu')\n"
    "\tpush-token-file=FILE send 'Authorization: Bearer TOKEN', TOKEN being FILE's first line (read\n"
    "\t                     at start)\n"
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
    "\tverbose              report what the agent does on stderr\n"
      "\tclock=tsc|monotonic  time stamps from the CPU's cycle counter (default, when invariant) or\n"
      "\t                     CLOCK_MONOTONIC (alias: MLPD_CLOCK=monotonic)\n"
      "\twalker=ours|mono|check  backtraces by our stack walker (default), by Mono's, or both compared\n"
      "\t                     (alias: MLPD_WALKER=mono|check)\n"
      "\teager-metadata       describe every method and class when loaded, not when first used\n"
      "\t                     (alias: MLPD_EAGER_METADATA set to any value)\n"
      "\tzip-pack-above=NUM   with zip, threads compress their own buffers while NUM or more full\n"
      "\t                     64 KiB buffers wait (default 64; 0: always; alias: MLPD_ZIP_PACK_ABOVE)\n";
  CHECK(std::string(help_text()) == expected);
}

TEST_CASE("option table: every row of the help is an option and every option with a usage is in the help", "[options]") {
  const std::set<std::string> names = table_names();
  std::set<std::string> in_help;
  std::istringstream lines{std::string(help_text())};
  for (std::string line; std::getline(lines, line);) {
    if (line.size() < 2 || line[0] != '\t' || line[1] == ' ') continue;
    const std::string usage = line.substr(1, line.find(' ') - 1);
    INFO(line);
    CHECK(names.count(base_name(usage)) == 1);
    in_help.insert(base_name(usage));
  }
  for (const OptionSpec& s : option_table()) {
    INFO(s.name);
    CHECK(in_help.count(std::string(s.name)) == (s.usage.empty() ? 0u : 1u));
    // Rows the parser matches by name have a setter; the event rows are the event lookup's.
    CHECK((s.set == nullptr) == (s.kind == OptionKind::Event));
  }
}

TEST_CASE("option table: docs/options.md lists exactly the options of the table", "[options]") {
  std::ifstream in(std::string(MLPD_SOURCE_DIR) + "/docs/options.md");
  REQUIRE(in);
  std::set<std::string> documented;
  std::map<std::string, std::string> default_of;  // the last cell of the first row naming the option
  bool in_list = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("## ", 0) == 0) in_list = line == "## All options";
    if (!in_list || line.rfind("| `", 0) != 0) continue;
    std::vector<std::string> cells;  // split at the | that are not escaped (\\|)
    std::string cell;
    for (size_t i = 1; i < line.size(); ++i) {
      if (line[i] == '|' && line[i - 1] != '\\') {
        cells.push_back(cell.substr(cell.find_first_not_of(' ') == std::string::npos ? cell.size() : cell.find_first_not_of(' ')));
        while (!cells.back().empty() && cells.back().back() == ' ') cells.back().pop_back();
        cell.clear();
      } else {
        cell += line[i];
      }
    }
    REQUIRE(cells.size() == 3);
    const std::string& first = cells[0];
    for (size_t at = first.find('`'); at != std::string::npos;) {
      const size_t end = first.find('`', at + 1);
      if (end == std::string::npos) break;
      const std::string name = base_name(first.substr(at + 1, end - at - 1));
      documented.insert(name);
      default_of.emplace(name, cells[2]);
      at = first.find('`', end + 1);
    }
  }
  for (const OptionSpec& s : option_table()) {
    INFO("the default of " << s.name << " in the table and in docs/options.md");
    CHECK(default_of[std::string(s.name)] == s.dflt);
  }
  REQUIRE(documented.size() > 30);
  const std::set<std::string> names = table_names();
  for (const std::string& n : names) {
    INFO("in the table, not in docs/options.md's list: " << n);
    CHECK(documented.count(n) == 1);
  }
  for (const std::string& n : documented) {
    INFO("in docs/options.md's list, not in the table: " << n);
    CHECK(names.count(n) == 1);
  }
  // The environment aliases are documented as such.
  std::ifstream again(std::string(MLPD_SOURCE_DIR) + "/docs/options.md");
  const std::string doc((std::istreambuf_iterator<char>(again)), std::istreambuf_iterator<char>());
  for (const OptionSpec& s : option_table()) {
    if (s.env.empty()) continue;
    INFO(s.env);
    CHECK(doc.find("`" + std::string(s.env)) != std::string::npos);
  }
}

TEST_CASE("option table: the environment aliases equal the options", "[options]") {
  auto same = [](const Options& a, const Options& b) {
    return a.clock == b.clock && a.walker == b.walker && a.eager_metadata == b.eager_metadata &&
           a.zip_pack_above == b.zip_pack_above;
  };
  g_env.clear();
  const Options none = parse("", true);
  CHECK(none.clock == ClockKind::Tsc);
  CHECK(none.walker == WalkerMode::Ours);
  CHECK_FALSE(none.eager_metadata);
  CHECK(none.zip_pack_above == kDefaultZipPackAbove);

  const std::pair<std::map<std::string, std::string>, std::string> cases[] = {
      {{{"MLPD_CLOCK", "monotonic"}}, "clock=monotonic"},
      {{{"MLPD_CLOCK", "tsc"}}, "clock=tsc"},
      {{{"MLPD_CLOCK", "bogus"}}, ""},  // as before: anything but monotonic keeps the cycle counter
      {{{"MLPD_WALKER", "mono"}}, "walker=mono"},
      {{{"MLPD_WALKER", "check"}}, "walker=check"},
      {{{"MLPD_WALKER", "x"}}, "walker=ours"},
      {{{"MLPD_EAGER_METADATA", "1"}}, "eager-metadata"},
      {{{"MLPD_EAGER_METADATA", ""}}, "eager-metadata"},  // any value, even empty
      {{{"MLPD_ZIP_PACK_ABOVE", "0"}}, "zip-pack-above=0"},
      {{{"MLPD_ZIP_PACK_ABOVE", "4096"}}, "zip-pack-above=4096"},
      {{{"MLPD_ZIP_PACK_ABOVE", "4097"}}, ""},  // as before: out of range or malformed is ignored
      {{{"MLPD_ZIP_PACK_ABOVE", "12x"}}, ""},
      {{{"MLPD_ZIP_PACK_ABOVE", ""}}, ""},
  };
  for (const auto& [env, text] : cases) {
    g_env = env;
    INFO(env.begin()->first << "=" << env.begin()->second << " vs '" << text << "'");
    const Options by_env = parse("", true);
    g_env.clear();
    CHECK(same(by_env, parse(text)));
    CHECK(by_env.header_args == "mlpd");  // the variables are not options of the header
  }
  // The option string wins over its variable.
  g_env = {{"MLPD_WALKER", "mono"}, {"MLPD_CLOCK", "monotonic"}};
  const Options o = parse("walker=check,clock=tsc", true);
  CHECK(o.walker == WalkerMode::Check);
  CHECK(o.clock == ClockKind::Tsc);
  g_env.clear();
  // The options themselves are strict.
  Options bad;
  std::string error;
  CHECK_FALSE(parse_options("clock=rdtsc", bad, error));
  CHECK(error == "mlpd: bad value in 'clock=rdtsc': expected clock=tsc or clock=monotonic");
  CHECK_FALSE(parse_options("walker", bad, error));
  CHECK(error == "mlpd: missing value in 'walker': expected walker=ours, walker=mono or walker=check");
  CHECK_FALSE(parse_options("zip-pack-above=4097", bad, error));
  CHECK(error == "mlpd: bad value in 'zip-pack-above=4097': expected a number from 0 to 4096");
  CHECK_FALSE(parse_options("eager-metadata=1", bad, error));
}

TEST_CASE("option table: one event vocabulary for options, command port and LogProfiler", "[options]") {
  uint32_t all = 0;
  for (const mlpd::format::EventBitName& e : mlpd::format::kEventBitNames) {
    INFO(e.option);
    uint32_t mask = 0;
    CHECK(event_name_mask(e.option, false, mask));
    CHECK(mask == e.mask);
    CHECK((e.mask & (e.mask - 1)) == 0);  // one bit each
    CHECK((all & e.mask) == 0);           // each bit once
    CHECK(!e.log_profiler.empty());
    all |= e.mask;
    CHECK(event_mask_names(e.mask) == e.option);
    CHECK(parse("nodefaults," + std::string(e.option)).effective_mask == e.mask);
  }
  CHECK(all == ((mlpd::format::MASK_JIT << 1) - 1 - mlpd::format::MASK_SAMPLE));
}

TEST_CASE("option syntax: the reader's view of an agent string is the agent's", "[options]") {
  using namespace mlpd::option_syntax;
  std::string_view text;
  CHECK(agent_args("mlpd", text));
  CHECK(text.empty());
  CHECK(agent_args("mlpd:calls,zip", text));
  CHECK(text == "calls,zip");
  CHECK_FALSE(agent_args("log:calls", text));
  CHECK_FALSE(agent_args("mlpdx", text));
  // Quoted and escaped items read as the agent reads them.
  const std::string s = "calls,'alloc-sample=512k',output=a\\,b,,start-paused";
  std::vector<std::string> items;
  const SplitResult r = split_items(s, [&](const Item& it, bool first) {
    items.push_back(std::string(it.name) + (it.has_value ? "=" + std::string(it.value) : "") + (first ? "!" : ""));
    return true;
  });
  CHECK(r.error == SplitError::Ok);
  CHECK(items == std::vector<std::string>{"calls!", "alloc-sample=512k", "output=a,b", "start-paused"});
  const Options o = parse(s);
  CHECK(o.alloc_sample == 512 * 1024);
  CHECK(o.output_target == "a,b");
  uint64_t n = 0;
  CHECK(parse_scaled_bytes("512k", uint64_t{1} << 40, n) == Num::Ok);
  CHECK(n == o.alloc_sample);
  CHECK(parse_scaled_bytes("0", uint64_t{1} << 40, n) == Num::TooBig);
  CHECK(parse_scaled_bytes("1025g", uint64_t{1} << 40, n) == Num::TooBig);
  CHECK(parse_scaled_bytes("k", uint64_t{1} << 40, n) == Num::NotANumber);
  CHECK(split_items("a,'b", [](const Item&, bool) { return true; }).error == SplitError::UnterminatedQuote);
  CHECK(split_items("a\\", [](const Item&, bool) { return true; }).error == SplitError::TrailingBackslash);
}
