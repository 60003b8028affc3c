// Names in Mono's style from ECMA-335 signature blobs (runtime-hooks/src/coreclr/mono_names.cpp): the
// expected texts are what Mono's mono_method_full_name prints for the same C# methods (its
// mono_type_get_desc's spellings), so one program's methods match under both runtimes.
#include <map>
#include <string>
#include <vector>

#include "coreclr/mono_names.h"
#include "mlpd_catch.h"

using namespace mlpd::coreclr;

namespace {
struct FakeNames : TypeNames {
  std::map<uint32_t, std::string> types;
  std::map<uint32_t, std::vector<uint8_t>> specs;
  std::vector<std::string> class_args, method_args;
  std::string type_name(uint32_t token) override {
    const auto it = types.find(token);
    return it == types.end() ? "" : it->second;
  }
  bool type_spec(uint32_t token, const uint8_t*& blob, size_t& size) override {
    const auto it = specs.find(token);
    if (it == specs.end()) return false;
    blob = it->second.data();
    size = it->second.size();
    return true;
  }
  std::string generic_parameter(bool of_method, uint32_t index) override {
    const auto& args = of_method ? method_args : class_args;
    return index < args.size() ? args[index] : "";
  }
};

std::string params(std::vector<uint8_t> sig, FakeNames& n, bool* ok = nullptr) {
  std::string out;
  const bool r = signature_parameters(sig.data(), sig.size(), n, out);
  if (ok) *ok = r;
  return out;
}
// TypeDefOrRefEncoded of a TypeDef row (tag 0), TypeRef row (tag 1), TypeSpec row (tag 2).
uint8_t def(uint8_t row) { return static_cast<uint8_t>(row << 2); }
uint8_t ref(uint8_t row) { return static_cast<uint8_t>(row << 2 | 1); }
uint8_t spec(uint8_t row) { return static_cast<uint8_t>(row << 2 | 2); }
}  // namespace

TEST_CASE("mono names: built-in types as Mono spells them", "[coreclr]") {
  FakeNames n;
  // static void M(bool, char, sbyte, byte, short, ushort, int, uint, long, ulong, float, double,
  //               string, object, IntPtr, UIntPtr)
  CHECK(params({0x00, 16, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x1c,
                0x18, 0x19},
               n) == "bool,char,sbyte,byte,int16,uint16,int,uint,long,ulong,single,double,string,object,intptr,uintptr");
  CHECK(params({0x20, 0, 0x01}, n) == "");  // instance void M()
}

TEST_CASE("mono names: classes, arrays, pointers, by-reference, generic instances", "[coreclr]") {
  FakeNames n;
  n.types[0x02000005] = "MlpdTests.Programs/Inner";
  n.types[0x01000003] = "System.Collections.Generic.List`1";
  n.types[0x01000004] = "System.Collections.Generic.Dictionary`2";
  n.types[0x01000007] = "System.Runtime.InteropServices.InAttribute";
  // void M(Inner, int[], int[,], int*, ref int, List<int>, Dictionary<string, List<Inner>>, Inner[][])
  std::vector<uint8_t> sig = {0x00, 8, 0x01,
                              0x12, def(5),
                              0x1d, 0x08,
                              0x14, 0x08, 2, 0, 0,
                              0x0f, 0x08,
                              0x10, 0x08,
                              0x15, 0x12, ref(3), 1, 0x08,
                              0x15, 0x12, ref(4), 2, 0x0e, 0x15, 0x12, ref(3), 1, 0x11, def(5),
                              0x1d, 0x1d, 0x12, def(5)};
  bool ok = false;
  CHECK(params(sig, n, &ok) ==
        "MlpdTests.Programs/Inner,int[],int[,],int*,int&,System.Collections.Generic.List`1<int>,"
        "System.Collections.Generic.Dictionary`2<string, System.Collections.Generic.List`1<MlpdTests.Programs/Inner>>,"
        "MlpdTests.Programs/Inner[][]");
  CHECK(ok);
  // `in int`: modreq(InAttribute) on the by-reference type; a TypeSpec argument.
  n.specs[0x1b000002] = {0x1d, 0x0e};  // string[]
  CHECK(params({0x00, 2, 0x01, 0x10, 0x1f, ref(7), 0x08, 0x12, spec(2)}, n) ==
        "int modreq(System.Runtime.InteropServices.InAttribute)&,string[]");
}

