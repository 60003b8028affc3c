// agent::parse_options and friends: every option, the Mono-compatible masks (FORMAT-NOTES 1.3), the
// places where we refuse what Mono 6.8 silently misreads, and robustness against arbitrary input.
#include "mlpd_catch.h"

#include <csignal>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "mlpd/agent/options.h"
#include "mlpd/format.h"

using namespace mlpd::agent;
using namespace mlpd::format;

namespace {

Options parse_ok(std::string_view text) {
  Options o;
  std::string error;
  const bool ok = parse_options(text, o, error);
  INFO("options: " << text << "  error: " << error);
  REQUIRE(ok);
  REQUIRE(error.empty());
  return o;
}

std::string parse_err(std::string_view text) {
  Options o;
  std::string error;
  const bool ok = parse_options(text, o, error);
  INFO("options: " << text);
  REQUIRE_FALSE(ok);
  REQUIRE(error.rfind("mlpd: ", 0) == 0);
  REQUIRE(error.find('\n') == std::string::npos);
  return error;
}

uint32_t mask(std::string_view text) { return parse_ok(text).effective_mask; }

constexpr uint32_t kDefaults = MASK_EXCEPTION | MASK_COUNTER;

}  // namespace

TEST_CASE("options: defaults of an empty string are the compat defaults", "[options]") {
  const Options o = parse_ok("");
  CHECK(o.compat);
  CHECK(o.enable_mask == kDefaults);
  CHECK(o.disable_mask == 0);
  CHECK(o.effective_mask == kDefaults);  // Mono 6.8 enables nothing here; we apply the defaults
  CHECK_FALSE(o.calls);
  CHECK(o.calldepth == 100);
  CHECK(o.callspec.empty());
  CHECK(o.maxframes == 32);
  CHECK_FALSE(o.maxsamples.has_value());
  CHECK(o.sample_mode == SampleMode::None);
  CHECK(o.sample_freq == 100);
  CHECK(o.heapshot_mode == HEAPSHOT_NONE);
  CHECK_FALSE(o.heapshot_on_shutdown);
  CHECK(o.output.empty());
  CHECK(o.output_kind == OutputKind::Default);
  CHECK_FALSE(o.zip);
  CHECK_FALSE(o.report);
  CHECK_FALSE(o.port.has_value());
  CHECK(o.bind == "127.0.0.1");
  CHECK_FALSE(o.bind_given);
  CHECK(o.flush_ms == 1000);
  CHECK_FALSE(o.verbose);
  CHECK_FALSE(o.debug);
  CHECK_FALSE(o.help);
  CHECK(o.text.empty());
  CHECK(o.header_args == "mlpd");
  CHECK_FALSE(wants_command_server(o));

  // A default-constructed Options is the same as parsing "".
  const Options d;
  CHECK(d.effective_mask == o.effective_mask);
  CHECK(d.enable_mask == o.enable_mask);
  CHECK(d.compat == o.compat);

  // Only empty items: still the defaults.
  CHECK(mask(",,,") == kDefaults);
  CHECK(mask("''") == kDefaults);
}

TEST_CASE("options: the original text and the header args", "[options]") {
  const Options o = parse_ok("calls,output='a,b'");
  CHECK(o.text == "calls,output='a,b'");
  CHECK(o.header_args == "mlpd:calls,output='a,b'");
  CHECK(options_from_profiler_desc("mlpd:calls,zip") == "calls,zip");
  CHECK(options_from_profiler_desc("mlpd") == "");
  CHECK(options_from_profiler_desc("mlpd:") == "");
  CHECK(options_from_profiler_desc("mlpd:output=a:b") == "output=a:b");
}

TEST_CASE("options: MLPD_OPTIONS and --profile=mlpd:OPTS together, one precedence", "[options]") {
  // The non-empty one, silently.
  CHECK(choose_options(std::nullopt, "calls").text == "calls");
  CHECK(choose_options(std::string_view(""), "calls").text == "calls");  // an empty MLPD_OPTIONS once won
  CHECK(choose_options(std::string_view(""), "calls").note.empty());
  CHECK(choose_options(std::string_view("alloc"), "").text == "alloc");  // --profile=mlpd, no options
  CHECK(choose_options(std::string_view("alloc"), "").note.empty());
  CHECK(choose_options(std::nullopt, "").text.empty());
  CHECK(choose_options(std::string_view("calls"), "calls").note.empty());  // the same: nothing to say
  // Both non-empty: --profile's, and one line naming what is ignored.
  const ChosenOptions both = choose_options(std::string_view("calls,output=b"), "alloc,output=a");
  CHECK(both.text == "alloc,output=a");
  CHECK(both.note == "mlpd: using the options of --profile=mlpd:alloc,output=a; MLPD_OPTIONS='calls,output=b' is ignored");
  CHECK(choose_options(std::string_view("a\nb"), "x").note.find('\n') == std::string::npos);
}

TEST_CASE("options: parsing resets the struct", "[options]") {
  Options o;
  std::string error;
  REQUIRE(parse_options("calls,zip,port=5,nogc,sample", o, error));
  REQUIRE(parse_options("", o, error));
  CHECK_FALSE(o.calls);
  CHECK_FALSE(o.zip);
  CHECK_FALSE(o.port.has_value());
  CHECK(o.disable_mask == 0);
  CHECK(o.sample_mode == SampleMode::None);
  CHECK(o.effective_mask == kDefaults);
}

