#include "args.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <string_view>
#include <thread>

#include "mlpd/budget.h"

namespace mlpd::cli {

unsigned default_jobs() { return std::max(1u, std::thread::hardware_concurrency()); }

Option jobs_option(unsigned& jobs) {
  return Option{"--jobs", "-j", nullptr,
                [&jobs](const std::string& v) {
                  unsigned n = 0;
                  const auto r = std::from_chars(v.data(), v.data() + v.size(), n);
                  if (r.ec != std::errc() || r.ptr != v.data() + v.size() || n == 0 || n > 256)
                    return "--jobs needs a number of threads from 1 to 256, not '" + v + "'";
                  jobs = n;
                  return std::string();
                },
                true};
}

int usage_error(const char* command, const std::string& message) {
  std::fprintf(stderr, "mlpd %s: %s (try 'mlpd %s --help')\n", command, message.c_str(), command);
  return 2;
}

ArgumentWalk walk_arguments(int argc, char** argv, const std::vector<Option>& options, std::vector<std::string>& files,
                            bool survey) {
  ArgumentWalk w;
  auto error = [&w](std::string message) {
    w.end = ArgumentWalk::End::error;
    w.error = std::move(message);
    return w;
  };
  bool options_done = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (options_done || a == "-" || a.empty() || a[0] != '-') {
      files.push_back(a);
      continue;
    }
    if (a == "--") {
      options_done = true;
      continue;
    }
    if (a == "--help" || a == "-h") {
      w.help = true;
      if (survey) continue;
      w.end = ArgumentWalk::End::help;
      return w;
    }
    const Option* found = nullptr;
    std::string value;
    bool has_value = false;
    for (const Option& o : options) {
      if (a == o.name || (o.alias && a == o.alias)) {
        found = &o;
        break;
      }
      const std::string prefix = std::string(o.name) + "=";
      if (o.joined && o.take && a.rfind(prefix, 0) == 0) {
        found = &o;
        value = a.substr(prefix.size());
        has_value = true;
        break;
      }
    }
    if (!found && survey) continue;
    if (!found) return error("unknown option '" + a + "'");
    if (found->flag) {
      *found->flag = true;
      continue;
    }
    if (found->take2) {
      std::string first, second;
      if (i + 2 < argc) {
        first = argv[++i];
        second = argv[++i];
      } else if (!found->missing_empty) {
        return error(a + " needs two values");
      }
      const std::string message = found->take2(first, second);
      if (!message.empty()) return error(message);
      continue;
    }
    if (!has_value) {
      if (i + 1 < argc)
        value = argv[++i];
      else if (!found->missing_empty)
        return error(a + " needs a value");
    }
    const std::string message = found->take(value);
    if (!message.empty()) return error(message);
  }
  return w;
}

int parse_command(int argc, char** argv, const char* command, const std::string& help,
                  const std::vector<Option>& options, std::vector<std::string>& files) {
  const ArgumentWalk w = walk_arguments(argc, argv, options, files);
  if (w.end == ArgumentWalk::End::help) {
    std::fputs(help.c_str(), stdout);
    return 0;
  }
  if (w.end == ArgumentWalk::End::error) return usage_error(command, w.error);
  return -1;
}

int parse_args(int argc, char** argv, const char* command, const char* help, std::initializer_list<Flag> flags,
               std::vector<std::string>& files, bool need_file) {
  std::vector<Option> options;
  for (const Flag& f : flags) options.push_back(Option{f.name, nullptr, f.value, {}, false});
  const int status = parse_command(argc, argv, command, help, options, files);
  if (status >= 0) return status;
  if (need_file && files.empty()) return usage_error(command, "no FILE given");
  return -1;
}

int take_max_memory(int argc, char** argv) {
  int n = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--") {
      while (i < argc) argv[n++] = argv[i++];
      break;
    }
    std::string_view value;
    if (a.rfind("--max-memory=", 0) == 0) {
      value = a.substr(13);
    } else if (a == "--max-memory" && i + 1 < argc) {
      value = argv[++i];
    } else {
      argv[n++] = argv[i];
      continue;
    }
    uint64_t bytes = 0;
    if (!parse_size(value, bytes)) {
      std::fprintf(stderr, "mlpd: bad value in '--max-memory=%.*s': expected a size such as 512M or 2G\n",
                   static_cast<int>(value.size()), value.data());
      return -1;
    }
    process_budget().set_limit(bytes);
  }
  return n;
}

}  // namespace mlpd::cli
