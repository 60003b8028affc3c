// Mono's side of the perf files (runtime-hooks/src/mono/perf_output.cpp): a method's code named by the
// name the JIT callback gives or, without one, by mono_method_full_name (freed with mono_free); Mono's
// code buffers named "[mono] KIND" (a specific trampoline with its detail), a method's own buffer left
// to its method, null or empty buffers skipped; what was queued written by drain()/finish() into the
// jitdump and perf map files, and nothing after finish(). Fake Mono functions in the bound `mono`
// table; the perf map goes to /tmp/perf-PID.map as perf wants it, removed afterwards.
#include "mlpd_catch.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "mlpd/hooks/mono_api.h"
#include "mono/perf_callbacks.h"
#include "temp_dir.h"

using namespace mlpd::hooks;

namespace {

int g_freed = 0;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("perf output: methods and Mono's code buffers named in the jitdump and the perf map", "[hooks][perf]") {
  const MonoApi saved = mono;
  mono.mono_method_full_name = [](MonoMethod*, mono_bool) { return strdup("N.C:Unnamed (int)"); };
  mono.mono_free = [](void* p) {
    ++g_freed;
    std::free(p);
  };
  mlpd::test::TempDir dir("perf_output");
  perf::OutputConfig cfg;
  cfg.jitdump = true;
  cfg.jitdump_dir = dir.path.string();
  cfg.perfmap = true;
  std::string error;
  REQUIRE(perf::start(cfg, error));
  REQUIRE(perf::enabled());

  static const unsigned char code[3][64] = {{0x90}, {0xc3}, {0xcc}};
  auto* method = reinterpret_cast<MonoMethod*>(0x1234);
  const std::string named = "N.C:Named ()";
  perf::method_jitted(method, reinterpret_cast<uint64_t>(code[0]), 64, &named);
  perf::method_jitted(method, reinterpret_cast<uint64_t>(code[1]), 32, nullptr);  // Mono names it
  perf::method_jitted(nullptr, reinterpret_cast<uint64_t>(code[1]), 32, &named);   // no method: nothing
  perf::code_buffer(code[2], 16, MONO_PROFILER_CODE_BUFFER_SPECIFIC_TRAMPOLINE, "generic_trampoline_jit");
  perf::code_buffer(code[2] + 16, 16, MONO_PROFILER_CODE_BUFFER_HELPER, nullptr);
  perf::code_buffer(code[2] + 32, 16, MONO_PROFILER_CODE_BUFFER_METHOD, nullptr);  // its method names it
  perf::code_buffer(nullptr, 16, MONO_PROFILER_CODE_BUFFER_HELPER, nullptr);
  perf::code_buffer(code[2] + 48, 0, MONO_PROFILER_CODE_BUFFER_HELPER, nullptr);
  perf::drain();
  CHECK(g_freed == 1);  // the name Mono made
  perf::finish(false);
  CHECK_FALSE(perf::enabled());
  perf::method_jitted(method, reinterpret_cast<uint64_t>(code[0]), 64, &named);  // after finish: nothing

  const std::string dump = slurp(dir.file("jit-" + std::to_string(getpid()) + ".dump"));
  REQUIRE(dump.size() > 40);
  CHECK(dump.compare(0, 4, "DTiJ") == 0);  // the jitdump magic, little-endian 0x4A695444
  CHECK(count(dump, std::string("N.C:Named ()") + '\0') == 1);
  CHECK(count(dump, std::string("N.C:Unnamed (int)") + '\0') == 1);
  CHECK(count(dump, std::string("[mono] specific_trampoline generic_trampoline_jit") + '\0') == 1);
  CHECK(count(dump, std::string("[mono] helper") + '\0') == 1);
  CHECK(count(dump, "[mono] method") == 0);

  const std::string map_path = "/tmp/perf-" + std::to_string(getpid()) + ".map";
  const std::string map = slurp(map_path);
  std::remove(map_path.c_str());
  char line[128];
  std::snprintf(line, sizeof line, "%lx 40 N.C:Named ()\n", static_cast<unsigned long>(reinterpret_cast<uintptr_t>(code[0])));
  CHECK(map.find(line) != std::string::npos);
  std::snprintf(line, sizeof line, "%lx 10 [mono] helper\n", static_cast<unsigned long>(reinterpret_cast<uintptr_t>(code[2] + 16)));
  CHECK(map.find(line) != std::string::npos);
  CHECK(count(map, "\n") == 4);  // four code loads, one line each
  mono = saved;
}