TEST_CASE("options: every event name", "[options]") {
  struct Case {
    const char* name;
    uint32_t bit;
  };
  const Case cases[] = {
      {"exception", MASK_EXCEPTION},   {"monitor", MASK_MONITOR},     {"gc", MASK_GC},
      {"gcalloc", MASK_GC_ALLOC},      {"gcmove", MASK_GC_MOVE},      {"gcroot", MASK_GC_ROOT},
      {"gchandle", MASK_GC_HANDLE},    {"finalization", MASK_GC_FINALIZATION},
      {"counter", MASK_COUNTER},       {"counters", MASK_COUNTER},    {"jit", MASK_JIT},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    const std::string name = c.name;
    CHECK(mask("nodefaults," + name) == c.bit);
    CHECK(mask(name) == (kDefaults | c.bit));
    CHECK(mask("nodefaults," + name + ",no" + name) == 0);
    CHECK(mask("nodefaults,no" + name + "," + name) == 0);  // `no` wins regardless of order
    CHECK(parse_ok("no" + name).disable_mask == c.bit);
  }
  // Bit values of FORMAT-NOTES 1.3.
  CHECK(mask("nodefaults,exception") == 0x001);
  CHECK(mask("nodefaults,jit") == 0x400);
  CHECK(mask("nodefaults,counters") == 0x100);
}

TEST_CASE("options: aliases alloc and legacy", "[options]") {
  CHECK(mask("nodefaults,alloc") == 0x1C);
  CHECK(mask("nodefaults,alloc") == (MASK_GC | MASK_GC_ALLOC | MASK_GC_MOVE));
  CHECK(parse_ok("alloc").enable_mask == (0x3C | kDefaults));  // compat alloc adds gcroot
  CHECK(mask("nodefaults,legacy") == 0x1F7);
  CHECK(mask("legacy") == 0x1F7);  // includes exception|counter
  CHECK(mask("nodefaults,legacy,nolegacy") == 0);
  // noalloc in compat mode disables gcroot too (Mono's compat mask applies to both forms).
  CHECK(parse_ok("noalloc").disable_mask == 0x3C);
  CHECK(parse_ok("nodefaults,noalloc").disable_mask == 0x1C);
  CHECK(mask("alloc,nogcroot") == (kDefaults | 0x1C));
  CHECK(mask("noexception") == MASK_COUNTER);
  CHECK(mask("nocounter,noexception") == 0);
  CHECK(mask("nocounters") == MASK_EXCEPTION);
  CHECK(mask("legacy,nogc,nogcmove,nogcroot") == (MASK_EXCEPTION | MASK_MONITOR | MASK_GC_HANDLE |
                                                  MASK_GC_FINALIZATION | MASK_COUNTER));
}

TEST_CASE("options: nodefaults only as the first item", "[options]") {
  const Options o = parse_ok("nodefaults");
  CHECK_FALSE(o.compat);
  CHECK(o.effective_mask == 0);
  CHECK_FALSE(parse_ok(",,nodefaults,gc").compat);  // empty items do not count
  CHECK(mask("\"nodefaults\",gc") == MASK_GC);     // quoted still counts
  CHECK(parse_err("gc,nodefaults") == "mlpd: 'nodefaults' is only allowed as the first option");
  CHECK(parse_err("nodefaults,nodefaults") == "mlpd: 'nodefaults' is only allowed as the first option");
  CHECK(parse_err("nodefaults=1") == "mlpd: bad value in 'nodefaults=1': 'nodefaults' takes no value");
}

TEST_CASE("options: compat-only spellings", "[options]") {
  Options o = parse_ok("sampling-real=250");
  CHECK(o.sample_mode == SampleMode::Real);
  CHECK(o.sample_freq == 250);
  CHECK(parse_err("nodefaults,sampling-real") ==
        "mlpd: 'sampling-real' is only accepted without 'nodefaults'; use 'sample-real'");

  o = parse_ok("nocalls");
  CHECK_FALSE(o.calls);
  CHECK(o.effective_mask == kDefaults);
  CHECK_FALSE(parse_ok("calls,nocalls").calls);  // the `no` form wins, as for events
  CHECK_FALSE(parse_ok("nocalls,calls").calls);
  CHECK(parse_err("nodefaults,nocalls") ==
        "mlpd: 'nocalls' is only accepted without 'nodefaults' (calls are off unless 'calls' is given)");
  CHECK(parse_err("nocalls=1") == "mlpd: bad value in 'nocalls=1': 'nocalls' takes no value");
}

