// mlpd verify [--strict] [--json] FILE...
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "args.h"
#include "commands.h"
#include "mlpd/json.h"
#include "mlpd/budget.h"
#include "mlpd/checks.h"
#include "mlpd/decode_loop.h"
#include "mlpd/decoder.h"

namespace mlpd::cli {

namespace {

const char kHelp[] =
    "usage: mlpd verify [--strict] [--json] FILE...\n"
    "\n"
    "Decodes every buffer and event of each FILE (plain or gzip; - reads standard input) and checks\n"
    "header fields, buffer ids and lengths, event types and subtypes, enum values, LEB128 encodings,\n"
    "strings and reads past a buffer's end. Prints one line per problem:\n"
    "  FILE: offset N (buffer K): what is wrong\n"
    "and one summary line per valid file ('N threads writing events': the threads with buffers of their\n"
    "own; `mlpd report` counts these and also the threads only other threads' events name).\n"
    "Exit status: 0 when every file is valid, 1 otherwise.\n"
    "A gzip file cut inside its last member (a `zip` run killed while writing: the agent ends a\n"
    "member every flush round), or whose complete gzip data ends inside its last buffer (a kill inside\n"
    "a flush round of more than 32 MiB), is valid up to the cut: one 'warning:' line names the offsets,\n"
    "the events before it are checked, and the exit status stays 0.\n"
    "\n"
    "  --strict  also require every method, class, vtable and image that an event references to be\n"
    "            described by an earlier event of the file (what Mono's mprof-report needs)\n"
    "  --json    print one JSON object per file instead:\n"
    "            {\"file\", \"ok\", \"buffers\", \"threads\", \"threads_writing\" (both: the\n"
    "             threads writing events), \"counts\": {KIND: N}, \"errors\": [...], \"warnings\": [...]}\n";

class VerifyVisitor final : public Visitor {
 public:
  explicit VerifyVisitor(bool strict) : strict_(strict) {}

  void on_buffer(const BufferInfo& b) override { stats.add_buffer(b); }
  void on_event(const Event& e, const EventInfo& info) override {
    stats.add_event(e);
    if (strict_) {
      std::string r = checker_.check(e);
      if (!r.empty()) problems.push_back({info.offset, static_cast<int64_t>(info.buffer->index), std::move(r)});
    }
  }
  void on_problem(const Problem& p) override { problems.push_back(p); }
  void on_warning(const Problem& p) override { warnings.push_back(p); }

  FileStats stats;
  std::vector<Problem> problems;
  std::vector<Problem> warnings;

 private:
  bool strict_;
  ReferenceChecker checker_;
};

std::string where(const Problem& p) {
  std::string s = "offset " + std::to_string(p.offset);
  s += p.buffer < 0 ? " (header)" : " (buffer " + std::to_string(p.buffer) + ")";
  return s;
}

bool verify_file(const std::string& path, bool strict, bool json) {
  std::string open_error;
  std::unique_ptr<Input> input = Input::open(path, open_error);
  VerifyVisitor visitor(strict);
  DecodeSummary summary;
  if (!input) {
    visitor.problems.push_back({0, -1, "cannot open: " + open_error});
  } else {
    if (strict) {
      summary = decode(*input, visitor, read_options());  // the reference checks need file order
    } else {
      // Only the counts per kind are needed of the events: decoded on every core (decode_loop.h).
      summary = decode_counting(*input, visitor, read_options(), visitor.stats.counts);
    }
  }
  const bool ok = visitor.problems.empty();
  if (json) {
    std::string out = "{\"file\":" + json_string(path) + ",\"ok\":" + (ok ? "true" : "false") +
                      ",\"buffers\":" + std::to_string(visitor.stats.buffers) +
                      ",\"threads\":" + std::to_string(visitor.stats.threads.size()) +
                      ",\"threads_writing\":" + std::to_string(visitor.stats.threads.size()) + ",\"counts\":{";
    bool first = true;
    for (size_t k = 0; k < kEventKindCount; ++k) {
      if (!visitor.stats.counts[k]) continue;
      if (!first) out += ',';
      first = false;
      out += json_string(kEventKindNames[k]) + ":" + std::to_string(visitor.stats.counts[k]);
    }
    out += "},\"errors\":[";
    for (size_t i = 0; i < visitor.problems.size(); ++i) {
      const Problem& p = visitor.problems[i];
      if (i) out += ',';
      out += "{\"offset\":" + std::to_string(p.offset) + ",\"buffer\":" +
             (p.buffer < 0 ? std::string("null") : std::to_string(p.buffer)) +
             ",\"message\":" + json_string(p.message) + "}";
    }
    out += "],\"warnings\":[";
    for (size_t i = 0; i < visitor.warnings.size(); ++i) {
      const Problem& p = visitor.warnings[i];
      if (i) out += ',';
      out += "{\"offset\":" + std::to_string(p.offset) + ",\"buffer\":" +
             (p.buffer < 0 ? std::string("null") : std::to_string(p.buffer)) +
             ",\"message\":" + json_string(p.message) + "}";
    }
    out += "]}\n";
    std::fputs(out.c_str(), stdout);
  } else {
    for (const Problem& p : visitor.problems) {
      std::printf("%s: %s: %s\n", path.c_str(), where(p).c_str(), p.message.c_str());
    }
    for (const Problem& p : visitor.warnings) {
      std::printf("%s: warning: %s: %s\n", path.c_str(), where(p).c_str(), p.message.c_str());
    }
    if (ok) {
      std::printf("%s: ok: %llu buffers, %llu events, %zu threads writing events, %llu bytes%s%s\n", path.c_str(),
                  static_cast<unsigned long long>(summary.buffers),
                  static_cast<unsigned long long>(summary.events), visitor.stats.threads.size(),
                  static_cast<unsigned long long>(summary.bytes), strict ? " (strict)" : "",
                  summary.truncated ? " up to the truncation" : "");
    }
  }
  return ok;
}

}  // namespace

int cmd_verify(int argc, char** argv) {
  bool strict = false, json = false;
  std::vector<std::string> files;
  if (const int rc = parse_args(argc, argv, "verify", kHelp, {{"--strict", &strict}, {"--json", &json}}, files);
      rc >= 0)
    return rc;
  bool all_ok = true;
  for (const std::string& f : files) all_ok &= verify_file(f, strict, json);
  std::fflush(stdout);
  return all_ok ? 0 : 1;
}

}  // namespace mlpd::cli
