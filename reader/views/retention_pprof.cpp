// The dominator tree's collapsed stacks (export_retained.cpp) as pprof's profile.proto, gzip-compressed:
// one sample per stack, leaf first, valued in retained bytes ("retained"/"bytes"), one Function and
// one Location per distinct frame (a root or a class). `go tool pprof -top` then lists the classes by
// the bytes they retain themselves, `-cum` with what they hold.
#include <zlib.h>

#include <string_view>
#include <unordered_map>

#include "export_common.h"
#include "mlpd/retention.h"
#include "profile.pb.h"

namespace mlpd::views {

namespace {

bool write_gzip(const std::string& data, std::FILE* out, std::string& error) {
  z_stream z{};
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    error = "zlib: deflateInit2 failed";
    return false;
  }
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());  // below 4 GiB: checked by the caller
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

}  // namespace

bool write_retained_pprof(const std::vector<CollapsedStack>& stacks, std::FILE* out, std::string& error) {
  perftools::profiles::Profile pb;
  std::unordered_map<std::string, int64_t> strings;
  pb.add_string_table("");
  auto str = [&](std::string_view raw) {
    auto [it, added] = strings.emplace(std::string(raw), static_cast<int64_t>(strings.size() + 1));
    if (added) pb.add_string_table(detail::utf8_clean(raw));
    return it->second;
  };
  auto* type = pb.add_sample_type();
  type->set_type(str("retained"));
  type->set_unit(str("bytes"));
  pb.mutable_period_type()->set_type(str("retained"));
  pb.mutable_period_type()->set_unit(str("bytes"));
  pb.set_period(1);
  std::unordered_map<std::string, uint64_t> locations;  // frame name -> location (= function) id
  auto location = [&](std::string_view name) {
    auto [it, added] = locations.emplace(std::string(name), locations.size() + 1);
    if (added) {
      auto* fn = pb.add_function();
      fn->set_id(it->second);
      fn->set_name(str(name));
      fn->set_system_name(fn->name());
      auto* loc = pb.add_location();
      loc->set_id(it->second);
      loc->add_line()->set_function_id(it->second);
    }
    return it->second;
  };
  std::vector<std::string_view> frames;
  for (const CollapsedStack& s : stacks) {
    frames.clear();
    std::string_view rest = s.stack;
    for (size_t semi; (semi = rest.find(';')) != std::string_view::npos; rest.remove_prefix(semi + 1))
      frames.push_back(rest.substr(0, semi));
    frames.push_back(rest);
    auto* sample = pb.add_sample();
    for (size_t k = frames.size(); k > 0; --k) sample->add_location_id(location(frames[k - 1]));
    sample->add_value(static_cast<int64_t>(s.weight));
  }
  std::string bytes;
  if (!pb.SerializeToString(&bytes) || bytes.size() >= (uint64_t(1) << 32)) {
    error = "the profile cannot be serialized";
    return false;
  }
  return write_gzip(bytes, out, error);
}

}  // namespace mlpd::views
