// `callspec=SPEC` on .NET: Mono's call filter (`mono --trace` syntax; docs/options.md), evaluated by us
// on the names the file gives a method (mono_names.h), since .NET has no callspec of its own. The
// mapper asks it once per compiled method (clr_calls.h): a method it excludes gets no hooks.
//
// Items, comma-separated, each optionally prefixed by `-` (exclude), read in order as Mono's
// mono_callspec_eval reads them: an item that matches includes the method, or excludes it when it has
// the `-`, and a later item overrides an earlier one; a method no item matches is excluded. The items
// (a SPEC with more than one is quoted in MLPD_OPTIONS: `callspec="program,-N:My.Noise"`):
//   all                  every method
//   none                 no method (matches nothing)
//   program              the program's own assembly (the .dll the host runs)
//   wrapper              Mono's runtime wrappers: never on .NET
//   M:Type:Method        a method: Type is `Namespace.Type` (`Namespace.Outer/Inner`), or a bare
//                        type name (any namespace), or `*`; Method a name or `*`; optionally
//                        `(args)` as the file names them (`M:Calc:Add(int,int)`)
//   T:Namespace.Type     every method of the type
//   N:Namespace          every method of types in the namespace
//   E:Type               Mono's exception traces: accepted, matches no method
//   disabled             Mono's `--trace` start switch: accepted, matches nothing
//   NAME                 every method of the assembly NAME (its simple name)
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace mlpd::coreclr {

class CallSpec {
 public:
  // False with a one-line reason for a malformed SPEC (an empty item, `M:` without `:`).
  bool parse(std::string_view spec, std::string& error);
  bool empty() const { return ops_.empty(); }
  // `method`: the file's name ("Namespace.Type:Method (args)", "Namespace.Type:M<T> (args)");
  // `assembly`: its assembly's simple name; `program`: whether that is the program's assembly.
  bool matches(std::string_view method, std::string_view assembly, bool program) const;

 private:
  enum class Kind { kAll, kNone, kProgram, kWrapper, kMethod, kClass, kNamespace, kAssembly };
  struct Op {
    Kind kind;
    bool exclude = false;
    std::string type;     // kMethod: `Namespace.Type`, a bare name or "*"; kClass: `Namespace.Type`
    std::string name;     // kMethod: the method's name or "*"; kNamespace/kAssembly: the name
    std::string args;     // kMethod: "(int,int)" without spaces; "" for any
  };
  std::vector<Op> ops_;
};

// The program's own assembly (callspec `program`): the simple name of the first `.dll` or `.exe`
// argument of the process's command line (`dotnet app.dll`), else of the executable (an apphost
// `./app` runs `app.dll`). "" when neither gives one.
std::string program_assembly_name();

}  // namespace mlpd::coreclr
