// The CLI's one argument parser (reader/cli/args.h): what report, export and diff give it, and what
// it does with flags, values, `--`, --help, files and the first usage error.
#include "mlpd_catch.h"

#include <string>
#include <vector>

#include "../../../../reader/cli/args.h"
#include "../../../../reader/cli/window.h"

using namespace mlpd;
using namespace mlpd::cli;

namespace {

struct Argv {
  explicit Argv(std::vector<std::string> a) : args(std::move(a)) {
    args.insert(args.begin(), "mlpd-cmd");
    for (std::string& s : args) ptrs.push_back(s.data());
  }
  int argc() const { return static_cast<int>(ptrs.size()); }
  char** argv() { return ptrs.data(); }
  std::vector<std::string> args;
  std::vector<char*> ptrs;
};

struct Parsed {
  int rc = 0;
  bool json = false;
  std::string out, size;
  profile::What what = profile::What::cpu;
  bool what_given = false;
  profile::WindowBound from;
  std::vector<std::string> files;
};

Parsed parse(std::vector<std::string> args) {
  Parsed p;
  Argv a(std::move(args));
  p.rc = parse_command(a.argc(), a.argv(), "test", "help text\n",
                       {{"--json", nullptr, &p.json},
                        {"--output", "-o", nullptr,
                         [&](const std::string& v) {
                           p.out = v;
                           return std::string();
                         }},
                        {"--size", nullptr, nullptr,
                         [&](const std::string& v) { return v == "bad" ? std::string("bad size") : (p.size = v, std::string()); },
                         true},
                        what_option(p.what, p.what_given), window_option("--from", p.from)},
                       p.files);
  return p;
}

}  // namespace

TEST_CASE("parse_command: flags, values, aliases, NAME=VALUE where allowed, files in order", "[args]") {
  const Parsed p = parse({"a.mlpd", "--json", "-o", "x.html", "--size=4K", "--what", "alloc", "--from", "1.5", "-", "b"});
  CHECK(p.rc == -1);
  CHECK(p.json);
  CHECK(p.out == "x.html");
  CHECK(p.size == "4K");
  CHECK(p.what == profile::What::alloc);
  CHECK(p.what_given);
  CHECK(p.from.kind == profile::WindowBound::Kind::offset);
  CHECK(p.files == std::vector<std::string>{"a.mlpd", "-", "b"});
  CHECK(parse({"--size", "1M"}).size == "1M");
  CHECK(parse({"--output=x"}).rc == 2);  // NAME=VALUE only where the option allows it
}

TEST_CASE("parse_command: --, --help, and the first usage error", "[args]") {
  const Parsed dashes = parse({"--", "--json", "-o"});
  CHECK(dashes.rc == -1);
  CHECK_FALSE(dashes.json);
  CHECK(dashes.files == std::vector<std::string>{"--json", "-o"});
  CHECK(parse({"--help", "--bogus"}).rc == 0);
  CHECK(parse({"-h"}).rc == 0);
  CHECK(parse({"--bogus"}).rc == 2);
  CHECK(parse({"-o"}).rc == 2);                 // needs a value
  CHECK(parse({"--size", "bad"}).rc == 2);      // the option's own check
  CHECK(parse({"--what", "nothing"}).rc == 2);
  CHECK(parse({"--from", "soon"}).rc == 2);
  const Parsed first = parse({"--json", "--bogus", "--help"});  // stops at the first error
  CHECK(first.rc == 2);
  CHECK(first.json);
  CHECK(parse({}).rc == -1);  // no file: the command's to say
}

TEST_CASE("args: two values, a missing value left to the option, --jobs", "[args]") {
  std::string first, second, given = "unset";
  unsigned jobs = 7;
  auto run = [&](std::vector<std::string> args) {
    first = second = "";
    given = "unset";
    Argv a(std::move(args));
    std::vector<std::string> files;
    Option pair{"--diff", nullptr, nullptr, {}, false};
    pair.take2 = [&](const std::string& x, const std::string& y) {
      first = x;
      second = y;
      return x.empty() || y.empty() ? std::string("--diff needs two") : std::string();
    };
    pair.missing_empty = true;
    Option lenient{"--max", nullptr, nullptr, [&](const std::string& v) {
                     given = v;
                     return v.empty() ? std::string("--max needs a number") : std::string();
                   },
                   true};
    lenient.missing_empty = true;
    return parse_command(a.argc(), a.argv(), "test", "help\n", {pair, lenient, jobs_option(jobs)}, files);
  };
  CHECK(run({"--diff", "0", "1", "f"}) == -1);
  CHECK((first == "0" && second == "1"));
  CHECK(run({"--diff", "0"}) == 2);  // missing: the option's own message
  CHECK(first.empty());
  CHECK(run({"--max"}) == 2);
  CHECK(given.empty());
  CHECK(run({"--max=3"}) == -1);
  CHECK(given == "3");
  CHECK(run({"--jobs", "3"}) == -1);
  CHECK(jobs == 3);
  CHECK(run({"-j", "1"}) == -1);
  CHECK(jobs == 1);
  CHECK(run({"--jobs=2"}) == -1);
  CHECK(jobs == 2);
  CHECK(run({"--jobs", "0"}) == 2);
  CHECK(run({"--jobs", "x"}) == 2);
  CHECK(run({"--jobs", "257"}) == 2);
  CHECK(jobs == 2);
  CHECK(default_jobs() >= 1);
}
