// The `jitdump[=DIR]` and `perfmap` options (docs/options.md, docs/perf.md).
#include "mlpd_catch.h"

#include <string>

#include "mlpd/agent/options.h"

using namespace mlpd::agent;

TEST_CASE("options: jitdump and perfmap") {
  Options o;
  std::string error;
  REQUIRE(parse_options("", o, error));
  CHECK_FALSE(o.jitdump);
  CHECK_FALSE(o.perfmap);

  REQUIRE(parse_options("nodefaults,jitdump", o, error));
  CHECK(o.jitdump);
  CHECK(o.jitdump_dir == ".");
  CHECK(o.effective_mask == 0);  // jitdump alone enables no events

  REQUIRE(parse_options("jitdump=/var/tmp/jd,perfmap,calls", o, error));
  CHECK(o.jitdump);
  CHECK(o.jitdump_dir == "/var/tmp/jd");
  CHECK(o.perfmap);
  CHECK(o.calls);

  REQUIRE(parse_options("jitdump='/tmp/a,b'", o, error));  // quoted: commas kept
  CHECK(o.jitdump_dir == "/tmp/a,b");

  CHECK_FALSE(parse_options("jitdump=", o, error));
  CHECK(error == "mlpd: bad value in 'jitdump=': expected jitdump or jitdump=DIRECTORY");
  CHECK_FALSE(parse_options("perfmap=1", o, error));
  CHECK(error == "mlpd: bad value in 'perfmap=1': 'perfmap' takes no value");
  CHECK_FALSE(parse_options("nojitdump", o, error));  // not an event: no `no` form
  CHECK(error.find("unknown option 'nojitdump'") != std::string::npos);

  const std::string help(help_text());
  CHECK(help.find("jitdump[=DIR]") != std::string::npos);
  CHECK(help.find("perfmap") != std::string::npos);
}
