// Test support: a gzip stream (a .pb.gz export, a pushed profile) inflated whole; the test fails
// (REQUIRE) unless it is one complete, valid stream.
#pragma once

#include <zlib.h>

#include <string>

#include "mlpd_catch.h"

namespace mlpd::test {

inline std::string gunzip(const std::string& in) {
  z_stream z{};
  REQUIRE(inflateInit2(&z, 16 + MAX_WBITS) == Z_OK);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  std::string out;
  char buf[16384];
  int rc;
  do {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(buf, sizeof buf - z.avail_out);
  } while (rc == Z_OK);
  inflateEnd(&z);
  REQUIRE(rc == Z_STREAM_END);
  return out;
}

}  // namespace mlpd::test
