// mlpd push [--label K=V]... [--token-file FILE] [--tenant ID] [--timeout S] URL FILE...: each FILE's
// profiles (one per kind it holds: CPU samples, allocations, exceptions, contentions, calls) as gzipped
// pprof, made by the pprof exporter, sent to a Pyroscope-compatible server's HTTP ingest API
// (docs/fleet.md, "mlpd push"): POST URL/ingest?name=SERVICE{labels}&from=&until=&format=pprof with a
// multipart body whose "profile" part is the pprof, as Pyroscope's own clients send it.
#if !MLPD_PUSH_CURL
// Built without libcurl (reader/CMakeLists.txt): the command says so.
#include <cstdio>

#include "commands.h"

namespace mlpd::cli {
int cmd_push(int, char**) {
  std::fprintf(stderr, "mlpd push: this mlpd was built without libcurl (libcurl4-openssl-dev): not available\n");
  return 1;
}
}  // namespace mlpd::cli
#else
#include "mlpd/curl_api.h"
#include <dlfcn.h>
#include <sys/stat.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "args.h"
#include "commands.h"
#include "load.h"
#include "mlpd/views.h"

namespace mlpd::cli {

namespace {

constexpr const char* kCmd = "push";

const std::string kHelp =
    "usage: mlpd push [--label K=V]... [--token-file FILE] [--tenant ID] [--timeout S] [--jobs N]\n"
    "                 URL FILE...\n"
    "\n"
    "Sends the profiles in each FILE (plain or gzip; rotated files one by one) to a Pyroscope-\n"
    "compatible server at URL (http:// or https://; '/ingest' is added unless URL ends in it), with\n"
    "its HTTP ingest API: one request per kind of profile the file holds (CPU samples, allocations,\n"
    "exceptions, monitor contentions, calls), each a gzipped pprof as 'mlpd export' writes it,\n"
    "covering the file's time (from its first to its last event).\n"
    "\n"
    "Labels: service_name is the program's name from the file (its .exe or .dll without the\n"
    "ending; 'unknown_service' when the file names none), pid the process id in the file, runtime\n"
    "'mono' or 'coreclr' when the file tells; --label adds or replaces any of them.\n"
    "\n"
    "options:\n"
    "  --label K=V       a label on every profile (repeatable); K: letters, digits and '_', not\n"
    "                    starting with a digit; V: printable, without , = { } \" or spaces.\n"
    "                    e.g. --label host=$(hostname) --label env=staging\n"
    "  --token-file FILE send 'Authorization: Bearer TOKEN', TOKEN being FILE's first line (a\n"
    "                    token is never given on the command line, where ps shows it)\n"
    "  --tenant ID       send 'X-Scope-OrgID: ID' (Pyroscope's multi-tenant mode)\n"
    "  --timeout S       give up on a request after S seconds (default 30)\n"
    "  --jobs N, -j N    read each file on N threads (default: one per core)\n"
    "\n"
    "What is sent is printed on standard output, one line per profile. The first request that\n"
    "fails (no connection, TLS, timeout, or an answer other than 2xx) stops the command with one\n"
    "line naming the file, the profile and the reason (the server's status and the start of its\n"
    "answer); the files before it were sent.\n"
    "\n"
    "Exit status: 0 every profile sent, 1 a request failed or a FILE has problems (what could be\n"
    "read is sent), 2 bad usage.\n";

int usage_error(const std::string& m) { return cli::usage_error(kCmd, m); }

// libcurl, loaded (mlpd/curl_api.h) by this command only: the other commands do not map it and its
// TLS library (6 MiB of resident memory at start, which the reader's memory budget would count).
curl_api::Curl g_curl;

bool load_curl(std::string& error) { return curl_api::load(g_curl, error); }

bool label_name_ok(std::string_view k) {
  if (k.empty() || (k[0] >= '0' && k[0] <= '9')) return false;
  for (char c : k)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}

// Pyroscope's name syntax, APP{k=v,k=v}, has no quoting: a value cannot hold its separators.
bool label_value_ok(std::string_view v) {
  if (v.empty()) return false;
  for (unsigned char c : v)
    if (c <= ' ' || c == 0x7f || c == ',' || c == '=' || c == '{' || c == '}' || c == '"') return false;
  return true;
}

// A value made from the file (a program's name): the characters a label value cannot hold become '_'.
std::string label_safe(std::string_view v) {
  std::string s(v);
  for (char& c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= ' ' || u == 0x7f || c == ',' || c == '=' || c == '{' || c == '}' || c == '"') c = '_';
  }
  return s;
}

std::string service_from(const std::string& program) {
  std::string base = program;
  if (const size_t s = base.find_last_of("/\\"); s != std::string::npos) base = base.substr(s + 1);
  for (const char* ext : {".exe", ".dll"}) {
    const size_t n = std::strlen(ext);
    if (base.size() > n && base.compare(base.size() - n, n, ext) == 0) base.resize(base.size() - n);
  }
  return base.empty() ? std::string("unknown_service") : label_safe(base);
}

// The runtime, when the file tells: a native frame in CoreCLR's or Mono's own libraries, else the
// program's ending (.NET runs a .dll, Mono an .exe).
std::string runtime_of(const profile::Profile& p) {
  for (const auto& f : p.frames()) {
    if (f.module.find("libcoreclr.so") != std::string::npos || f.module.find("libclrjit.so") != std::string::npos)
      return "coreclr";
    if (f.module.find("libmono") != std::string::npos) return "mono";
  }
  const std::string& prog = p.program();
  auto ends = [&](std::string_view e) {
    return prog.size() > e.size() && prog.compare(prog.size() - e.size(), e.size(), e) == 0;
  };
  if (ends(".dll")) return "coreclr";
  if (ends(".exe")) return "mono";
  return {};
}

// One kind of profile per request, named as Pyroscope's clients name its sample types.
struct Kind {
  profile::What what;
  const char* name;  // printed
};
constexpr Kind kKinds[] = {
    {profile::What::cpu, "cpu"},
    {profile::What::alloc, "alloc"},
    {profile::What::exceptions, "exceptions"},
    {profile::What::monitor, "monitor"},
    {profile::What::calls, "calls"},
};

// Pyroscope's sample type configuration (the "sample_type_config" part): our profiles are deltas
// (each covers its own time), so none is cumulative, which Pyroscope's defaults assume of
// alloc_objects/alloc_space and contentions.
constexpr const char* kSampleTypeConfig =
    "{\"samples\":{\"units\":\"samples\",\"display-name\":\"cpu\",\"sampled\":true},"
    "\"alloc_objects\":{\"units\":\"objects\"},\"alloc_space\":{\"units\":\"bytes\"},"
    "\"exceptions\":{\"units\":\"objects\",\"display-name\":\"exceptions\"},"
    "\"contentions\":{\"units\":\"lock_samples\",\"display-name\":\"mutex_count\"},"
    "\"calls\":{\"units\":\"objects\",\"display-name\":\"calls\"},"
    "\"self\":{\"units\":\"samples\",\"display-name\":\"calls_self_ns\"}}";

size_t collect(char* data, size_t size, size_t n, void* to) {
  auto* s = static_cast<std::string*>(to);
  const size_t bytes = size * n;
  if (s->size() < 4096) s->append(data, std::min(bytes, 4096 - s->size()));  // the start of the answer
  return bytes;
}

struct Target {
  std::string ingest;  // URL ending in /ingest
  std::string token, tenant;
  long timeout_s = 30;
};

// POSTs one profile; returns "" when the server answered 2xx, else the reason in one line.
std::string post(const Target& t, const std::string& query, const std::string& pprof_gz) {
  std::unique_ptr<CURL, void (*)(CURL*)> curl(g_curl.easy_init(), g_curl.easy_cleanup);
  if (!curl) return "libcurl could not start a request";
  const std::string url = t.ingest + "?" + query;
  CURL* c = curl.get();
  g_curl.easy_setopt(c, CURLOPT_URL, url.c_str());
  g_curl.easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  g_curl.easy_setopt(c, CURLOPT_TIMEOUT, t.timeout_s);
  g_curl.easy_setopt(c, CURLOPT_CONNECTTIMEOUT, std::min(t.timeout_s, 10L));
  g_curl.easy_setopt(c, CURLOPT_USERAGENT, "mlpd/" MLPD_VERSION);
  g_curl.easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  std::unique_ptr<curl_mime, void (*)(curl_mime*)> mime(g_curl.mime_init(c), g_curl.mime_free);
  curl_mimepart* part = g_curl.mime_addpart(mime.get());
  g_curl.mime_name(part, "profile");
  g_curl.mime_filename(part, "profile.pprof");
  g_curl.mime_type(part, "application/octet-stream");
  g_curl.mime_data(part, pprof_gz.data(), pprof_gz.size());
  part = g_curl.mime_addpart(mime.get());
  g_curl.mime_name(part, "sample_type_config");
  g_curl.mime_filename(part, "sample_type_config.json");
  g_curl.mime_type(part, "application/json");
  g_curl.mime_data(part, kSampleTypeConfig, CURL_ZERO_TERMINATED);
  g_curl.easy_setopt(c, CURLOPT_MIMEPOST, mime.get());
  curl_slist* headers = nullptr;
  if (!t.token.empty()) headers = g_curl.slist_append(headers, ("Authorization: Bearer " + t.token).c_str());
  if (!t.tenant.empty()) headers = g_curl.slist_append(headers, ("X-Scope-OrgID: " + t.tenant).c_str());
  headers = g_curl.slist_append(headers, "Expect:");  // no 100-continue round trip
  std::unique_ptr<curl_slist, void (*)(curl_slist*)> hold(headers, g_curl.slist_free_all);
  g_curl.easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  std::string answer;
  g_curl.easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
  g_curl.easy_setopt(c, CURLOPT_WRITEDATA, &answer);
  char errbuf[CURL_ERROR_SIZE] = {};
  g_curl.easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
  const CURLcode rc = g_curl.easy_perform(c);
  if (rc != CURLE_OK) return std::string(errbuf[0] ? errbuf : g_curl.easy_strerror(rc));
  long status = 0;
  g_curl.easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  if (status >= 200 && status < 300) return {};
  // The start of the server's answer, on one line.
  std::string body;
  for (char ch : answer) {
    if (body.size() >= 200) {
      body += "...";
      break;
    }
    body += (ch == '\n' || ch == '\r' || ch == '\t') ? ' ' : ch;
  }
  while (!body.empty() && body.back() == ' ') body.pop_back();
  return "the server answered " + std::to_string(status) + (body.empty() ? "" : ": " + body);
}

std::string url_encode(CURL* c, const std::string& s) {
  char* e = g_curl.easy_escape(c, s.data(), static_cast<int>(s.size()));
  std::string r = e ? e : "";
  g_curl.free(e);
  return r;
}

bool read_token(const std::string& path, std::string& token, std::string& error) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) {
    error = "cannot read --token-file " + path + ": " + std::strerror(errno);
    return false;
  }
  char buf[8192];
  const size_t n = std::fread(buf, 1, sizeof buf, f);
  std::fclose(f);
  std::string_view s(buf, n);
  s = s.substr(0, s.find('\n'));
  while (!s.empty() && (s.back() == '\r' || s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  if (s.empty()) {
    error = "--token-file " + path + " holds no token (its first line is empty)";
    return false;
  }
  for (unsigned char ch : s)
    if (ch < ' ' || ch == 0x7f) {
      error = "--token-file " + path + ": the token has control characters";
      return false;
    }
  token.assign(s);
  return true;
}

}  // namespace

