// pprof's profile.proto (reader/views/proto/profile.proto), serialized with the protobuf library and
// gzip-compressed, as `go tool pprof`, Grafana Pyroscope and Parca read it.
// * One Sample per weighted stack node of the model (leaf first), labelled with its thread
//   ("thread" label: pprof -tagfocus / -tags). Values per --what:
//     cpu          samples/count
//     alloc        alloc_objects/count, alloc_space/bytes (default alloc_objects)
//     alloc-bytes  alloc_objects/count, alloc_space/bytes (default alloc_space)
//     calls        calls/count, self/nanoseconds (default self: time spent in the method itself)
//     exceptions   exceptions/count
//     monitor      contentions/count
//   CPU samples carry no time: the file does not say reliably how often the sampler fired (Mono's
//   sampler delivers far fewer ticks than its nominal frequency at high rates), so no cpu/nanoseconds.
// * One Function and one Location per frame; a native frame whose module is known gets that module
//   as its Mapping (address range spanning its symbols, has_functions set: no symbolization needed).
#include <zlib.h>

#include <algorithm>
#include <map>
#include <unordered_map>

#include "pprof_common.h"
#include "mlpd/views.h"
#include "profile.pb.h"

namespace mlpd::views {

namespace {

using profile::FrameId;
using profile::NodeId;
using profile::Profile;
using profile::What;

class PprofExporter final : public Exporter {
 public:
  explicit PprofExporter(const ExportOptions& o) : o_(o) {}
  // Uncompressed (the gzip output is smaller): a sample per weighted node, a varint per location.
  uint64_t estimate(const Profile& p) override {
    const What w = effective_what(p, o_);
    return estimate_names(p) + estimate_stacks(p, w == What::alloc_bytes ? What::alloc : w, false, 3, 32);
  }

