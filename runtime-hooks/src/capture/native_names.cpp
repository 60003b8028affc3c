// Names native code for the samples (native_names.h): ELF symbols per module (or its separate
// debug file's, or the vDSO's), demangled, libmlpd's own marked, gaps named by module and offset.
#include "native_names.h"

#include <sys/auxv.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cxxabi.h>

#include "mlpd/capture/sampling.h"
#include "mlpd/rt/clock.h"
#include "sample_pool.h"

namespace mlpd::hooks::sampling_detail {

namespace {

// A symbol's name as samples show it: C++ names demangled (abi::__cxa_demangle allocates: helper
// thread only, never in the signal handler), and libmlpd's own functions prefixed "[mlpd] ", so
// that the profiler's overhead is seen as such.
std::string shown_name(std::string_view raw, bool ours) {
  std::string name(raw);
  if (name.size() > 2 && name[0] == '_' && name[1] == 'Z') {
    int status = -1;
    if (char* out = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status)) {
      if (status == 0) name = out;
      std::free(out);
    }
  }
  return ours ? "[mlpd] " + name : name;
}

constexpr uint64_t kMprofReach = 4096;

// Where separate debug files are installed: /usr/lib/debug, or MLPD_TEST_DEBUG_DIR (tests only: a
// directory with no debug files stands for a machine without the debug packages).
const std::string& debug_root() {
  static const std::string root = [] {
    const char* v = std::getenv("MLPD_TEST_DEBUG_DIR");
    return std::string(v && *v ? v : "/usr/lib/debug");
  }();
  return root;
}

// The separate debug file of the stripped ELF file `path` (whose symbols are `stripped`), as gdb
// finds it: by build id (ROOT/.build-id/xx/yyyy.debug), then by its .gnu_debuglink name beside the
// file, in .debug/ beside it, and under ROOT with the file's directory. A candidate is taken only
// when it is the same build (its build id equal, or, without build ids, its CRC-32 the one the link
// gives) and has a .symtab. Helper thread only: the file is mapped while read, then only the
// compact table (ElfSymbols) is kept.
bool load_debug_file(const std::string& path, const ElfSymbols& stripped, ElfSymbols& out) {
  const std::string& id = stripped.build_id();
  auto usable = [&](const std::string& candidate, bool check_crc) {
    if (!out.load_file(candidate) || !out.from_symtab() || out.size() == 0) return false;
    if (!id.empty() && !out.build_id().empty()) return out.build_id() == id;
    uint32_t crc = 0;
    return check_crc && file_crc32(candidate, crc) && crc == stripped.debuglink_crc();
  };
  if (id.size() > 2 && usable(debug_root() + "/.build-id/" + id.substr(0, 2) + "/" + id.substr(2) + ".debug", false))
    return true;
  const std::string& link = stripped.debuglink();
  if (link.empty() || path.empty() || path[0] != '/') return false;
  const std::string dir = path.substr(0, path.rfind('/'));
  for (const std::string& candidate : {dir + "/" + link, dir + "/.debug/" + link, debug_root() + dir + "/" + link}) {
    if (candidate != path && usable(candidate, true)) return true;
  }
  return false;
}

}  // namespace

ModuleSymbols* NativeNames::symbols_for(const Module& m) {
  auto key = std::make_pair(std::string(m.name), m.bias);
  auto it = symbols_.find(key);
  if (it != symbols_.end()) return it->second.get();
  auto ms = std::make_unique<ModuleSymbols>();
  const auto self = reinterpret_cast<uint64_t>(&drain_samples);
  ms->ours = self >= m.lo && self < m.hi;
  const uint64_t vdso = getauxval(AT_SYSINFO_EHDR);
  if (vdso && vdso >= m.lo && vdso < m.hi) {
    // The vDSO has no file: its ELF image (section headers included) is mapped in full.
    ms->label = "[vdso]";
    ms->symbols.load_memory(reinterpret_cast<const unsigned char*>(vdso), m.hi - vdso);
  } else {
    const std::string name = m.name;
    std::string path = name.empty() ? "/proc/self/exe" : name;
    ms->label = name.empty() ? "main program" : name.substr(name.rfind('/') + 1);
    std::string real = name;  // the file's path, for its .gnu_debuglink (the main program's too)
    if (name.empty()) {
      char buf[4096];
      const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
      if (n > 0) {
        real.assign(buf, static_cast<size_t>(n));
        ms->label = real.substr(real.rfind('/') + 1);
      }
    }
    ms->symbols.load_file(path);
    // A stripped binary (Debian's runtime and libraries) keeps only .dynsym: its separate debug
    // file, when installed, has the full .symtab (static functions such as __GI___poll, the runtime's
    // own code) at the same addresses.
    if (!ms->symbols.from_symtab()) {
      ElfSymbols debug;
      if (load_debug_file(real, ms->symbols, debug)) ms->symbols = std::move(debug);
    }
  }
  ModuleSymbols* out = ms.get();
  symbols_.emplace(std::move(key), std::move(ms));
  return out;
}

void NativeNames::emit_usym(Event& e) {
  auto it = described_.find(e.ptr);
  if (it != described_.end() && it->second == e.name) return;
  described_[e.ptr] = e.name;
  g_sample_meta->add(e, rt::now_ns);
}

void NativeNames::describe(const Snapshot& snapshot, uint64_t ip, bool leaf) {
  const uint64_t probe = leaf ? ip : ip - 1;  // a call's return address may be past the caller's end
  const Module* m = snapshot.find(probe);
  if (!m) return;  // JIT'd code: the methods' JIT ranges name it
  ModuleSymbols* ms = symbols_for(*m);
  uint64_t gap_start = 0, gap_end = 0;
  Event e;
  e.kind = EventKind::sample_usym;
  if (const ElfSymbols::Symbol* s = ms->symbols.find(probe - m->bias, gap_start, gap_end)) {
    e.ptr = m->bias + s->value;
    e.size = s->size;
    auto it = ms->shown.find(s->value);
    if (it == ms->shown.end()) it = ms->shown.emplace(s->value, shown_name(ms->symbols.name(*s), ms->ours)).first;
    e.name = it->second;
  } else {
    const uint64_t lo = std::max(m->lo, gap_start > UINT64_MAX - m->bias ? m->hi : m->bias + gap_start);
    const uint64_t hi = std::min(m->hi, gap_end >= UINT64_MAX - m->bias ? m->hi : m->bias + gap_end);
    e.ptr = lo;
    e.size = hi > lo ? hi - lo : 1;
    char off[32];
    std::snprintf(off, sizeof off, "+0x%llx)", static_cast<unsigned long long>(lo - m->bias));
    e.name = (ms->ours ? "[mlpd] ?? (" : "?? (") + ms->label + off;
  }
  const uint64_t start = e.ptr, end = e.ptr + e.size;
  emit_usym(e);
  // mprof-report ignores the size: it names an address by the nearest symbol start below it, and
  // only within 4096 bytes. Deeper into a large function (or gap) the same name is described again
  // at the 4 KiB step below the address, so that mprof-report names it too.
  if (probe - start >= kMprofReach) {
    e.ptr = start + (probe - start) / kMprofReach * kMprofReach;
    e.size = end - e.ptr;
    emit_usym(e);
  }
}

}  // namespace mlpd::hooks::sampling_detail
