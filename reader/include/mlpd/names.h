// Names for the pointers of an mlpd file. Mono identifies methods, classes, vtables, images,
// assemblies, domains and threads by pointer (or id) and describes each one once, in a metadata or
// method_jit event; every other event refers to it by the bare pointer. Names collects those
// descriptions as the file is read (call observe() for every event, in file order) and answers
// "what is this pointer" for the events that follow.
//
// References are resolved at query time, so an order Mono really produces still resolves once both
// halves are known: a vtable_load that names a class whose class_load comes later gets its class
// name as soon as that class_load has been observed. Something not yet described simply has no
// name (the lookups return nullptr); Mono files do contain forward references (see docs/format.md).
//
// Kept compactly (mlpd/id_map.h): a file can describe millions of things in little gzip, so there is no
// node allocation per pointer; names are interned (each distinct string once). A pointer a lookup
// returns stays valid until the next observe().
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "mlpd/id_map.h"
#include "mlpd/conventions.h"
#include "mlpd/event.h"

namespace mlpd {

class Names {
 public:
  struct Method {
    uint64_t code = 0;  // start of the native code; 0 when Mono did not know it
    uint64_t size = 0;  // size of the native code; 0 when unknown
    uint32_t name = 0;  // the name, interned (method_name() gives it)
  };

  // Records what `e` describes: method_jit, class_load, image_load/unload, assembly_load/unload,
  // domain_name, context_load, thread_start/end/name, vtable_load, sample_usym, counter_descriptors.
  // Other kinds are ignored. Later descriptions of the same pointer replace earlier ones.
  void observe(const Event& e);
  // Whether observe() records anything for an event of this kind (a caller that sees millions of other
  // events, or decodes them again only for the names, tests this first). Keep in step with observe().
  static bool observes(EventKind k) {
    switch (k) {
      case EventKind::method_jit:
      case EventKind::class_load:
      case EventKind::vtable_load:
      case EventKind::image_load:
      case EventKind::image_unload:
      case EventKind::assembly_load:
      case EventKind::assembly_unload:
      case EventKind::domain_name:
      case EventKind::context_load:
      case EventKind::thread_start:
      case EventKind::thread_end:
      case EventKind::thread_name:
      case EventKind::sample_usym:
      case EventKind::counter_descriptors:
        return true;
      default:
        return false;
    }
  }

  // Each lookup returns nullptr when the pointer has not been described (yet).
  const Method* method(uint64_t method) const;
  const std::string* method_name(uint64_t method) const;
  const std::string* class_name(uint64_t klass) const;
  // The class a vtable belongs to (from vtable_load): true and `klass` set when known.
  bool vtable_class(uint64_t vtable, uint64_t& klass) const;
  // vtable → class → class name; nullptr when either link is missing.
  const std::string* vtable_class_name(uint64_t vtable) const;
  const std::string* image_name(uint64_t image) const;        // the image's file name
  const std::string* assembly_name(uint64_t assembly) const;  // e.g. "mscorlib, Version=..."
  const std::string* domain_name(uint64_t domain_id) const;   // the friendly name
  // The domain a context belongs to (from context_load): true and `domain_id` set when known.
  bool context_domain(uint64_t context_id, uint64_t& domain_id) const;
  const std::string* thread_name(uint64_t thread_id) const;
  const CounterDesc* counter(uint64_t index) const;

  // The method whose JIT-compiled code (method_jit code start and size) contains `ip`, or 0 when
  // none does. Methods reported with code size 0 never match.
  uint64_t method_at(uint64_t ip) const;
  // The unmanaged symbol (sample_usym) at or below `ip`: within its size when it has one (mlpd's
  // agent writes real symbol ranges), else at most 4096 bytes below it — the rule mprof-report uses,
  // since Mono writes probe addresses with size 0 rather than symbol ranges.
  const std::string* symbol_at(uint64_t ip) const;

  // How a native symbol's name is shown (what sample_usym names become in symbol_at()): a C++
  // mangled name demangled (abi::__cxa_demangle, for names up to kMaxDemangle bytes; a version
  // suffix "@@V" and a " (module+0xOFF)" part kept as they are), and the profiler's own code -- the
  // agent's namespace mlpd::, its mlpd_* functions, or a name the agent already wrote as "[mlpd] ..."
  // -- marked "[mlpd] NAME" so that every view can tell profiler overhead from the program.
  static std::string display_symbol(std::string_view raw);
  static constexpr size_t kMaxDemangle = 1024;
  static constexpr std::string_view kOwnPrefix = conventions::kOwnFramePrefix;

  size_t method_count() const { return methods_.size(); }
  size_t class_count() const { return classes_.size(); }
  size_t vtable_count() const { return vtables_.size(); }

 private:
  struct Thread {
    uint32_t name = kNoName;
    bool ended = false;  // a new start of the same id drops the old name
  };
  struct Symbol {  // no member initialisers: a nested class's are not usable before Names is complete
    uint32_t name;
    uint64_t size;  // 0 in Mono's files (probe addresses); the real size in mlpd's
  };
  static constexpr uint32_t kNoName = UINT32_MAX;

  const std::string* name_of(const IdMap<uint32_t>& map, uint64_t key) const {
    const uint32_t* n = map.find(key);
    return n ? &strings_.at(*n) : nullptr;
  }

  StringTable strings_;
  IdMap<Method> methods_;
  SortedIdMap<std::pair<uint64_t, uint64_t>> code_;  // code start → (end, method)
  IdMap<uint32_t> classes_;
  IdMap<uint64_t> vtables_;  // vtable → class
  IdMap<uint32_t> images_;
  IdMap<uint32_t> assemblies_;
  IdMap<uint32_t> domains_;
  IdMap<uint64_t> contexts_;  // context id → domain id
  IdMap<Thread> threads_;
  SortedIdMap<Symbol> symbols_;
  IdMap<CounterDesc> counters_;
};

}  // namespace mlpd
