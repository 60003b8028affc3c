// `mlpd --max-memory` (reader/cli/args.cpp, take_max_memory, called by main.cpp before the command
// parses its arguments): taken out of the arguments in its two forms anywhere after the command, not
// after `--`, the budget set; a bad size is one line and -1.
#include "mlpd_catch.h"

#include <string>
#include <vector>

#include "../../../../reader/cli/args.h"
#include "cli_run.h"
#include "mlpd/budget.h"

using namespace mlpd;
using namespace mlpd::test;
using mlpd_test::contains;

namespace {

struct Taken {
  int argc = 0;
  std::vector<std::string> left;  // argv[0..argc)
  uint64_t limit = 0;             // the budget's limit afterwards
  std::string err;
};

Taken take(std::vector<std::string> args) {
  const uint64_t before = process_budget().limit();
  args.insert(args.begin(), "mlpd");
  std::vector<char*> argv;
  for (std::string& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  Taken t;
  process_budget().set_limit(7);  // a value no case sets
  const CliRun r = run_cli([&](int, char**) { return cli::take_max_memory(static_cast<int>(args.size()), argv.data()); },
                           "x", {});
  t.argc = r.rc;
  t.err = r.err;
  for (int i = 0; i < t.argc; ++i) t.left.push_back(argv[static_cast<size_t>(i)]);
  t.limit = process_budget().limit();
  process_budget().set_limit(before);
  return t;
}

using V = std::vector<std::string>;

}  // namespace

TEST_CASE("take_max_memory: both forms anywhere after the command, the budget set", "[cli][args]") {
  Taken t = take({"verify", "a.mlpd", "--max-memory", "1G", "b.mlpd"});
  CHECK(t.argc == 4);
  CHECK(t.left == V{"mlpd", "verify", "a.mlpd", "b.mlpd"});
  CHECK(t.limit == (uint64_t{1} << 30));
  CHECK(t.err.empty());

  t = take({"report", "--max-memory=512M", "--json", "a.mlpd"});
  CHECK(t.left == V{"mlpd", "report", "--json", "a.mlpd"});
  CHECK(t.limit == (uint64_t{512} << 20));

  // The last one given wins.
  t = take({"dump", "--max-memory=1G", "x", "--max-memory", "2K"});
  CHECK(t.left == V{"mlpd", "dump", "x"});
  CHECK(t.limit == 2048);
}

TEST_CASE("take_max_memory: nothing taken after --, nor a --max-memory without its value", "[cli][args]") {
  Taken t = take({"verify", "--", "--max-memory=1G", "a"});
  CHECK(t.left == V{"mlpd", "verify", "--", "--max-memory=1G", "a"});
  CHECK(t.limit == 7);
  t = take({"verify", "a", "--max-memory"});
  CHECK(t.left == V{"mlpd", "verify", "a", "--max-memory"});
  CHECK(t.limit == 7);
  t = take({"verify", "a"});
  CHECK(t.left == V{"mlpd", "verify", "a"});
  CHECK(t.limit == 7);
}

TEST_CASE("take_max_memory: a bad size is one line naming it, and -1", "[cli][args]") {
  const Taken t = take({"verify", "a", "--max-memory=lots"});
  CHECK(t.argc == -1);
  CHECK(t.err == "mlpd: bad value in '--max-memory=lots': expected a size such as 512M or 2G\n");
  CHECK(t.limit == 7);
  const Taken u = take({"verify", "--max-memory", "", "a"});
  CHECK(u.argc == -1);
  CHECK_THAT(u.err, contains("'--max-memory=': expected a size"));
}
