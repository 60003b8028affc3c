// CoreCLR's entry points of libmlpd.so (docs/dotnet.md, "Loading"):
//  * CORECLR_ENABLE_PROFILING=1 CORECLR_PROFILER={9F52A29B-F34A-4AC8-BF3A-ED27D2C3114B}
//    CORECLR_PROFILER_PATH=/path/libmlpd.so: the runtime dlopens the library and calls
//    DllGetClassObject (exported here), then the profiler object's Initialize (profiler.cpp), which
//    starts the agent with MLPD_OPTIONS (defaults when unset).
//  * LD_PRELOAD=libmlpd.so MLPD_OPTIONS=... in a .NET host (`dotnet`, an apphost): the ELF constructor
//    below sets those three variables when they are unset, before the host starts the runtime, which
//    then loads this same library as above. It does nothing when another profiler is configured
//    (`verbose` says why), nothing in Mono (Mono's own constructor, runtime-hooks/src/mono/entry.cpp,
//    starts the agent there) and nothing in a process that is neither.
#include <dlfcn.h>
#include <limits.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "coreclr/preload_env.h"
#include "coreclr/profiler.h"
#include "coreclr/start.h"

namespace {

// One line on stderr (the constructor runs before the agent's own output exists).
void say_line(const std::string& line) {
  const std::string text = "mlpd: " + line + "\n";
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(2, text.data() + done, text.size() - done);
    if (n <= 0) break;  // EINTR or a closed stderr: the line is not worth a retry loop
    done += static_cast<size_t>(n);
  }
}

// Whether the option string asks for `verbose` (the item alone; a full parse happens at Initialize,
// where a bad option is reported once).
bool wants_verbose(std::string_view options) {
  for (size_t pos = 0; pos <= options.size();) {
    size_t end = options.find(',', pos);
    if (end == std::string_view::npos) end = options.size();
    if (options.substr(pos, end - pos) == "verbose") return true;
    pos = end + 1;
  }
  return false;
}

}  // namespace

__attribute__((constructor)) static void mlpd_coreclr_preload_constructor() {
  const char* opts = std::getenv("MLPD_OPTIONS");
  // Without MLPD_OPTIONS the preload does nothing (as on Mono); in Mono, Mono's constructor starts.
  if (!opts || dlsym(RTLD_DEFAULT, "mono_profiler_create")) return;
  // Loaded by the runtime itself (CORECLR_PROFILER_PATH): the variables did their work already.
  if (void* coreclr = dlopen("libcoreclr.so", RTLD_LAZY | RTLD_NOLOAD)) {
    dlclose(coreclr);
    return;
  }
  char exe[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return;
  exe[n] = 0;
  if (!mlpd::coreclr::is_dotnet_host(exe)) return;  // neither Mono nor .NET: nothing at all
  Dl_info self{};
  char path[PATH_MAX];
  if (!dladdr(reinterpret_cast<void*>(&mlpd_coreclr_preload_constructor), &self) || !self.dli_fname ||
      !::realpath(self.dli_fname, path))
    return;
  const mlpd::coreclr::PreloadResult r = mlpd::coreclr::configure_preload(
      path, [](const char* name) { return static_cast<const char*>(std::getenv(name)); },
      [](const char* name, const char* value) { ::setenv(name, value, 1); });
  if (wants_verbose(opts)) say_line(r.note);
}

// The runtime's way in: the class factory for mlpd's CLSID. (REFCLSID and REFIID are references:
// pointers in the ABI.)
extern "C" __attribute__((visibility("default"))) mlpd::coreclr::HRESULT DllGetClassObject(
    const mlpd::coreclr::Guid* clsid, const mlpd::coreclr::Guid* iid, void** out) {
  mlpd::coreclr::set_start(&mlpd::coreclr::start_agent, &mlpd::coreclr::shutdown_agent);
  mlpd::coreclr::set_attach(&mlpd::coreclr::attach_agent, &mlpd::coreclr::attach_complete);
  return mlpd::coreclr::get_class_object(clsid, iid, out);
}