TEST_CASE("options: heapshot modes and their masks", "[options]") {
  Options o = parse_ok("heapshot");
  CHECK(o.heapshot_mode == HEAPSHOT_MAJOR);
  CHECK(o.effective_mask == (kDefaults | MASK_GC | MASK_GC_ROOT | MASK_GC_MOVE));  // compat adds gcmove
  o = parse_ok("nodefaults,heapshot");
  CHECK(o.effective_mask == (MASK_GC | MASK_GC_ROOT));

  o = parse_ok("heapshot=ondemand");
  CHECK(o.heapshot_mode == HEAPSHOT_ON_DEMAND);
  CHECK(wants_command_server(o));
  o = parse_ok("heapshot=5gc");
  CHECK(o.heapshot_mode == HEAPSHOT_X_GC);
  CHECK(o.heapshot_gc == 5);
  o = parse_ok("heapshot=1gc");
  CHECK(o.heapshot_gc == 1);
  o = parse_ok("nodefaults,heapshot=250ms");
  CHECK(o.heapshot_mode == HEAPSHOT_X_MS);
  CHECK(o.heapshot_ms == 250);
  CHECK(o.effective_mask == (MASK_GC | MASK_GC_ROOT));
  CHECK(parse_ok("heapshot=0ms").heapshot_ms == 0);
  CHECK(parse_ok("heapshot=2147483647gc").heapshot_gc == 2147483647u);
  // The last mode wins.
  CHECK(parse_ok("heapshot=5gc,heapshot").heapshot_mode == HEAPSHOT_MAJOR);

  o = parse_ok("heapshot-on-shutdown");
  CHECK(o.heapshot_on_shutdown);
  CHECK(o.heapshot_mode == HEAPSHOT_NONE);
  CHECK(o.effective_mask == (kDefaults | MASK_GC | MASK_GC_ROOT));  // no gcmove, even in compat
  CHECK(mask("nodefaults,heapshot-on-shutdown") == (MASK_GC | MASK_GC_ROOT));

  const std::string usage = "expected heapshot, heapshot=NUMgc, heapshot=NUMms or heapshot=ondemand";
  CHECK(parse_err("heapshot=0gc") == "mlpd: bad value in 'heapshot=0gc': expected NUMgc with NUM from 1 to 2147483647");
  CHECK(parse_err("heapshot=2147483648gc") ==
        "mlpd: bad value in 'heapshot=2147483648gc': expected NUMgc with NUM from 1 to 2147483647");
  CHECK(parse_err("heapshot=99999999999999999999999ms") ==
        "mlpd: bad value in 'heapshot=99999999999999999999999ms': expected NUMms with NUM from 0 to 2147483647");
  CHECK(parse_err("heapshot=") == "mlpd: bad value in 'heapshot=': " + usage);
  CHECK(parse_err("heapshot=5") == "mlpd: bad value in 'heapshot=5': " + usage);
  CHECK(parse_err("heapshot=5GC") == "mlpd: bad value in 'heapshot=5GC': " + usage);
  CHECK(parse_err("heapshot=gc") == "mlpd: bad value in 'heapshot=gc': " + usage);
  CHECK(parse_err("heapshot=5gcx") == "mlpd: bad value in 'heapshot=5gcx': " + usage);
  CHECK(parse_err("heapshot=-5gc") == "mlpd: bad value in 'heapshot=-5gc': " + usage);
  CHECK(parse_err("heapshot=on-demand") == "mlpd: bad value in 'heapshot=on-demand': " + usage);
  CHECK(parse_err("heapshot-on-shutdown=1") ==
        "mlpd: bad value in 'heapshot-on-shutdown=1': 'heapshot-on-shutdown' takes no value");
}

TEST_CASE("options: sampling", "[options]") {
  Options o = parse_ok("sample");
  CHECK(o.sample_mode == SampleMode::Process);
  CHECK(o.sample_freq == 100);
  CHECK(o.effective_mask == (kDefaults | MASK_SAMPLE));
  o = parse_ok("nodefaults,sample=1000");
  CHECK(o.sample_freq == 1000);
  CHECK(o.effective_mask == MASK_SAMPLE);
  o = parse_ok("sample-real=50");
  CHECK(o.sample_mode == SampleMode::Real);
  CHECK(o.sample_freq == 50);
  CHECK(parse_ok("sample-real").sample_freq == 100);
  CHECK(parse_ok("sample=cycles/1000").sample_freq == 1000);  // pre-5.6 TYPE/FREQ form
  CHECK(parse_ok("sample=instr/7").sample_freq == 7);
  CHECK(parse_ok("sample=1000000").sample_freq == 1000000);
  CHECK(parse_ok("sample=1").sample_freq == 1);
  // Last mode wins; a bare `sample` keeps an earlier frequency (as Mono).
  o = parse_ok("sample-real=300,sample");
  CHECK(o.sample_mode == SampleMode::Process);
  CHECK(o.sample_freq == 300);

  const std::string what = "expected a frequency in Hz (e.g. sample=1000 or sample=cycles/1000)";
  CHECK(parse_err("sample=abc") == "mlpd: bad value in 'sample=abc': " + what);  // Mono keeps 100 Hz
  CHECK(parse_err("sample=") == "mlpd: bad value in 'sample=': " + what);
  CHECK(parse_err("sample=cycles/") == "mlpd: bad value in 'sample=cycles/': " + what);
  CHECK(parse_err("sample=/100") == "mlpd: bad value in 'sample=/100': " + what);
  CHECK(parse_err("sample=cy1/100") == "mlpd: bad value in 'sample=cy1/100': " + what);
  CHECK(parse_err("sample=10x") == "mlpd: bad value in 'sample=10x': " + what);
  CHECK(parse_err("sample=-10") == "mlpd: bad value in 'sample=-10': " + what);
  CHECK(parse_err("sample-real=abc") == "mlpd: bad value in 'sample-real=abc': " + what);
  CHECK(parse_err("sample=0") == "mlpd: bad value in 'sample=0': expected a frequency from 1 to 1000000 Hz");
  CHECK(parse_err("sample=1000001") ==
        "mlpd: bad value in 'sample=1000001': expected a frequency from 1 to 1000000 Hz");
  CHECK(parse_err("sample=cycles/0") ==
        "mlpd: bad value in 'sample=cycles/0': expected a frequency from 1 to 1000000 Hz");
}