// Pyroscope's /ingest URL from what the user gave (http[s]://HOST[:PORT][/PATH], no query); "" with
// the usage error in `why`.
std::string ingest_url(std::string url, std::string& why) {
  if (url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0) {
    why = "bad URL '" + url + "': expected http://HOST[:PORT][/PATH] or https://...";
    return {};
  }
  const size_t host_at = url.find("://") + 3;
  if (host_at >= url.size() || url[host_at] == '/' || url.find_first_of("?#", host_at) != std::string::npos) {
    why = "bad URL '" + url + "': expected http://HOST[:PORT][/PATH] (no query)";
    return {};
  }
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url.size() >= 7 && url.compare(url.size() - 7, 7, "/ingest") == 0 ? url : url + "/ingest";
}

// The series a file's profiles go to: SERVICE{k=v,...}, the file's labels (service_name from the
// program, pid, runtime) then --label's, which win.
std::string series_name(const profile::Profile& p, const std::vector<std::pair<std::string, std::string>>& labels) {
  std::vector<std::pair<std::string, std::string>> ls;
  auto set = [&ls](const std::string& k, const std::string& v) {
    for (auto& [lk, lv] : ls)
      if (lk == k) {
        lv = v;
        return;
      }
    ls.emplace_back(k, v);
  };
  set("service_name", service_from(p.program()));
  if (p.header().pid > 0) set("pid", std::to_string(p.header().pid));
  if (const std::string r = runtime_of(p); !r.empty()) set("runtime", r);
  for (const auto& [k, v] : labels) set(k, v);
  std::string name, rest;
  for (const auto& [k, v] : ls) {
    if (k == "service_name") name = v;
    else rest += (rest.empty() ? "" : ",") + k + "=" + v;
  }
  return name + "{" + rest + "}";
}

