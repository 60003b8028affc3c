// mlpd dump [--json] FILE
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "commands.h"
#include "mlpd/budget.h"
#include "mlpd/decoder.h"
#include "args.h"
#include "dump_format.h"
#include "out_buffer.h"

namespace mlpd::cli {

namespace {

const char kHelp[] =
    "usage: mlpd dump [--json] FILE\n"
    "\n"
    "Prints everything in FILE (plain or gzip; - reads standard input): the file header, one line per\n"
    "buffer header and one line per event, in file order. Pointers, objects and methods are printed\n"
    "in hex, followed by their name once an earlier event of the file has described them (method_jit,\n"
    "class_load, vtable_load, image_load, assembly_load, domain_name, thread_name); Mono files contain\n"
    "forward references, which stay bare pointers. Event lines start with the absolute time in ns,\n"
    "the time in seconds relative to the first buffer's time_base (what mprof-report calls startup),\n"
    "and the buffer's thread id (with its name once a thread_name event has named it):\n"
    "  TIME +SECONDS THREAD [\"THREAD NAME\"] KIND FIELD=VALUE...\n"
    "Backtraces are listed outermost frame first, sample frames innermost first (file order).\n"
    "Problems are printed where they occur, as in 'mlpd verify':\n"
    "  offset N (buffer K): what is wrong\n"
    "Buffers are formatted on every core and written in file order (the environment variable\n"
    "MLPD_DUMP_THREADS=N sets the number of threads; 1, --max-memory below 256M and gzip input\n"
    "format on one);\n"
    "the output is the same.\n"
    "Exit status: 0 when the file is valid, 1 when a problem was found or FILE cannot be read,\n"
    "2 for bad usage.\n"
    "\n"
    "  --json  JSON Lines instead: {\"header\":{...}}, then {\"buffer\":{...}} per buffer,\n"
    "          {\"time\",\"seconds\",\"thread\",\"kind\",FIELDS...,\"buffer\",\"offset\"} per event and\n"
    "          {\"error\":{\"offset\",\"buffer\",\"message\"}} per problem. Pointers are strings \"0x...\"\n"
    "          (exact in JavaScript); names go in *_name fields when known.\n";

// Worker threads for `mlpd dump`: MLPD_DUMP_THREADS (0 or 1: one thread; tests use it), else one
// per core; one thread under a memory budget below 256 MiB (the workers' text takes up to 4 MiB per
// job) and on one core.
unsigned dump_threads(const DecodeOptions& opt) {
  if (const char* e = std::getenv("MLPD_DUMP_THREADS"); e && *e) {
    const unsigned long n = std::strtoul(e, nullptr, 10);
    return static_cast<unsigned>(std::min<unsigned long>(n, 64));
  }
  if (opt.budget && opt.budget->limit() != 0 && opt.budget->limit() < (uint64_t{256} << 20)) return 1;
  return std::thread::hardware_concurrency();
}

}  // namespace

int cmd_dump(int argc, char** argv) {
  bool json = false;
  std::vector<std::string> files;
  if (const int rc = parse_args(argc, argv, "dump", kHelp, {{"--json", &json}}, files); rc >= 0) return rc;
  if (files.size() > 1) {
    std::fprintf(stderr, "mlpd dump: only one FILE can be dumped at a time (try 'mlpd dump --help')\n");
    return 2;
  }
  std::string open_error;
  struct stat st {};
  if (files[0] != "-" && ::stat(files[0].c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    std::fprintf(stderr, "mlpd dump: cannot open '%s': %s\n", files[0].c_str(), std::strerror(EISDIR));
    return 1;
  }
  std::unique_ptr<Input> input = Input::open(files[0], open_error);
  if (!input) {
    std::fprintf(stderr, "mlpd dump: cannot open '%s': %s\n", files[0].c_str(), open_error.c_str());
    return 1;
  }
  OutBuffer out(stdout);
  const DecodeOptions opt = read_options();
  // The most text a worker writes for one buffer; MLPD_DUMP_JOB_TEXT=BYTES (tests) makes it smaller.
  size_t job_text = kDumpJobText;
  if (const char* e = std::getenv("MLPD_DUMP_JOB_TEXT"); e && *e) {
    job_text = std::clamp<size_t>(std::strtoul(e, nullptr, 10), 1, job_text);
  }
  const uint64_t problems = dump_file(*input, out, json, opt, dump_threads(opt), job_text);
  out.flush();
  if (std::fflush(stdout) != 0 || out.failed()) {
    std::fprintf(stderr, "mlpd dump: cannot write the output: %s\n", std::strerror(errno));
    return 1;
  }
  return problems ? 1 : 0;
}

}  // namespace mlpd::cli
