// mlpd_layout: prints the layout table (codec/include/mlpd/event_layout.h), one line per event kind:
//   KIND FIELD:CONDITION ...
// (CONDITION: always, bt = only in the _BT variant, trampoline = only for a jit_helper of type 5), so
// that tests in other languages check against the table rather than a copy of it
// (tests/integration/cli/test_dump_layout.py: every field of every kind is in `mlpd dump`'s output).
#include <cstdio>

#include "mlpd/event_layout.h"

int main() {
  using mlpd::layout::Cond;
  for (const mlpd::layout::EventLayout& l : mlpd::layout::kLayouts) {
    const std::string_view kind = mlpd::event_kind_name(l.kind);
    std::printf("%.*s", static_cast<int>(kind.size()), kind.data());
    for (const mlpd::layout::Field& f : l.fields) {
      const char* cond = f.cond == Cond::if_backtrace ? "bt" : f.cond == Cond::if_trampoline ? "trampoline" : "always";
      std::printf(" %.*s:%s", static_cast<int>(f.name.size()), f.name.data(), cond);
    }
    std::printf("\n");
  }
  return 0;
}