TEST_CASE("options: calls, calldepth, callspec", "[options]") {
  Options o = parse_ok("calls");
  CHECK(o.calls);
  CHECK(o.effective_mask == kDefaults);  // calls has no mask bit
  CHECK(parse_ok("calldepth=7").calldepth == 7);
  CHECK(parse_ok("calldepth=0").calldepth == 0);
  CHECK(parse_ok("calldepth=2147483647").calldepth == 2147483647u);

  o = parse_ok("calls,callspec=N:System");
  CHECK(o.callspec == "N:System");
  CHECK(parse_ok("callspec=M:Foo:Bar,calls").callspec == "M:Foo:Bar");
  CHECK(parse_ok("calls,callspec=\\\"T:Foo\\\"").callspec == "T:Foo");  // escaped quotes stripped, as Mono
  CHECK(parse_ok("calls,callspec='\"all,-N:System\"'").callspec == "all,-N:System");

  CHECK(parse_err("calldepth=x") == "mlpd: bad value in 'calldepth=x': expected a number");
  CHECK(parse_err("calldepth=") == "mlpd: bad value in 'calldepth=': expected a number");
  CHECK(parse_err("calldepth=-1") == "mlpd: bad value in 'calldepth=-1': expected a number");
  CHECK(parse_err("calldepth= 5") == "mlpd: bad value in 'calldepth= 5': expected a number");
  CHECK(parse_err("calldepth=0x10") == "mlpd: bad value in 'calldepth=0x10': expected a number");
  CHECK(parse_err("calldepth=2147483648") ==
        "mlpd: bad value in 'calldepth=2147483648': expected a number from 0 to 2147483647");
  CHECK(parse_err("calldepth") == "mlpd: missing value in 'calldepth': expected calldepth=NUM");
  CHECK(parse_err("calls=1") == "mlpd: bad value in 'calls=1': 'calls' takes no value");
  CHECK(parse_err("callspec") == "mlpd: missing value in 'callspec': expected callspec=SPEC");
  CHECK(parse_err("calls,callspec=") ==
        "mlpd: bad value in 'callspec=': expected callspec=SPEC with a non-empty SPEC");
  CHECK(parse_err("calls,callspec=\\\"\\\"") ==
        "mlpd: bad value in 'callspec=\"\"': expected callspec=SPEC with a non-empty SPEC");
  CHECK(parse_err("callspec=N:System") == "mlpd: 'callspec=N:System' has no effect without 'calls'");
}

TEST_CASE("options: maxframes and maxsamples", "[options]") {
  CHECK(parse_ok("maxframes=8").maxframes == 8);
  CHECK(parse_ok("maxframes=0").maxframes == 0);
  CHECK(parse_ok("maxframes=32").maxframes == 32);
  CHECK(parse_ok("maxframes=33").maxframes == 32);
  CHECK(parse_ok("maxframes=4294967296").maxframes == 32);
  CHECK(parse_ok("maxframes=999999999999999999999999999").maxframes == 32);
  CHECK(parse_err("maxframes=x") == "mlpd: bad value in 'maxframes=x': expected a number");
  CHECK(parse_err("maxframes=") == "mlpd: bad value in 'maxframes=': expected a number");
  CHECK(parse_err("maxframes") == "mlpd: missing value in 'maxframes': expected maxframes=NUM");

  Options o = parse_ok("");
  CHECK(max_sample_hits(o, 4) == 4000);
  CHECK(max_sample_hits(o, 0) == 1000);
  o = parse_ok("maxsamples=10");
  REQUIRE(o.maxsamples.has_value());
  CHECK(*o.maxsamples == 10);
  CHECK(max_sample_hits(o, 4) == 10);
  o = parse_ok("maxsamples=0");  // Mono 6.8 keeps its default here; its man page (and we) say unlimited
  REQUIRE(o.maxsamples.has_value());
  CHECK(*o.maxsamples == 0);
  CHECK(max_sample_hits(o, 4) == kNoSampleLimit);
  CHECK(parse_err("maxsamples=-1") == "mlpd: bad value in 'maxsamples=-1': expected a number");
  CHECK(parse_err("maxsamples=3000000000") ==
        "mlpd: bad value in 'maxsamples=3000000000': expected a number from 0 to 2147483647");
  CHECK(parse_err("maxsamples") == "mlpd: missing value in 'maxsamples': expected maxsamples=NUM");
}

TEST_CASE("options: output kinds", "[options]") {
  Options o = parse_ok("output=prof.mlpd");
  CHECK(o.output == "prof.mlpd");
  CHECK(o.output_kind == OutputKind::File);
  CHECK(o.output_target == "prof.mlpd");
  o = parse_ok("output=+prof.mlpd");
  CHECK(o.output == "+prof.mlpd");
  CHECK(o.output_kind == OutputKind::FileAppendPid);
  CHECK(o.output_target == "prof.mlpd");
  o = parse_ok("output=|gzip -c > x.gz");
  CHECK(o.output_kind == OutputKind::Pipe);
  CHECK(o.output_target == "gzip -c > x.gz");
  o = parse_ok("output=#3");
  CHECK(o.output_kind == OutputKind::Fd);
  CHECK(o.output_fd == 3);
  o = parse_ok("output=-");  // a file named "-", as Mono
  CHECK(o.output_kind == OutputKind::File);
  CHECK(o.output_target == "-");
  o = parse_ok("output=a=b");  // only the first '=' separates
  CHECK(o.output_target == "a=b");
  CHECK(parse_ok("output=a,output=b").output_target == "b");  // last wins

  CHECK(parse_err("output") ==
        "mlpd: missing value in 'output': expected output=FILE, output=+FILE, output=|COMMAND or output=#FD");
  CHECK(parse_err("output=") == "mlpd: bad value in 'output=': expected a file name");
  CHECK(parse_err("output=+") == "mlpd: bad value in 'output=+': expected output=+FILE with a non-empty FILE");
  CHECK(parse_err("output=|") ==
        "mlpd: bad value in 'output=|': expected output=|COMMAND with a non-empty COMMAND");
  CHECK(parse_err("output=#") == "mlpd: bad value in 'output=#': expected output=#FD with FD a file descriptor number");
  CHECK(parse_err("output=#x") == "mlpd: bad value in 'output=#x': expected output=#FD with FD a file descriptor number");
  CHECK(parse_err("output=#-1") ==
        "mlpd: bad value in 'output=#-1': expected output=#FD with FD a file descriptor number");
  CHECK(parse_err("output=#99999999999") ==
        "mlpd: bad value in 'output=#99999999999': expected output=#FD with FD a file descriptor number");
}