// The file's time in Unix seconds: from its first event to its last (at least one second).
void file_span(const profile::Profile& p, uint64_t& from, uint64_t& until) {
  const auto& h = p.header();
  auto unix_s = [&](uint64_t when) -> uint64_t {
    const int64_t rel = when >= h.startup_ns ? static_cast<int64_t>(when - h.startup_ns)
                                             : -static_cast<int64_t>(h.startup_ns - when);
    return static_cast<uint64_t>((static_cast<int64_t>(h.startup_ms) * 1000000 + rel) / 1000000000);
  };
  from = unix_s(p.first_time() ? p.first_time() : h.startup_ns);
  until = unix_s(p.last_time() ? p.last_time() : h.startup_ns);
  if (until <= from) until = from + 1;
}

// One kind of the file's profile as pprof bytes; false with `error`.
bool pprof_body(const profile::Profile& p, profile::What what, const std::string& file, std::string& body,
                std::string& error) {
  views::ExportOptions eo;
  eo.what = what;
  eo.what_given = true;
  eo.input_name = file;
  auto exporter = views::make_pprof_exporter(eo);
  char* buf = nullptr;
  size_t len = 0;
  std::FILE* mem = ::open_memstream(&buf, &len);
  bool ok = mem && exporter->write(p, mem, error);
  if (mem && std::fclose(mem) != 0) ok = false;
  body = ok && buf ? std::string(buf, len) : std::string();
  std::free(buf);
  if (!ok && error.empty()) error = "out of memory";
  return ok;
}

