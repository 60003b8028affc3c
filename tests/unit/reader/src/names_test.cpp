// Native symbol names as the reader shows them (issue 22.10): C++ names demangled, the profiler's own
// frames marked "[mlpd] ", everything else kept whole.
#include "mlpd_catch.h"

#include <string>

#include "mlpd/names.h"

using mlpd::Names;

TEST_CASE("native C++ symbols are demangled - version and module parts are kept", "[names]") {
  CHECK(Names::display_symbol("_ZNSt6vectorIiSaIiEE9push_backERKi") == "std::vector<int, std::allocator<int> >::push_back(int const&)");
  CHECK(Names::display_symbol("_ZNSo5flushEv@@GLIBCXX_3.4") == "std::ostream::flush()@@GLIBCXX_3.4");
  CHECK(Names::display_symbol("_Z3fooi (libfoo.so+0x12)") == "foo(int) (libfoo.so+0x12)");
  CHECK(Names::display_symbol("pthread_cond_signal@@GLIBC_2.3.2") == "pthread_cond_signal@@GLIBC_2.3.2");
  CHECK(Names::display_symbol("?? (libmono-2.0.so.1+0x1234)") == "?? (libmono-2.0.so.1+0x1234)");
  CHECK(Names::display_symbol("_Znot a mangled name") == "_Znot a mangled name");
  CHECK(Names::display_symbol("") == "");
  const std::string huge = "_ZN" + std::string(Names::kMaxDemangle, 'x');  // too long: left alone
  CHECK(Names::display_symbol(huge) == huge);
}

TEST_CASE("the profiler's own frames are marked [mlpd]", "[names]") {
  CHECK(Names::display_symbol("_ZN4mlpd5hooks13on_allocationEPvS1_") == "[mlpd] mlpd::hooks::on_allocation(void*, void*)");
  CHECK(Names::display_symbol("_ZNK4mlpd10MemorySink7writtenEv") == "[mlpd] mlpd::MemorySink::written() const");
  CHECK(Names::display_symbol("_ZL24mlpd_preload_constructorv") == "[mlpd] mlpd_preload_constructor()");
  CHECK(Names::display_symbol("[mlpd] mlpd::hooks::on_allocation") == "[mlpd] mlpd::hooks::on_allocation");
  CHECK(Names::display_symbol("mono_profiler_init_mlpd") == "[mlpd] mono_profiler_init_mlpd");
  CHECK(Names::display_symbol("mono_profiler_init_log") == "mono_profiler_init_log");
}

TEST_CASE("symbol_at gives the shown name", "[names]") {
  Names n;
  mlpd::Event e;
  e.kind = mlpd::EventKind::sample_usym;
  e.ptr = 0x1000;
  e.size = 0x10;
  e.name = "_ZN4mlpd2rt4walkEv";
  n.observe(e);
  REQUIRE(n.symbol_at(0x1008));
  CHECK(*n.symbol_at(0x1008) == "[mlpd] mlpd::rt::walk()");
}