TEST_CASE("options: output name expansion", "[options]") {
  const std::time_t t = 1700000000;  // 2023-11-14 22:13:20 UTC
  CHECK(expand_output_name("p%p.mlpd", 4242, t) == "p4242.mlpd");
  CHECK(expand_output_name("%t", 1, t) == "20231114221320");
  CHECK(expand_output_name("%t", 1, 0) == "19700101000000");
  CHECK(expand_output_name("pid_%p_time_%t_pct_%%_x%q.mlpd", 9573, t) ==
        "pid_9573_time_20231114221320_pct_%_x%q.mlpd");
  CHECK(expand_output_name("100%%", 1, t) == "100%");  // always, even without %p/%t (Mono: only with)
  CHECK(expand_output_name("a%", 1, t) == "a%");
  CHECK(expand_output_name("%p%p", 12, t) == "1212");
  CHECK(expand_output_name("%%p", 12, t) == "%p");
  CHECK(expand_output_name("", 12, t) == "");
  CHECK(default_output_name(77) == "output.77.mlpd");
  CHECK(default_output_name(77, true) == "output.77.mlpd.gz");  // zip: the name says gzip

  Options o = parse_ok("");
  ResolvedOutput r = resolve_output(o, 77, t);
  CHECK(r.kind == ResolvedOutput::Kind::File);
  CHECK(r.target == "output.77.mlpd");
  CHECK(resolve_output(parse_ok("zip"), 77, t).target == "output.77.mlpd.gz");
  CHECK(resolve_output(parse_ok("zip,output=x.mlpd"), 77, t).target == "x.mlpd");  // a name given is kept

  r = resolve_output(parse_ok("output=run-%p-%t.mlpd"), 5, t);
  CHECK(r.kind == ResolvedOutput::Kind::File);
  CHECK(r.target == "run-5-20231114221320.mlpd");

  r = resolve_output(parse_ok("output=+prof.mlpd"), 9611, t);
  CHECK(r.kind == ResolvedOutput::Kind::File);
  CHECK(r.target == "prof.mlpd.9611");
  r = resolve_output(parse_ok("output=+%p.mlpd"), 9611, t);  // FORMAT-NOTES: +%p.mlpd -> 9611.mlpd.9611
  CHECK(r.target == "9611.mlpd.9611");

  r = resolve_output(parse_ok("output=|cat > %p.mlpd"), 8, t);
  CHECK(r.kind == ResolvedOutput::Kind::Pipe);
  CHECK(r.target == "cat > 8.mlpd");

  r = resolve_output(parse_ok("output=#5"), 8, t);
  CHECK(r.kind == ResolvedOutput::Kind::Fd);
  CHECK(r.fd == 5);
}

TEST_CASE("options: report and zip", "[options]") {
  const std::time_t t = 1700000000;
  Options o = parse_ok("report");
  CHECK(o.report);
  ResolvedOutput r = resolve_output(o, 3, t);
  CHECK(r.kind == ResolvedOutput::Kind::Pipe);
  CHECK(r.target == "mprof-report -");
  r = resolve_output(parse_ok("report,output=rep-%p.txt"), 3, t);
  CHECK(r.kind == ResolvedOutput::Kind::Pipe);
  CHECK(r.target == "mprof-report '--out=rep-3.txt' -");
  r = resolve_output(parse_ok("report,output=it\\'s.txt"), 3, t);
  CHECK(r.target == "mprof-report '--out=it'\\''s.txt' -");
  r = resolve_output(parse_ok("report,output=+rep"), 3, t);
  CHECK(r.target == "mprof-report '--out=rep.3' -");

  CHECK(parse_ok("zip").zip);
  CHECK(parse_ok("zip,output=|cat").zip);
  CHECK(parse_err("report,zip") ==
        "mlpd: 'report' cannot be combined with 'zip' (mprof-report cannot read compressed data from a pipe)");
  CHECK(parse_err("report,output=|cat") ==
        "mlpd: 'report' cannot be combined with 'output=|cat' (report pipes the data into mprof-report)");
  CHECK(parse_err("output=#4,report") ==
        "mlpd: 'report' cannot be combined with 'output=#4' (report pipes the data into mprof-report)");
  CHECK(parse_err("report=1") == "mlpd: bad value in 'report=1': 'report' takes no value");
  CHECK(parse_err("zip=1") == "mlpd: bad value in 'zip=1': 'zip' takes no value");
}

