#include "mono/aot_images.h"

#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <cstring>
#include <mutex>

namespace mlpd::hooks {

namespace {

// The AOT images loaded (aot_images()): scanned again only when the loader has added modules.
std::mutex g_aot_mutex;
unsigned long long g_aot_adds = ~0ull;
std::vector<std::string> g_aot_names, g_aot_checked;

bool ends_with(const std::string& s, const char* tail) {
  const size_t n = std::strlen(tail);
  return s.size() >= n && s.compare(s.size() - n, n, tail) == 0;
}

struct ModuleScan {
  unsigned long long adds = 0;
  std::vector<std::string> candidates;
};

int scan_module(dl_phdr_info* info, size_t, void* data) {
  auto* scan = static_cast<ModuleScan*>(data);
  scan->adds = info->dlpi_adds;
  if (info->dlpi_name && info->dlpi_name[0]) {
    std::string name = info->dlpi_name;
    if (ends_with(name, ".dll.so") || ends_with(name, ".exe.so")) scan->candidates.push_back(std::move(name));
  }
  return 0;
}

}  // namespace

std::vector<std::string> aot_images() {
  std::lock_guard<std::mutex> lock(g_aot_mutex);
  ModuleScan scan;
  dl_iterate_phdr(scan_module, &scan);
  if (scan.adds == g_aot_adds) return g_aot_names;
  g_aot_adds = scan.adds;
  for (const std::string& path : scan.candidates) {
    if (std::find(g_aot_checked.begin(), g_aot_checked.end(), path) != g_aot_checked.end()) continue;
    g_aot_checked.push_back(path);
    // Loaded already (RTLD_NOLOAD: nothing is loaded, the reference taken is given back at once): a
    // Mono AOT image exports its file info under this name (aot-runtime.c, MONO_AOT_FILE_INFO).
    if (void* h = dlopen(path.c_str(), RTLD_LAZY | RTLD_NOLOAD)) {
      const bool aot = dlsym(h, "mono_aot_file_info") != nullptr;
      dlclose(h);
      if (aot) g_aot_names.push_back(path.substr(path.rfind('/') + 1));
    }
  }
  return g_aot_names;
}

}  // namespace mlpd::hooks