// What `mlpd push` takes besides URL and FILEs.
struct PushArgs {
  std::vector<std::pair<std::string, std::string>> labels;  // in the order given
  std::string token_file, tenant;
  long timeout_s = 30;
  unsigned jobs = default_jobs();

  std::vector<Option> options() {
    return {{"--label", nullptr, nullptr,
        [this](const std::string& v) {
          const size_t eq = v.find('=');
          if (eq == std::string::npos) return "bad --label '" + v + "': expected K=V";
          const std::string k = v.substr(0, eq), val = v.substr(eq + 1);
          if (!label_name_ok(k))
            return "bad --label '" + v + "': the name must be letters, digits and '_', not starting with a digit";
          if (!label_value_ok(val))
            return "bad --label '" + v + "': the value must be printable, without spaces , = { } or \"";
          for (auto& [lk, lv] : labels)
            if (lk == k) {
              lv = val;
              return std::string();
            }
          labels.emplace_back(k, val);
          return std::string();
        },
        true},
       {"--token-file", nullptr, nullptr,
        [this](const std::string& v) {
          token_file = v;
          return std::string();
        },
        true},
       {"--tenant", nullptr, nullptr,
        [this](const std::string& v) {
          if (!label_value_ok(v)) return "bad --tenant '" + v + "'";
          tenant = v;
          return std::string();
        },
        true},
       {"--timeout", nullptr, nullptr,
        [this](const std::string& v) {
          char* end = nullptr;
          errno = 0;
          const long s = std::strtol(v.c_str(), &end, 10);
          if (v.empty() || *end || errno || s < 1 || s > 3600)
            return "bad --timeout '" + v + "': expected seconds from 1 to 3600";
          timeout_s = s;
          return std::string();
        },
        true},
       jobs_option(jobs)};
  }
};