TEST_CASE("options: metrics=PORT", "[options][metrics]") {
  CHECK_FALSE(parse_ok("").metrics_port.has_value());
  Options o = parse_ok("metrics=9464");
  REQUIRE(o.metrics_port.has_value());
  CHECK(*o.metrics_port == 9464);
  CHECK_FALSE(wants_command_server(o));  // the metrics endpoint is not the command port
  CHECK(*parse_ok("metrics=0").metrics_port == 0);
  CHECK(parse_err("metrics=abc") == "mlpd: bad value in 'metrics=abc': expected a number");
  CHECK(parse_err("metrics=65536") == "mlpd: bad value in 'metrics=65536': expected a number from 0 to 65535");
  CHECK(parse_err("metrics") == "mlpd: missing value in 'metrics': expected metrics=PORT");
  // bind= says where both listen; alone with metrics= it does not open the command port, port= does.
  o = parse_ok("metrics=0,bind=0.0.0.0");
  CHECK(o.bind == "0.0.0.0");
  CHECK_FALSE(wants_command_server(o));
  CHECK(wants_command_server(parse_ok("metrics=0,bind=0.0.0.0,port=0")));
  CHECK(wants_command_server(parse_ok("bind=0.0.0.0")));
}

TEST_CASE("options: command port, bind, flush", "[options]") {
  Options o = parse_ok("port=0");
  REQUIRE(o.port.has_value());
  CHECK(*o.port == 0);
  CHECK(wants_command_server(o));
  CHECK(*parse_ok("port=65535").port == 65535);
  CHECK(*parse_ok("port=8888").port == 8888);
  CHECK(parse_err("port=65536") == "mlpd: bad value in 'port=65536': expected a number from 0 to 65535");
  CHECK(parse_err("port=http") == "mlpd: bad value in 'port=http': expected a number");
  CHECK(parse_err("port") == "mlpd: missing value in 'port': expected port=PORT");

  o = parse_ok("bind=0.0.0.0");
  CHECK(o.bind == "0.0.0.0");
  CHECK(o.bind_given);
  CHECK(wants_command_server(o));
  CHECK(parse_ok("bind=::1").bind == "::1");
  CHECK(parse_ok("bind='fe80::1'").bind == "fe80::1");
  const std::string why = "expected a numeric IPv4 or IPv6 address (e.g. 127.0.0.1, 0.0.0.0, ::1)";
  CHECK(parse_err("bind=localhost") == "mlpd: bad value in 'bind=localhost': " + why);
  CHECK(parse_err("bind=") == "mlpd: bad value in 'bind=': " + why);
  CHECK(parse_err("bind=1.2.3") == "mlpd: bad value in 'bind=1.2.3': " + why);
  CHECK(parse_err("bind=256.1.1.1") == "mlpd: bad value in 'bind=256.1.1.1': " + why);
  CHECK(parse_err("bind=" + std::string(100, '1')).find("expected a numeric IPv4") != std::string::npos);
  CHECK(parse_err("bind") == "mlpd: missing value in 'bind': expected bind=ADDRESS");

  CHECK(parse_ok("flush=250").flush_ms == 250);
  CHECK(parse_ok("flush=10").flush_ms == 10);
  CHECK(parse_ok("flush=3600000").flush_ms == 3600000);
  CHECK(parse_err("flush=9") == "mlpd: bad value in 'flush=9': expected a number from 10 to 3600000");
  CHECK(parse_err("flush=0") == "mlpd: bad value in 'flush=0': expected a number from 10 to 3600000");
  CHECK(parse_err("flush=1s") == "mlpd: bad value in 'flush=1s': expected a number");
  CHECK(parse_err("flush") == "mlpd: missing value in 'flush': expected flush=MILLISECONDS");
}

TEST_CASE("options: help, debug, verbose, coverage", "[options]") {
  CHECK(parse_ok("help").help);
  CHECK(parse_ok("nodefaults,help").help);
  CHECK(parse_ok("debug").debug);
  CHECK(parse_ok("debug").effective_mask == kDefaults);  // no effect
  CHECK(parse_ok("verbose").verbose);
  CHECK(parse_err("help=me") == "mlpd: bad value in 'help=me': 'help' takes no value");
  CHECK(parse_err("verbose=2") == "mlpd: bad value in 'verbose=2': 'verbose' takes no value");
  CHECK(parse_err("debug=1") == "mlpd: bad value in 'debug=1': 'debug' takes no value");
  CHECK(parse_err("coverage") ==
        "mlpd: option 'coverage': the log profiler no longer supports code coverage; use Mono's coverage "
        "profiler (--profile=coverage)");
}

TEST_CASE("options: unknown items and exact matching", "[options]") {
  CHECK(parse_err("foo") == "mlpd: unknown option 'foo' (see MLPD_OPTIONS=help)");
  CHECK(parse_err("calls,foo=1") == "mlpd: unknown option 'foo=1' (see MLPD_OPTIONS=help)");
  // Mono's match_option accepts one extra char before '=' (samplex=5 is sample=5); we do not.
  CHECK(parse_err("samplex=5") == "mlpd: unknown option 'samplex=5' (see MLPD_OPTIONS=help)");
  CHECK(parse_err("calldepthx=5") == "mlpd: unknown option 'calldepthx=5' (see MLPD_OPTIONS=help)");
  CHECK(parse_err("outputs=x") == "mlpd: unknown option 'outputs=x' (see MLPD_OPTIONS=help)");
  CHECK(parse_err("Calls") == "mlpd: unknown option 'Calls' (see MLPD_OPTIONS=help)");
  CHECK(parse_err(" calls") == "mlpd: unknown option ' calls' (see MLPD_OPTIONS=help)");
  CHECK(parse_err("no") == "mlpd: unknown option 'no' (see MLPD_OPTIONS=help)");
  CHECK(parse_err("nosample") == "mlpd: unknown option 'nosample' (see MLPD_OPTIONS=help)");
  CHECK(parse_err("nonodefaults") == "mlpd: unknown option 'nonodefaults' (see MLPD_OPTIONS=help)");
  CHECK(parse_err("noheapshot") == "mlpd: unknown option 'noheapshot' (see MLPD_OPTIONS=help)");
  CHECK(parse_err("gcs") == "mlpd: unknown option 'gcs' (see MLPD_OPTIONS=help)");
  CHECK(parse_err("=") == "mlpd: unknown option '=' (see MLPD_OPTIONS=help)");
  CHECK(parse_err("alloc=1") == "mlpd: bad value in 'alloc=1': 'alloc' takes no value");
  CHECK(parse_err("noalloc=") == "mlpd: bad value in 'noalloc=': 'noalloc' takes no value");
  // The first bad item is reported; nothing after it is looked at.
  CHECK(parse_err("foo,bar") == "mlpd: unknown option 'foo' (see MLPD_OPTIONS=help)");
  // Control bytes are shown escaped, long items cut, so the message stays one line.
  CHECK(parse_err("a\nb") == "mlpd: unknown option 'a\\x0Ab' (see MLPD_OPTIONS=help)");
  const std::string longer = parse_err(std::string(1000, 'z'));
  CHECK(longer.size() < 260);
  CHECK(longer.find("...") != std::string::npos);
}

