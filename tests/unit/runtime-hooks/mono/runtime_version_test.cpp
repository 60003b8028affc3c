#include "mlpd_catch.h"

#include <string>

#include "mono/runtime_version.h"
#include "mono/v6_8/layouts.h"

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

TEST_CASE("detect picks the layout row of known versions only") {
  Runtime r = detect("6.8.0.105 (Debian)");
  CHECK(r.layouts == &mlpd::hooks::mono_v6_8::kLayouts);
  CHECK(describe(r) == "runtime: Mono 6.8.0.105, internals v6_8");
  r = detect("6.12.0.199 (tarball)");
  CHECK(r.layouts == &mlpd::hooks::mono_v6_8::kLayouts);
  CHECK(describe(r) == "runtime: Mono 6.12.0.199, internals v6_8");
  r = detect("6.10.0.104 (tarball)");
  CHECK(r.layouts == nullptr);
  CHECK(describe(r) == "runtime: Mono 6.10.0.104, internals off: no layout readers for this version");
  r = detect("7.0.0.1");
  CHECK(r.layouts == nullptr);
  r = detect(nullptr);
  CHECK(r.layouts == nullptr);
  CHECK(describe(r) == "runtime: Mono unknown, internals off: the runtime does not give its version");
  r = detect("garbage");
  CHECK(r.layouts == nullptr);
  CHECK(describe(r).find("unreadable version 'garbage'") != std::string::npos);
}

TEST_CASE("the v6_8 row holds Mono 6.8's offsets and readers") {
  const mlpd::hooks::mono_layouts::MonoLayouts& l = mlpd::hooks::mono_v6_8::kLayouts;
  CHECK(std::string(l.name) == "v6_8");
  CHECK(internals_name(&l) == std::string("v6_8"));
  CHECK(internals_name(nullptr) == std::string("off"));
  CHECK((l.jit_tls_lmf == 16 && l.jit_tls_first_lmf == 24 && l.jit_tls_end_of_stack == 0));
#if defined(__aarch64__)
  CHECK((l.lmf_ext_bit == 2 && l.lmf_tramp_bit == 0 && l.lmf_previous(0x1006) == 0x1004 && l.lmf_previous(0x1003) == 0x1000));
#else
  CHECK((l.lmf_ext_bit == 2 && l.lmf_tramp_bit == 4 && l.lmf_previous(0x1006) == 0x1000));
#endif
  CHECK(l.clause_address(0x1000, 2) == 0x1000 + 56 + 2 * 64 + 8);
  CHECK(l.generic_jit_info_address(0x1000, 3) == 0x1000 + 56 + 3 * 64);
  CHECK((l.parse_jit_info_head && l.parse_generic_jit_info && l.context_slot && l.wrapper_type && l.open_instantiation));
#if defined(__x86_64__)
  CHECK((l.lmf.fp == 8 && l.lmf.sp == 16 && l.lmf.tramp_ctx == 24));
  CHECK((l.lmf.ctx_sp == 32 && l.lmf.ctx_fp == 40 && l.lmf.ctx_ip == 128));
#elif defined(__aarch64__)
  CHECK((l.lmf.ip == 16 && l.lmf.fp == 104 && l.lmf.sp == 112 && l.lmf.lmf_bytes == 120 && l.lmf.tramp_ctx == 0));
#endif
}
