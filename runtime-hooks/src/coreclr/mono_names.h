// Names in Mono's style for what CoreCLR describes (docs/dotnet.md, "Names"): a method is
// `Namespace.Type:Method (args)` as Mono's mono_method_full_name prints it, so that one program's
// methods carry the same names in files from both runtimes (and `mlpd diff` lines them up).
//
// Types as Mono's mono_type_get_desc prints them: the built-in types by Mono's short names (`int`,
// `uint16`, `single`, `intptr`, `string`, `object`...), classes `Namespace.Outer/Inner`, generic
// instances `System.Collections.Generic.List`1<int>` (arguments separated by ", "), arrays `int[]` and
// `int[,]`, pointers `int*`, by-reference `int&`, generic parameters by name (or `!0` / `!!0`),
// custom modifiers ` modreq(T)` / ` modopt(T)`. Parameters are separated by "," (no space).
//
// Pure logic over ECMA-335 signature blobs (II.23.2): no runtime call; the runtime's metadata is
// reached through the TypeNames interface the caller implements (IMetaDataImport in the agent, a
// table in the tests). Blobs come from the runtime but are read as untrusted: every read is bounded,
// nesting is limited, and a malformed blob gives a name with `?` in it, never a crash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace mlpd::coreclr {

class TypeNames {
 public:
  virtual ~TypeNames() = default;
  // A TypeDef (0x02xxxxxx) or TypeRef (0x01xxxxxx) token's type, as Mono names a class:
  // "Namespace.Outer/Inner"; "" when unknown.
  virtual std::string type_name(uint32_t token) = 0;
  // A TypeSpec (0x1bxxxxxx) token's signature blob; false when unknown.
  virtual bool type_spec(uint32_t token, const uint8_t*& blob, size_t& size) = 0;
  // The name a generic parameter prints as: the instantiation's argument when known (a method of
  // List`1<int>: "int"), else the parameter's own name ("T"); "" lets the caller print !N / !!N.
  virtual std::string generic_parameter(bool of_method, uint32_t index) = 0;
};

// One type from the blob at `blob` (size `size`), appended to `out`; returns the bytes read (0 when
// the blob is malformed: `out` then ends in "?").
size_t append_type(const uint8_t* blob, size_t size, TypeNames& names, std::string& out);

// A method signature blob's parameters, as Mono's mono_signature_get_desc prints them ("int,string").
// False (with what could be read, and "?") for a malformed blob.
bool signature_parameters(const uint8_t* blob, size_t size, TypeNames& names, std::string& out);

// "Namespace.Type:Method<args> (params)": `type` from type_name (with a generic instance's
// arguments), `method_instantiation` "" or "<int, string>".
std::string method_full_name(std::string_view type, std::string_view method, std::string_view method_instantiation,
                             std::string_view params);

// A class name from its parts, as Mono's append_class_name: the enclosing classes' names first,
// separated by '/', the namespace (when not empty) before the outermost only.
std::string class_name(std::string_view name_space, std::string_view name);

// UTF-16 (the runtime's WCHAR) to UTF-8; unpaired surrogates become U+FFFD.
std::string utf8(const char16_t* text, size_t length);

}  // namespace mlpd::coreclr
