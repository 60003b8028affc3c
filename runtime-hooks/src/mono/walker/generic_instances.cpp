// Shared generic code in the stack walker (generic_instances.h).
#include "walker/generic_instances.h"

#include <new>

#include "mono/layouts.h"

namespace mlpd::hooks::walker {

std::atomic<int> g_nursery_check{0};
int g_probe_static = 0;
std::mutex g_generic_mutex;
std::atomic<GenericTable*> g_generic{nullptr};

namespace {
int g_generic_tables = 0;  // tables made (a domain unload starts a new one); guarded by g_generic_mutex
constexpr int kMaxGenericTables = 8;
}  // namespace

bool generic_insert(const CodeEntry* e, uint64_t ctx, MonoMethod* m) {
  GenericTable* t = g_generic.load(std::memory_order_relaxed);
  if (!t && g_generic_tables < kMaxGenericTables) {
    t = new (std::nothrow) GenericTable();
    if (!t) return false;
    ++g_generic_tables;
    g_generic.store(t, std::memory_order_release);
  }
  if (!t || t->used >= kGenericSlots / 4 * 3) return false;
  for (uint32_t i = generic_hash(e, ctx);; i = (i + 1) & (kGenericSlots - 1)) {
    GenericSlot& s = t->slots[i];
    const CodeEntry* k = s.entry.load(std::memory_order_relaxed);
    if (k == e && s.ctx == ctx) return true;
    if (k) continue;
    s.ctx = ctx;
    s.method = m;
    s.entry.store(e, std::memory_order_release);
    ++t->used;
    return true;
  }
}

void forget_generic_instances() {
  // Its vtables and runtime generic contexts will be freed, and their addresses may come back as
  // others': the learned generic pairs start over in a new table (the old one may still be read by a
  // walk in progress: it is never freed; after kMaxGenericTables, generic frames stay with Mono).
  std::lock_guard<std::mutex> lock(g_generic_mutex);
  g_generic.store(nullptr, std::memory_order_release);
}

// Mono 6.8 exports no reader for a method's MonoGenericJitInfo (where a frame of shared generic code
// keeps its generic context): its layout is read raw (the selected row's readers: mono/layouts.h), checked against this
// runtime's JIT info. The context is a method runtime generic context when the method has a method
// instantiation, a vtable when it is static or of a value type, else `this` (whose vtable is used).
// Only stack slots off the machine's stack or frame pointer are read here (context_base_ok): another
// register would need the callee-saved registers of every frame (such frames stay with Mono's walk).
bool read_generic_jit_info(const MonoJitInfo* ji, MonoMethod* jit_method, uint64_t start, uint64_t size,
                           CodeEntry& e) {
  const mono_layouts::MonoLayouts& L = mono_layouts::selected();
  if (!ji || !jit_method || !mono_optional.mono_method_get_context || !mono_optional.mono_method_get_flags || !mono_optional.mono_method_get_class || !mono_optional.mono_class_is_valuetype) {
    return false;
  }
  const auto at = reinterpret_cast<uint64_t>(ji);
  uint8_t head[mono_layouts::kMaxJiHead];
  if (!read_memory(at, head, L.ji_head)) return false;
  const mono_layouts::JitInfoHead h = L.parse_jit_info_head(head);
  // The layout is this runtime's only if the fields the API gives are where we read them.
  if (h.method != reinterpret_cast<uint64_t>(jit_method) || h.code_start != start || h.code_size <= 0 ||
      static_cast<uint64_t>(h.code_size) != size || !h.has_generic_jit_info) {
    return false;
  }
  if (h.clauses > L.max_clauses) return false;
  for (uint32_t i = 0; i < h.clauses; ++i) {  // each clause's try and handler inside the code: the size is right
    uint64_t addrs[3];
    if (!read_memory(L.clause_address(at, i), reinterpret_cast<uint8_t*>(addrs), sizeof addrs)) return false;
    for (uint64_t a : addrs) {
      if (a < start || a > start + size) return false;
    }
  }
  uint8_t gi[mono_layouts::kMaxGenericJi];
  if (!read_memory(L.generic_jit_info_address(at, h.clauses), gi, L.generic_ji_size)) return false;
  const mono_layouts::GenericJitInfo g = L.parse_generic_jit_info(gi);
  if (!g.has_this || g.nlocs < 0 || static_cast<uint32_t>(g.nlocs) > L.max_locs) return false;
  uint8_t locs[mono_layouts::kMaxLocs * mono_layouts::kMaxLocSize];
  if (g.nlocs > 0 && (!g.locations || !read_memory(g.locations, locs, g.nlocs * L.loc_size))) return false;
  mono_layouts::ContextSlot slot;
  if (!L.context_slot(g, locs, size, slot) || !context_base_ok(slot.reg)) return false;
  void* const* context = static_cast<void* const*>(mono_optional.mono_method_get_context(jit_method));
  if (!context) return false;
  uint32_t iflags = 0;
  const uint32_t flags = mono_optional.mono_method_get_flags(jit_method, &iflags);
  MonoClass* klass = mono_optional.mono_method_get_class(jit_method);
  if (!klass) return false;
  constexpr uint32_t kStatic = 0x0010;  // METHOD_ATTRIBUTE_STATIC
  e.ctx = (context[1] || (flags & kStatic) || mono_optional.mono_class_is_valuetype(klass)) ? kCtxValue : kCtxThis;
  e.ctx_base = static_cast<uint8_t>(slot.reg);
  e.ctx_offset = slot.offset;
  e.ctx_from = slot.from;
  return true;
}

}  // namespace mlpd::hooks::walker
