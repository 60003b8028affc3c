// Names of CoreCLR's functions, classes and modules in Mono's style (mono_names.h), read through the
// runtime's ICorProfilerInfo and each module's IMetaDataImport2. Called from the runtime's callbacks
// (JIT finished, class loaded), never from a signal handler; not on a GC-suspended thread.
// Thread-safe: the module readers are cached under a mutex; naming itself works on the caller's stack.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

#include "coreclr/metadata_api.h"
#include "coreclr/profiling_api.h"

namespace mlpd::coreclr {

class ClrNames {
 public:
  explicit ClrNames(ProfilerInfo* info) : info_(info) {}
  // A later attach's ICorProfilerInfo (the metadata interfaces already asked for stay valid).
  void rebind(ProfilerInfo* info) { info_ = info; }

  // "Namespace.Type:Method<args> (params)"; "" when the runtime cannot say (a dynamic method: see
  // dynamic_method_name).
  std::string method_name(FunctionID function);
  // A dynamic method (IL stub, LCG: no metadata) by the runtime's friendly name, "(dynamic) NAME".
  std::string dynamic_method_name(FunctionID function);
  // "Namespace.Outer/Inner", generic instances with their arguments ("List`1<int>"), arrays "int[]".
  std::string class_name(ClassID klass, int depth = 0);
  // The module's file (or its name when it has no file), its base address in *base.
  std::string module_name(ModuleID module, uint64_t* base = nullptr);
  // The assembly's simple name ("System.Private.CoreLib").
  std::string assembly_name(AssemblyID assembly);

  // A TypeDef/TypeRef token's class name within `module` (no generic arguments).
  std::string token_class_name(ModuleID module, mdToken token, int depth = 0);

 private:
  MetaDataImport* import(ModuleID module);

  ProfilerInfo* info_;
  std::mutex mutex_;
  std::unordered_map<ModuleID, MetaDataImport*> imports_;  // held (AddRef'd) for the process's life
};

// Mono's short name for a corlib type given by its full name ("System.Int32" -> "int"); the name
// itself when it is not one of them.
std::string mono_builtin_name(const std::string& full_name);

}  // namespace mlpd::coreclr
