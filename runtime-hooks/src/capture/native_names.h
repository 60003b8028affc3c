// The names of the native code in sampled stacks (the sample drain's helper thread only).
//
// Native code is named from the modules' ELF symbols (one ElfSymbols per
// module: .symtab, or the separate debug file's, or .dynsym), each symbol described by one
// TYPE_SAMPLE_USYM (real start and size) before the first hit that references it. An address inside
// a module that no symbol covers is described as that gap ("?? (libc.so.6+0x...)"), never as the
// neighbouring symbol. Addresses in JIT'd code are left to the methods' JIT ranges.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>

#include "elf_symbols.h"
#include "mlpd/event.h"
#include "native_unwind.h"

namespace mlpd::hooks::sampling_detail {

struct ModuleSymbols {
  std::string label;  // file name shown in gap names
  ElfSymbols symbols;
  bool ours = false;  // libmlpd itself: its frames are the profiler's overhead, named "[mlpd] ..."
  std::unordered_map<uint64_t, std::string> shown;  // symbol value -> name as written (demangled)
};

class NativeNames {
 public:
  // Describes the native code at `ip` (a return address unless `leaf`), found in `snapshot`, once,
  // before its first use (TYPE_SAMPLE_USYM to g_sample_meta). JIT'd code is left alone.
  void describe(const Snapshot& snapshot, uint64_t ip, bool leaf);

 private:
  ModuleSymbols* symbols_for(const Module& m);
  void emit_usym(Event& e);

  std::map<std::pair<std::string, uint64_t>, std::unique_ptr<ModuleSymbols>> symbols_;  // (name, bias)
  std::unordered_map<uint64_t, std::string> described_;  // USYM start -> name written
};

}  // namespace mlpd::hooks::sampling_detail