  bool write(const Profile& p, std::FILE* out, std::string& error) override {
    what_ = effective_what(p, o_);
    if (std::string m = missing_what_error(p, what_); !m.empty()) {
      error = m;
      return false;
    }
    perftools::profiles::Profile pb;
    detail::PprofStrings str(pb);

    // Sample types: (what, type, unit) per value.
    struct Column {
      What what;
      const char* type;
      const char* unit;
      bool calls_count;  // the call count of the path (CallStat), not a weight
    };
    std::vector<Column> cols;
    const char* preferred = nullptr;
    switch (what_) {
      case What::cpu: cols = {{What::cpu, "samples", "count", false}}; break;
      case What::alloc:
      case What::alloc_bytes:
        cols = {{What::alloc, "alloc_objects", "count", false}, {What::alloc_bytes, "alloc_space", "bytes", false}};
        preferred = what_ == What::alloc ? "alloc_objects" : "alloc_space";
        break;
      case What::calls:
        cols = {{What::calls, "calls", "count", true}, {What::calls, "self", "nanoseconds", false}};
        preferred = "self";
        break;
      case What::exceptions: cols = {{What::exceptions, "exceptions", "count", false}}; break;
      case What::monitor: cols = {{What::monitor, "contentions", "count", false}}; break;
    }
    for (const auto& c : cols) {
      auto* vt = pb.add_sample_type();
      vt->set_type(str(c.type));
      vt->set_unit(str(c.unit));
    }
    if (preferred) pb.set_default_sample_type(str(preferred));
    pb.mutable_period_type()->set_type(str(cols.back().type));
    pb.mutable_period_type()->set_unit(str(cols.back().unit));
    pb.set_period(1);
    std::string base = o_.input_name;
    if (auto s = base.find_last_of('/'); s != std::string::npos) base = base.substr(s + 1);
    pb.add_comment(str("mlpd export --what " + std::string(profile::what_name(what_)) + " " + base));
    if (p.header_ok()) {
      pb.set_time_nanos(static_cast<int64_t>(p.header().startup_ms * 1000000));
      if (p.last_time() > p.first_time()) pb.set_duration_nanos(static_cast<int64_t>(p.last_time() - p.first_time()));
    }

    // Mappings: one per native module, spanning its frames' addresses.
    const auto& frames = p.frames();
    std::map<std::string, std::pair<uint64_t, uint64_t>> modules;
    for (const auto& f : frames) {
      if (f.module.empty()) continue;
      auto [it, inserted] = modules.emplace(f.module, std::make_pair(f.address, f.address + 1));
      if (!inserted) {
        it->second.first = std::min(it->second.first, f.address);
        it->second.second = std::max(it->second.second, f.address + 1);
      }
    }
    // pprof calls the first mapping the main binary ("File:" in its reports; its own heuristic skips
    // only names in brackets and shared libraries): the program when the file names one, else the
    // real files before pseudo-modules such as [vdso].
    std::map<std::string, uint64_t> mapping_id;
    if (!p.program().empty() && !modules.count(p.program())) {
      auto* m = pb.add_mapping();
      m->set_id(1);
      m->set_filename(str(p.program()));
      m->set_has_functions(true);
    }
    std::vector<std::pair<std::string, std::pair<uint64_t, uint64_t>>> ordered(modules.begin(), modules.end());
    std::stable_partition(ordered.begin(), ordered.end(), [](const auto& m) { return m.first.rfind('[', 0) != 0; });
    for (const auto& [name, range] : ordered) {
      auto* m = pb.add_mapping();
      m->set_id(static_cast<uint64_t>(pb.mapping_size()));
      m->set_memory_start(range.first);
      m->set_memory_limit(range.second);
      m->set_filename(str(name));
      m->set_has_functions(true);
      mapping_id.emplace(name, m->id());
    }

    // Functions and locations, created for the frames the samples use (id = frame + 1).
    std::vector<bool> made(frames.size() + 1, false);
    auto location_for = [&](FrameId f) -> uint64_t {
      const size_t i = f < frames.size() ? f : frames.size();
      if (made[i]) return i + 1;
      made[i] = true;
      std::string name = i < frames.size() ? frames[i].name : "[no frames]";
      if (name.empty()) name = "[unnamed]";
      auto* fn = pb.add_function();
      fn->set_id(i + 1);
      fn->set_name(str(name));
      // No system_name: pprof takes a function whose name equals its system name for one still to be
      // demangled and, when it "looks like C++", cuts every <...> and (...) out of it (mcs's
      // "<Main>m__0" would lose "<Main>", a wrapper its "(wrapper ...)"). A name of its own it keeps.
      auto* loc = pb.add_location();
      loc->set_id(i + 1);
      if (i < frames.size()) {
        if (!frames[i].module.empty()) {
          loc->set_mapping_id(mapping_id[frames[i].module]);
          loc->set_address(frames[i].address);
          fn->set_filename(str(frames[i].module));
        }
      }
      loc->add_line()->set_function_id(i + 1);
      return i + 1;
    };

    const auto& nodes = p.nodes();
    const auto& threads = p.threads();
    const int64_t thread_key = str("thread");
    std::vector<int64_t> thread_label(threads.size(), -1);
    std::vector<FrameId> stack;
    for (NodeId n = 0; n < nodes.size(); ++n) {
      bool any = false;
      for (const auto& c : cols) any = any || (c.calls_count ? p.calls(n).calls : p.weight(c.what, n)) != 0;
      if (!any) continue;
      auto* s = pb.add_sample();
      p.stack(n, stack);
      if (stack.empty()) stack.push_back(profile::kNoFrame);
      for (size_t k = stack.size(); k > 0; --k) s->add_location_id(location_for(stack[k - 1]));
      for (const auto& c : cols)
        s->add_value(static_cast<int64_t>(c.calls_count ? p.calls(n).calls : p.weight(c.what, n)));
      const auto th = nodes[n].thread;
      if (th < threads.size()) {
        if (thread_label[th] < 0) thread_label[th] = str(profile::thread_label(threads[th]));
        auto* l = s->add_label();
        l->set_key(thread_key);
        l->set_str(thread_label[th]);
      }
    }

    std::string bytes;
    if (!pb.SerializeToString(&bytes) || bytes.size() >= (uint64_t(1) << 32)) {
      error = "the pprof profile could not be serialized (too large)";
      return false;
    }
    return detail::gzip_to(bytes, out, error);
  }

 private:
  ExportOptions o_;
  What what_ = What::cpu;
};

}  // namespace

std::unique_ptr<Exporter> make_pprof_exporter(const ExportOptions& o) { return std::make_unique<PprofExporter>(o); }

namespace detail {

bool gzip_to(const std::string& data, std::FILE* out, std::string& error) {
  z_stream z{};
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    error = "zlib: deflateInit2 failed";
    return false;
  }
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());  // a profile is far below 4 GiB (checked by the caller)
  std::vector<unsigned char> buf(1 << 16);
  int rc;
  do {
    z.next_out = buf.data();
    z.avail_out = static_cast<uInt>(buf.size());
    rc = deflate(&z, Z_FINISH);
    const size_t n = buf.size() - z.avail_out;
    if (n && std::fwrite(buf.data(), 1, n, out) != n) {
      deflateEnd(&z);
      error = "write error";
      return false;
    }
  } while (rc == Z_OK || rc == Z_BUF_ERROR);
  deflateEnd(&z);
  if (rc != Z_STREAM_END) {
    error = "zlib: deflate failed";
    return false;
  }
  return true;
}

}  // namespace detail

}  // namespace mlpd::views