int cmd_push(int argc, char** argv) {
  PushArgs a;
  std::vector<std::string> args;
  const int rc = parse_command(argc, argv, kCmd, kHelp, a.options(), args);
  if (rc >= 0) return rc;
  if (args.empty()) return usage_error("no URL given");
  if (args.size() < 2) return usage_error("no FILE given");
  Target t;
  t.timeout_s = a.timeout_s;
  t.tenant = a.tenant;
  std::string why;
  t.ingest = ingest_url(args[0], why);
  if (t.ingest.empty()) return usage_error(why);
  if (!a.token_file.empty()) {
    std::string error;
    if (!read_token(a.token_file, t.token, error)) {
      std::fprintf(stderr, "mlpd push: %s\n", error.c_str());
      return 2;
    }
  }
  if (std::string error; !load_curl(error)) {
    std::fprintf(stderr, "mlpd push: %s\n", error.c_str());
    return 1;
  }
  if (g_curl.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
    std::fprintf(stderr, "mlpd push: libcurl could not be initialised\n");
    return 1;
  }
  std::unique_ptr<CURL, void (*)(CURL*)> esc(g_curl.easy_init(), g_curl.easy_cleanup);  // for escaping only
  if (!esc) {
    std::fprintf(stderr, "mlpd push: libcurl could not start\n");
    return 1;
  }

  bool problems = false;
  size_t sent = 0;
  for (size_t fi = 1; fi < args.size(); ++fi) {
    const std::string& file = args[fi];
    profile::Profile p;
    bool file_problems = false;
    profile::BuildOptions o;
    o.jobs = a.jobs;
    if (!load_profiles(kCmd, {file}, p, nullptr, o, file_problems)) {
      problems = true;
      continue;
    }
    problems = problems || file_problems;
    if (!p.header_ok()) {
      std::fprintf(stderr, "mlpd push: %s: no valid header, nothing sent\n", file.c_str());
      problems = true;
      continue;
    }
    const std::string name = series_name(p, a.labels);
    uint64_t from = 0, until = 0;
    file_span(p, from, until);
    bool any = false;
    for (const Kind& k : kKinds) {
      if (!p.has(k.what) || p.total(k.what) == 0) continue;
      any = true;
      std::string body, error;
      if (!pprof_body(p, k.what, file, body, error)) {
        std::fprintf(stderr, "mlpd push: %s: %s: the pprof could not be made: %s\n", file.c_str(), k.name, error.c_str());
        return 1;
      }
      const std::string query = "name=" + url_encode(esc.get(), name) + "&from=" + std::to_string(from) +
                                "&until=" + std::to_string(until) + "&format=pprof&spyName=mlpd";
      if (const std::string failed = post(t, query, body); !failed.empty()) {
        std::fprintf(stderr, "mlpd push: %s: %s profile to %s: %s (%zu profile%s sent before; nothing more sent)\n",
                     file.c_str(), k.name, t.ingest.c_str(), failed.c_str(), sent, sent == 1 ? "" : "s");
        return 1;
      }
      ++sent;
      std::printf("%s: %s: %" PRIu64 " %s, %zu bytes sent as %s\n", file.c_str(), k.name, p.total(k.what),
                  std::string(profile::what_unit(k.what)).c_str(), body.size(), name.c_str());
      std::fflush(stdout);
    }
    if (!any) std::printf("%s: no samples, allocations, exceptions, contentions or calls: nothing to send\n", file.c_str());
  }
  return problems ? 1 : 0;
}

}  // namespace mlpd::cli
#endif  // MLPD_PUSH_CURL
