// Mono behind the door (issue 34): Mono's own settings as the agent passes them (Config::options, one
// per line), what it refuses after start, which settings are its own.
#include "mlpd_catch.h"

#include <string>

#include "mlpd/format.h"
#include "mono/mono_runtime.h"

using namespace mlpd;

TEST_CASE("Mono's own options: callspec (commas kept), walker, roots-every-gc", "[hooks][door]") {
  mono::MonoOptions o;
  std::string error;
  REQUIRE(mono::parse_mono_options("callspec=M:A:B,T:C\nwalker=check\nroots-every-gc\n", o, error));
  CHECK(o.callspec == "M:A:B,T:C");
  CHECK(o.walker == 2);
  CHECK(o.roots_every_gc);
  mono::MonoOptions d;
  REQUIRE(mono::parse_mono_options("", d, error));
  CHECK(d.callspec.empty());
  CHECK(d.walker == 0);
  CHECK_FALSE(d.roots_every_gc);
  REQUIRE(mono::parse_mono_options("walker=mono", d, error));
  CHECK(d.walker == 1);
}

TEST_CASE("Mono's own options: an unknown or malformed line is refused in one line", "[hooks][door]") {
  mono::MonoOptions o;
  std::string error;
  CHECK_FALSE(mono::parse_mono_options("walker=fast\n", o, error));
  CHECK(error == "unknown Mono option 'walker=fast'");
  CHECK_FALSE(mono::parse_mono_options("roots-every-gc=1", o, error));
  CHECK_FALSE(mono::parse_mono_options("tiering\n", o, error));
  CHECK(error.find('\n') == std::string::npos);
}

TEST_CASE("Mono's runtime: its settings, what an attach cannot have", "[hooks][door]") {
  runtime::Runtime& r = mono::runtime();
  CHECK(&r == &mono::runtime());  // one instance
  CHECK(r.name() == "mono");
  CHECK(r.takes_option("callspec"));
  CHECK(r.takes_option("walker"));
  CHECK(r.takes_option("roots-every-gc"));
  CHECK_FALSE(r.takes_option("sample"));
  runtime::Config c;
  CHECK(r.late_refusal(c).empty());
  c.mask = format::MASK_GC_ALLOC;
  CHECK(r.late_refusal(c).rfind("alloc (", 0) == 0);
  c.mask = 0;
  c.alloc_sample = 4096;
  CHECK(r.late_refusal(c).rfind("alloc-sample (", 0) == 0);
  CHECK(r.heapshots_available());
}
