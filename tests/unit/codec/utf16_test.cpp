// mlpd/utf16.h: what the .NET side hands the runtime as WCHAR strings.
#include "mlpd/utf16.h"

#include "mlpd_catch.h"

TEST_CASE("utf16: ASCII, two-, three- and four-byte sequences", "[codec]") {
  CHECK(mlpd::utf8_to_utf16("/usr/lib/libmlpd.so") == u"/usr/lib/libmlpd.so");
  CHECK(mlpd::utf8_to_utf16("caf\xC3\xA9") == u"caf\u00E9");
  CHECK(mlpd::utf8_to_utf16("\xE2\x82\xAC") == u"\u20AC");
  const std::u16string pair = mlpd::utf8_to_utf16("\xF0\x9F\x98\x80");  // U+1F600
  REQUIRE(pair.size() == 2);
  CHECK(pair[0] == 0xD83D);
  CHECK(pair[1] == 0xDE00);
}

TEST_CASE("utf16: malformed input gives U+FFFD and goes on", "[codec]") {
  CHECK(mlpd::utf8_to_utf16("a\x80" "b") == u"a\uFFFDb");       // a stray continuation byte
  CHECK(mlpd::utf8_to_utf16("a\xE2\x82") == u"a\uFFFD\uFFFD");  // cut at the end: each byte replaced
  CHECK(mlpd::utf8_to_utf16("\xC3" "A") == u"\uFFFDA");         // a lead byte without its continuation
  CHECK(mlpd::utf8_to_utf16("\xF7\xBF\xBF\xBF") == u"\uFFFD");  // above U+10FFFF
}