TEST_CASE("options: quoting and escaping", "[options]") {
  CHECK(parse_ok("output='a,b.mlpd'").output == "a,b.mlpd");
  CHECK(parse_ok("output=\"a,b.mlpd\"").output == "a,b.mlpd");
  CHECK(parse_ok("output=\"it's\"").output == "it's");      // the other quote char is literal
  CHECK(parse_ok("output='say \"hi\"'").output == "say \"hi\"");
  CHECK(parse_ok("output=a\\,b").output == "a,b");          // backslash escapes the comma
  CHECK(parse_ok("output=a\\\\b").output == "a\\b");        // and itself
  CHECK(parse_ok("output='a\\'b'").output == "a'b");        // also inside quotes
  CHECK(parse_ok("output=x'y'z").output == "xyz");          // quotes anywhere in an item
  CHECK(parse_ok("'output=a,b',calls").calls);
  CHECK(parse_ok("\"calls\"").calls);
  CHECK(parse_ok("ca''lls").calls);
  CHECK(parse_ok("output=|gzip -c > 'x,y.gz'").output_target == "gzip -c > x,y.gz");
  // Escaped quotes are literal, so the comma between them splits the item.
  CHECK(parse_err("output=|gzip -c > \\'x,y.gz\\'") == "mlpd: unknown option 'y.gz'' (see MLPD_OPTIONS=help)");
  Options o = parse_ok("calls,,zip,");
  CHECK(o.calls);
  CHECK(o.zip);

  CHECK(parse_err("output='abc") == "mlpd: unterminated quote (') in 'output=abc'");
  CHECK(parse_err("calls,output=\"a,b") == "mlpd: unterminated quote (\") in 'output=a,b'");
  CHECK(parse_err("output=abc\\") == "mlpd: trailing backslash in 'output=abc\\'");
  CHECK(parse_err(std::string_view("calls\0zip", 9)) == "mlpd: NUL character in the option string after 'calls'");
  CHECK(parse_err(std::string_view("a\\\0", 3)) == "mlpd: NUL character in the option string after 'a'");
}

TEST_CASE("options: a realistic mix", "[options]") {
  const Options o = parse_ok("nodefaults,alloc,gcroot,calls,calldepth=20,maxframes=16,sample-real=500,"
                             "heapshot=10gc,output=+/tmp/app-%t.mlpd,zip,port=0,flush=200,verbose");
  CHECK_FALSE(o.compat);
  CHECK(o.effective_mask == (0x1C | MASK_GC_ROOT | MASK_SAMPLE));
  CHECK(o.calls);
  CHECK(o.calldepth == 20);
  CHECK(o.maxframes == 16);
  CHECK(o.sample_mode == SampleMode::Real);
  CHECK(o.sample_freq == 500);
  CHECK(o.heapshot_mode == HEAPSHOT_X_GC);
  CHECK(o.heapshot_gc == 10);
  CHECK(o.output_kind == OutputKind::FileAppendPid);
  CHECK(o.zip);
  CHECK(*o.port == 0);
  CHECK(o.flush_ms == 200);
  CHECK(o.verbose);
  CHECK(resolve_output(o, 42, 1700000000).target == "/tmp/app-20231114221320.mlpd.42");
}

TEST_CASE("options: help text lists every documented option", "[options]") {
  const std::string_view h = help_text();
  REQUIRE(!h.empty());
  CHECK(h.back() == '\n');
  for (const char* word : {"MLPD_OPTIONS", "--profile=mlpd", "help", "nodefaults", "[no]EVENT", "exception",
                           "monitor", "gcalloc", "gcmove", "gcroot", "gchandle", "finalization", "counter",
                           "jit", "[no]alloc", "[no]legacy", "sample[-real][=FREQ]", "maxsamples=", "heapshot[=MODE]",
                           "ondemand", "heapshot-on-shutdown", "calls", "calldepth=", "callspec=", "maxframes=",
                           "output=FILENAME", "output=+FILENAME", "output=|PROGRAM", "output=#FD", "%t", "%p",
                           "zip", "report", "port=", "bind=", "flush=", "verbose", "alloc-sample=", "start-paused"}) {
    INFO(word);
    CHECK(h.find(word) != std::string_view::npos);
  }
}

