#include "coreclr/preload_env.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "coreclr/profiler.h"

namespace mlpd::coreclr {

bool is_dotnet_host(const char* exe_path) {
  if (!exe_path) return false;
  const std::string_view path(exe_path);
  const size_t slash = path.rfind('/');
  if ((slash == std::string_view::npos ? path : path.substr(slash + 1)) == "dotnet") return true;
  // An apphost dlopens libhostfxr.so by name: the name is in its file. Read in chunks, each keeping
  // the previous chunk's last bytes so a name cut by a chunk boundary is still found. No allocation
  // (this runs in an ELF constructor, in every process the environment reaches).
  static constexpr char kMark[] = "libhostfxr.so";
  static constexpr size_t kMarkLen = sizeof kMark - 1;
  static constexpr size_t kLimit = size_t{16} << 20;
  const int fd = ::open(exe_path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  static char buf[65536 + kMarkLen];
  size_t kept = 0, total = 0;
  bool found = false;
  while (!found && total < kLimit) {
    const ssize_t n = ::read(fd, buf + kept, sizeof buf - kept);
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (n == 0) break;
    total += static_cast<size_t>(n);
    const size_t have = kept + static_cast<size_t>(n);
    found = ::memmem(buf, have, kMark, kMarkLen) != nullptr;
    kept = have < kMarkLen - 1 ? have : kMarkLen - 1;
    std::memmove(buf, buf + have - kept, kept);
  }
  ::close(fd);
  return found;
}

bool is_mlpd_clsid(std::string_view value) {
  Guid g{};
  return parse_guid(value, g) && g == kMlpdClsid;
}

}  // namespace mlpd::coreclr