TEST_CASE("mono names: generic parameters by instantiation, by name, or !N", "[coreclr]") {
  FakeNames n;
  // class C<T> { void M<U>(T, U, List<U>) }: a generic method signature (0x10: one generic parameter)
  n.types[0x01000003] = "System.Collections.Generic.List`1";
  std::vector<uint8_t> sig = {0x30, 1, 3, 0x01, 0x13, 0, 0x1e, 0, 0x15, 0x12, ref(3), 1, 0x1e, 0};
  CHECK(params(sig, n) == "!0,!!0,System.Collections.Generic.List`1<!!0>");
  n.class_args = {"int"};
  n.method_args = {"string"};
  CHECK(params(sig, n) == "int,string,System.Collections.Generic.List`1<string>");
  CHECK(method_full_name("MlpdTests.C`1<int>", "M", "<string>", params(sig, n)) ==
        "MlpdTests.C`1<int>:M<string> (int,string,System.Collections.Generic.List`1<string>)");
  CHECK(method_full_name(class_name("MlpdTests", "Work"), "Sum", "", "int") == "MlpdTests.Work:Sum (int)");
  CHECK(class_name("", "Outer/Inner") == "Outer/Inner");
}

TEST_CASE("mono names: malformed blobs end in ? and never read past their end", "[coreclr]") {
  FakeNames n;
  bool ok = true;
  CHECK(params({}, n, &ok) == "?");
  CHECK_FALSE(ok);
  CHECK(params({0x00, 2, 0x01, 0x08}, n, &ok) == "int,?");  // one parameter missing
  CHECK_FALSE(ok);
  CHECK(params({0x00, 1, 0x01, 0x12}, n, &ok) == "?");  // class without its token
  CHECK_FALSE(ok);
  CHECK(params({0x00, 1, 0x01, 0x12, def(9)}, n, &ok) == "?");  // unknown token: named ?, read on
  CHECK(ok);
  CHECK(params({0x00, 1, 0x01, 0x77}, n, &ok) == "?");  // not an element type
  CHECK_FALSE(ok);
  // A TypeSpec that names itself: bounded, not an endless recursion.
  n.specs[0x1b000001] = {0x12, spec(1)};
  CHECK_THAT(params({0x00, 1, 0x01, 0x12, spec(1)}, n, &ok), mlpd_test::contains("?"));
  // Deep nesting: int[][]...[] 1000 deep is refused after the limit.
  std::vector<uint8_t> deep = {0x00, 1, 0x01};
  for (int i = 0; i < 1000; ++i) deep.push_back(0x1d);
  deep.push_back(0x08);
  CHECK_THAT(params(deep, n, &ok), mlpd_test::contains("?"));
  CHECK_FALSE(ok);
  // A 4-byte compressed count far beyond the blob: refused.
  CHECK(params({0x00, 0xC0, 0xFF, 0xFF, 0xFF, 0x01}, n, &ok) == "?");
}

TEST_CASE("mono names: UTF-16 to UTF-8", "[coreclr]") {
  const char16_t text[] = u"Caf\u00e9\u4e2d\U0001F600";
  CHECK(utf8(text, sizeof text / sizeof text[0] - 1) == "Caf\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80");
  const char16_t lone[] = {u'a', 0xD800, u'b'};
  CHECK(utf8(lone, 3) == "a\xef\xbf\xbd" "b");
}
