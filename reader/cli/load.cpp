#include "load.h"

#include <cstdio>
#include <memory>

#include "mlpd/input.h"
#include "follow.h"
#include "progress.h"

namespace mlpd::cli {

// The parallel build may need to read the files again (profile.h, BuildOptions::reopen): not stdin.
static void allow_parallel(profile::BuildOptions& o, const std::vector<std::string>& paths) {
  for (const std::string& path : paths)
    if (path == "-") return;
  o.reopen = [paths](size_t i) {
    std::string error;
    return i < paths.size() ? Input::open(paths[i], error) : nullptr;
  };
}

bool load_profile(const char* command, const std::string& path, profile::Profile& p, profile::Listener* listener,
                  bool& had_problems, unsigned jobs) {
  had_problems = false;
  std::string error;
  std::unique_ptr<Input> input = Input::open(path, error);
  if (!input) {
    std::fprintf(stderr, "mlpd %s: %s: cannot open: %s\n", command, path.c_str(), error.c_str());
    return false;
  }
  Progress progress(path);
  profile::BuildOptions o;
  o.listener = listener;
  o.progress = progress.callback();
  o.jobs = jobs;
  allow_parallel(o, {path});
  had_problems = !profile::build_profile(*input, p, o);
  progress.done();
  for (const Problem& pr : p.problems()) {
    std::fprintf(stderr, "%s: offset %llu (%s): %s\n", path.c_str(), static_cast<unsigned long long>(pr.offset),
                 pr.buffer < 0 ? "header" : ("buffer " + std::to_string(pr.buffer)).c_str(), pr.message.c_str());
  }
  if (p.problem_count() > p.problems().size())
    std::fprintf(stderr, "%s: ... %llu problems in all\n", path.c_str(),
                 static_cast<unsigned long long>(p.problem_count()));
  return true;
}

bool load_profile_follow(const char* command, const std::string& path, profile::Profile& p,
                         profile::Listener* listener, profile::BuildOptions o, bool& had_problems) {
  had_problems = false;
  std::string error;
  std::unique_ptr<FollowInput> input = FollowInput::open(path, 200, error);
  if (!input) {
    std::fprintf(stderr, "mlpd %s: %s: cannot open: %s\n", command, path.c_str(), error.c_str());
    return false;
  }
  o.listener = listener;
  had_problems = !profile::build_profile(*input, p, o);
  for (const Problem& pr : p.problems()) {
    std::fprintf(stderr, "%s: offset %llu (%s): %s\n", path.c_str(), static_cast<unsigned long long>(pr.offset),
                 pr.buffer < 0 ? "header" : ("buffer " + std::to_string(pr.buffer)).c_str(), pr.message.c_str());
  }
  if (had_problems && input->writer_gone())
    std::fprintf(stderr, "mlpd %s: %s: the writer (pid %d) has exited and left the file incomplete\n", command,
                 path.c_str(), input->writer_pid());
  else if (!p.header_ok())
    std::fprintf(stderr, "mlpd %s: %s: no complete file header appeared\n", command, path.c_str());
  return true;
}

bool load_profiles(const char* command, const std::vector<std::string>& paths, profile::Profile& p,
                   profile::Listener* listener, profile::BuildOptions o, bool& had_problems) {
  had_problems = false;
  std::vector<std::unique_ptr<Input>> inputs;
  std::vector<Input*> raw;
  for (const std::string& path : paths) {
    std::string error;
    inputs.push_back(Input::open(path, error));
    if (!inputs.back()) {
      std::fprintf(stderr, "mlpd %s: %s: cannot open: %s\n", command, path.c_str(), error.c_str());
      return false;
    }
    raw.push_back(inputs.back().get());
  }
  Progress progress(paths.size() == 1 ? paths[0] : paths[0] + " ...");
  o.listener = listener;
  o.progress = progress.callback();
  allow_parallel(o, paths);
  had_problems = !profile::build_profile(raw, p, o);
  progress.done();
  const std::string& name = paths.size() == 1 ? paths[0] : std::string("(" + std::to_string(paths.size()) + " files)");
  for (const Problem& pr : p.problems()) {
    std::fprintf(stderr, "%s: offset %llu (%s): %s\n", name.c_str(), static_cast<unsigned long long>(pr.offset),
                 pr.buffer < 0 ? "header" : ("buffer " + std::to_string(pr.buffer)).c_str(), pr.message.c_str());
  }
  if (p.problem_count() > p.problems().size())
    std::fprintf(stderr, "%s: ... %llu problems in all\n", name.c_str(),
                 static_cast<unsigned long long>(p.problem_count()));
  return true;
}

}  // namespace mlpd::cli