TEST_CASE("options: arbitrary input never crashes and errors are one line", "[options]") {
  std::mt19937_64 rng(0x6D6C7064);
  const std::vector<std::string> pieces = {
      "nodefaults", "calls", "nocalls", "alloc", "noalloc", "legacy", "gc", "no", "sample", "sample-real",
      "sampling-real", "heapshot", "heapshot-on-shutdown", "output", "port", "bind", "flush", "maxframes",
      "maxsamples", "calldepth", "callspec", "report", "zip", "help", "debug", "coverage", "verbose", "=",
      ",", "'", "\"", "\\", "%p", "%t", "%%", "%", "+", "|", "#", "0", "1", "99999999999999999999", "gc", "ms",
      "ondemand", "cycles/", "::1", "127.0.0.1", " ", "\n", std::string(1, '\0'), "\xff", "-",
      "alloc-sample", "start-paused", "k", "g"};
  int accepted = 0;
  for (int round = 0; round < 20000; ++round) {
    std::string s;
    const int n = static_cast<int>(rng() % 12);
    for (int i = 0; i < n; ++i) {
      if (rng() % 4 == 0)
        s += static_cast<char>(rng() & 0xFF);  // any byte, NUL included
      else
        s += pieces[rng() % pieces.size()];
    }
    Options o;
    std::string error;
    const bool ok = parse_options(s, o, error);
    if (ok) {
      ++accepted;
      REQUIRE(error.empty());
      REQUIRE(o.effective_mask == (o.enable_mask & ~o.disable_mask));
      REQUIRE(o.maxframes <= kMaxFrames);
      REQUIRE(o.sample_freq >= 1);
      (void)resolve_output(o, 1234, 1700000000);
    } else {
      REQUIRE(error.rfind("mlpd: ", 0) == 0);
      REQUIRE(error.find('\n') == std::string::npos);
      REQUIRE(error.find('\0') == std::string::npos);
    }
    (void)expand_output_name(s, 1, 0);
  }
  CHECK(accepted > 0);  // the generator does hit valid strings too
}

TEST_CASE("options: alloc-sample and start-paused", "[options]") {
  CHECK(parse_ok("").alloc_sample == 0);
  CHECK(!parse_ok("").start_paused);
  Options o = parse_ok("nodefaults,alloc-sample=512k");
  CHECK(o.alloc_sample == 512 * 1024);
  CHECK(o.effective_mask == MASK_GC_ALLOC);  // gcalloc only: no gc, no gcmove
  CHECK(parse_ok("alloc-sample=4096").alloc_sample == 4096);
  CHECK(parse_ok("alloc-sample=3M").alloc_sample == 3u << 20);
  CHECK(parse_ok("alloc-sample=1g").alloc_sample == 1u << 30);
  CHECK(parse_ok("alloc-sample=1024g").alloc_sample == uint64_t{1} << 40);
  CHECK(parse_err("alloc-sample=1025g") == "mlpd: bad value in 'alloc-sample=1025g': expected from 1 byte to 1024g");
  CHECK(parse_err("alloc-sample=0") == "mlpd: bad value in 'alloc-sample=0': expected from 1 byte to 1024g");
  CHECK(parse_err("alloc-sample=k") ==
        "mlpd: bad value in 'alloc-sample=k': expected alloc-sample=BYTES (e.g. 512k; suffixes k, m, g)");
  CHECK(parse_err("alloc-sample=5x") ==
        "mlpd: bad value in 'alloc-sample=5x': expected alloc-sample=BYTES (e.g. 512k; suffixes k, m, g)");
  CHECK(parse_err("alloc-sample") ==
        "mlpd: missing value in 'alloc-sample': expected alloc-sample=BYTES (e.g. 512k; suffixes k, m, g)");
  CHECK(parse_ok("start-paused").start_paused);
  CHECK(wants_command_server(parse_ok("start-paused")));  // `resume` comes through the port
  CHECK(parse_err("start-paused=1") == "mlpd: bad value in 'start-paused=1': 'start-paused' takes no value");
}

TEST_CASE("options: dumpsignal takes USR1, USR2 or HUP only", "[options]") {
  CHECK(parse_ok("").dump_signal == 0);
  const Options a = parse_ok("ring=4m,dumpsignal=USR2");
  CHECK(a.dump_signal == SIGUSR2);
  CHECK(a.dump_signal_name == "SIGUSR2");
  CHECK(parse_ok("dumpsignal=sigusr1").dump_signal == SIGUSR1);  // file mode: a flush round
  CHECK(parse_ok("dumpsignal=hup").dump_signal_name == "SIGHUP");
  CHECK(parse_err("dumpsignal").find("expected dumpsignal=NAME") != std::string::npos);
  CHECK(parse_err("dumpsignal=PWR").find("SIGPWR is Mono's (GC thread suspend); use USR1, USR2 or HUP") !=
        std::string::npos);
  CHECK(parse_err("dumpsignal=SIGSEGV").find("SIGSEGV is Mono's") != std::string::npos);
  CHECK(parse_err("dumpsignal=KILL").find("cannot be caught") != std::string::npos);
  CHECK(parse_err("dumpsignal=PROF").find("the sampler's") != std::string::npos);
  CHECK(parse_err("dumpsignal=TERM").find("termination") != std::string::npos);
  CHECK(parse_err("dumpsignal=RTMIN+3").find("real-time signals are Mono's") != std::string::npos);
  CHECK(parse_err("dumpsignal=12").find("not a signal name") != std::string::npos);
  CHECK(parse_err("dumpsignal=FOO").find("not a signal name") != std::string::npos);
  CHECK(help_text().find("dumpsignal=NAME") != std::string_view::npos);
}
