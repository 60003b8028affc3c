// What /proc says of a process `mlpd attach` and `mlpd detach` target (attach_proc.h).
#include "attach_proc.h"

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <string>
#include <vector>

namespace mlpd::cli::attach_proc {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool alive(long pid) { return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM; }

// The NUL-separated words of /proc/PID/FILE.
std::vector<std::string> proc_words(long pid, const char* file) {
  const std::string text = read_file("/proc/" + std::to_string(pid) + "/" + file);
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t end = text.find('\0', pos);
    out.push_back(text.substr(pos, end == std::string::npos ? std::string::npos : end - pos));
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  return out;
}

bool is_mono(long pid) {
  const std::string maps = read_file("/proc/" + std::to_string(pid) + "/maps");
  if (maps.find("libmonosgen-2.0") != std::string::npos || maps.find("libmono-2.0") != std::string::npos) return true;
  char exe[4096];
  const ssize_t n = readlink(("/proc/" + std::to_string(pid) + "/exe").c_str(), exe, sizeof exe - 1);
  if (n <= 0) return false;
  exe[n] = 0;
  const char* base = std::strrchr(exe, '/');
  base = base ? base + 1 : exe;
  return std::strncmp(base, "mono", 4) == 0;  // mono, mono-sgen: the runtime linked in
}

// `--attach=disable` among the runtime's options (before the assembly) or in MONO_ENV_OPTIONS.
bool attach_disabled(long pid) {
  const std::vector<std::string> args = proc_words(pid, "cmdline");
  for (size_t i = 1; i < args.size() && !args[i].empty() && args[i][0] == '-'; ++i) {
    if (args[i] == "--attach=disable") return true;
  }
  for (const std::string& e : proc_words(pid, "environ")) {
    if (e.rfind("MONO_ENV_OPTIONS=", 0) == 0 && e.find("--attach=disable") != std::string::npos) return true;
  }
  return false;
}

// A thread of our agent: the process is profiled already (LD_PRELOAD, --profile=mlpd or an attach).
bool profiled(long pid) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  DIR* d = opendir(dir.c_str());
  if (!d) return false;
  bool found = false;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::string comm = read_file(dir + "/" + e->d_name + "/comm");
    if (comm.rfind("mlpd-helper", 0) == 0) found = true;
  }
  closedir(d);
  return found;
}

namespace {

// Whether `sig` is set in any of the signal masks of /proc/PID/status named in `fields` (7 characters each,
// "SigPnd:" and the like).
bool status_mask_has(long pid, int sig, std::initializer_list<const char*> fields) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  const uint64_t bit = uint64_t{1} << (sig - 1);
  while (std::getline(in, line)) {
    for (const char* f : fields) {
      if (line.rfind(f, 0) == 0 && (std::strtoull(line.c_str() + 7, nullptr, 16) & bit)) return true;
    }
  }
  return false;
}

}  // namespace

bool signal_pending(long pid, int sig) { return status_mask_has(pid, sig, {"ShdPnd:", "SigPnd:"}); }

bool signal_caught(long pid, int sig) { return status_mask_has(pid, sig, {"SigCgt:"}); }

double process_start(long pid) {
  const std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(stat.substr(close + 2));
  std::string f;
  for (int i = 3; i <= 22 && fields >> f; ++i) {
    if (i == 22) {
      std::istringstream boot(read_file("/proc/stat"));
      std::string word;
      double btime = 0;
      while (boot >> word) {
        if (word == "btime") {
          boot >> btime;
          break;
        }
      }
      return btime + std::strtod(f.c_str(), nullptr) / static_cast<double>(sysconf(_SC_CLK_TCK));
    }
  }
  return 0;
}

}  // namespace mlpd::cli::attach_proc
