#include "mlpd_catch.h"

#include "mono/runtime_version.h"

using namespace mlpd::hooks::mono_runtime;

TEST_CASE("parse_version reads the runtimes' build info") {
  Version v = parse_version("6.8.0.105 (Debian 6.8.0.105+dfsg-3.3 Tue Jan 16 14:24:23 UTC 2024)");
  CHECK(v.ok);
  CHECK((v.major == 6 && v.minor == 8 && v.patch == 0 && v.build == 105));
  v = parse_version("6.12.0.199 (tarball Thu Apr  3 15:13:01 UTC 2025)");
  CHECK((v.ok && v.major == 6 && v.minor == 12 && v.patch == 0 && v.build == 199));
  v = parse_version("6.12");
  CHECK((v.ok && v.major == 6 && v.minor == 12 && v.build == 0));
  CHECK_FALSE(parse_version("").ok);
  CHECK_FALSE(parse_version("6").ok);
  CHECK_FALSE(parse_version("six.eight").ok);
  CHECK_FALSE(parse_version(" 6.8.0").ok);
  CHECK_FALSE(parse_version("1234567890123.1").ok);  // more digits than a part may have
}

TEST_CASE("detect picks the layout readers of known versions only") {
  Runtime r = detect("6.8.0.105 (Debian)");
  CHECK(r.internals == Internals::v6_8);
  CHECK(describe(r) == "runtime: Mono 6.8.0.105, internals v6_8");
  r = detect("6.12.0.199 (tarball)");
  CHECK(r.internals == Internals::v6_8);
  CHECK(describe(r) == "runtime: Mono 6.12.0.199, internals v6_8");
  r = detect("6.10.0.104 (tarball)");
  CHECK(r.internals == Internals::off);
  CHECK(describe(r) == "runtime: Mono 6.10.0.104, internals off: no layout readers for this version");
  r = detect("7.0.0.1");
  CHECK(r.internals == Internals::off);
  r = detect(nullptr);
  CHECK(r.internals == Internals::off);
  CHECK(describe(r) == "runtime: Mono unknown, internals off: the runtime does not give its version");
  r = detect("garbage");
  CHECK(r.internals == Internals::off);
  CHECK(describe(r).find("unreadable version 'garbage'") != std::string::npos);
}
