// The trigger's request to an attached .NET agent (runtime-hooks/src/coreclr/attach_request.h).
#include "coreclr/attach_request.h"

#include <string>

#include "mlpd_catch.h"

using mlpd::coreclr::AttachRequest;
using mlpd::coreclr::parse_attach_request;

namespace {
bool parse(const std::string& text, AttachRequest& r, std::string& error) {
  return parse_attach_request(text.data(), text.size(), r, error);
}
}  // namespace

TEST_CASE("coreclr attach: the trigger's request gives the answer path and the options", "[coreclr]") {
  AttachRequest r;
  std::string error;
  REQUIRE(parse("answer=/tmp/mlpd-attach-x/answer\noptions=sample,gc,output=/a/b,c.mlpd\n", r, error));
  CHECK(r.answer == "/tmp/mlpd-attach-x/answer");
  CHECK(r.options == "sample,gc,output=/a/b,c.mlpd");
  REQUIRE(parse("options=", r, error));
  CHECK(r.answer.empty());
  CHECK(r.options.empty());
}

TEST_CASE("coreclr attach: a request that is not ours is refused in one line", "[coreclr]") {
  AttachRequest r;
  std::string error;
  CHECK_FALSE(parse("", r, error));
  CHECK_FALSE(parse("answer=relative/path\n", r, error));
  CHECK(error.find("not absolute") != std::string::npos);
  CHECK_FALSE(parse("answer=/tmp/../etc/passwd\n", r, error));
  CHECK_FALSE(parse("options=a\noptions=b\n", r, error));
  CHECK(error.find("repeated") != std::string::npos);
  CHECK_FALSE(parse("evil=1\n", r, error));
  CHECK_FALSE(parse(std::string("options=a\0b", 11), r, error));
  CHECK(error.find("NUL") != std::string::npos);
  CHECK_FALSE(parse("options=" + std::string(20000, 'x'), r, error));
  CHECK(error.find('\n') == std::string::npos);
}
