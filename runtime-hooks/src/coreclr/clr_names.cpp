#include "coreclr/clr_names.h"

#include <vector>

#include "coreclr/mono_names.h"

namespace mlpd::coreclr {

namespace {

constexpr int kMaxDepth = 16;     // generic arguments of generic arguments...
constexpr ULONG32 kMaxTypeArgs = 32;
constexpr ULONG kNameCapacity = 1024;

// The signature's types, named through one module's metadata and one instantiation.
class ModuleTypeNames final : public TypeNames {
 public:
  ModuleTypeNames(ClrNames& names, ModuleID module, MetaDataImport* import, const std::vector<std::string>& class_args,
                  const std::vector<std::string>& method_args, int depth)
      : names_(names), module_(module), import_(import), class_args_(class_args), method_args_(method_args),
        depth_(depth) {}
  std::string type_name(uint32_t token) override { return names_.token_class_name(module_, token, depth_ + 1); }
  bool type_spec(uint32_t token, const uint8_t*& blob, size_t& size) override {
    PCCOR_SIGNATURE sig = nullptr;
    ULONG n = 0;
    if (!import_ || !succeeded(import_->table->GetTypeSpecFromToken(import_, token, &sig, &n)) || !sig) return false;
    blob = sig;
    size = n;
    return true;
  }
  std::string generic_parameter(bool of_method, uint32_t index) override {
    const auto& args = of_method ? method_args_ : class_args_;
    return index < args.size() ? args[index] : std::string();
  }

 private:
  ClrNames& names_;
  ModuleID module_;
  MetaDataImport* import_;
  const std::vector<std::string>& class_args_;
  const std::vector<std::string>& method_args_;
  int depth_;
};

// The generic parameters' names of `owner` (a TypeDef or MethodDef), in order; empty when unknown.
std::vector<std::string> generic_parameter_names(MetaDataImport* md, mdToken owner) {
  std::vector<std::string> names;
  if (!md) return names;
  HCORENUM e = nullptr;
  mdToken params[kMaxTypeArgs];
  ULONG count = 0;
  if (succeeded(md->table->EnumGenericParams(md, &e, owner, params, kMaxTypeArgs, &count))) {
    for (ULONG i = 0; i < count && i < kMaxTypeArgs; ++i) {
      ULONG sequence = 0, length = 0;
      DWORD flags = 0, reserved = 0;
      mdToken param_owner = 0;
      WCHAR name[kNameCapacity];
      if (!succeeded(md->table->GetGenericParamProps(md, params[i], &sequence, &flags, &param_owner, &reserved, name,
                                                     kNameCapacity, &length)))
        break;
      names.push_back(utf8(name, length && name[length - 1] == 0 ? length - 1 : length));
    }
  }
  if (e) md->table->CloseEnum(md, e);
  return names;
}

// Shared generic code: the runtime's one body for every reference-type argument carries
// System.__Canon where Mono's shared body carries the parameter's name and "_REF" (`Spin<T_REF>
// (T_REF,int)`, `Box`1<T_REF>`). True when an argument was renamed.
bool shared(const std::vector<std::string>& args) {
  for (const std::string& a : args)
    if (a == "System.__Canon") return true;
  return false;
}
bool name_shared_arguments(std::vector<std::string>& args, const std::vector<std::string>& parameters) {
  bool renamed = false;
  for (size_t i = 0; i < args.size() && i < parameters.size(); ++i)
    if (args[i] == "System.__Canon" && !parameters[i].empty()) {
      args[i] = parameters[i] + "_REF";
      renamed = true;
    }
  return renamed;
}

}  // namespace

std::string mono_builtin_name(const std::string& full_name) {
  static const std::unordered_map<std::string, const char*> kBuiltins = {
      {"System.Void", "void"},     {"System.Boolean", "bool"},   {"System.Char", "char"},
      {"System.SByte", "sbyte"},   {"System.Byte", "byte"},      {"System.Int16", "int16"},
      {"System.UInt16", "uint16"}, {"System.Int32", "int"},      {"System.UInt32", "uint"},
      {"System.Int64", "long"},    {"System.UInt64", "ulong"},   {"System.Single", "single"},
      {"System.Double", "double"}, {"System.String", "string"},  {"System.Object", "object"},
      {"System.IntPtr", "intptr"}, {"System.UIntPtr", "uintptr"}, {"System.TypedReference", "typedbyref"},
  };
  const auto it = kBuiltins.find(full_name);
  return it == kBuiltins.end() ? full_name : std::string(it->second);
}

MetaDataImport* ClrNames::import(ModuleID module) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (const auto it = imports_.find(module); it != imports_.end()) return it->second;
  void* out = nullptr;
  MetaDataImport* import = nullptr;
  if (succeeded(info_->table->GetModuleMetaData(info_, module, kOfRead, &kIID_IMetaDataImport2, &out)) && out)
    import = static_cast<MetaDataImport*>(out);
  imports_.emplace(module, import);  // a module without metadata is asked once
  return import;
}

std::string ClrNames::token_class_name(ModuleID module, mdToken token, int depth) {
  MetaDataImport* md = import(module);
  if (!md || depth > kMaxDepth) return {};
  WCHAR name[kNameCapacity];
  ULONG length = 0;
  const uint32_t table = token >> 24;
  if (table == 0x02) {  // TypeDef: "Namespace.Name", or "Name" nested in its enclosing class
    DWORD flags = 0;
    mdToken extends = 0;
    if (!succeeded(md->table->GetTypeDefProps(md, token, name, kNameCapacity, &length, &flags, &extends))) return {};
    std::string own = utf8(name, length && name[length - 1] == 0 ? length - 1 : length);
    mdTypeDef enclosing = 0;
    if (succeeded(md->table->GetNestedClassProps(md, token, &enclosing)) && enclosing && enclosing != token)
      return token_class_name(module, enclosing, depth + 1) + "/" + own;
    return own;
  }
  if (table == 0x01) {  // TypeRef: nested when its resolution scope is another TypeRef
    mdToken scope = 0;
    if (!succeeded(md->table->GetTypeRefProps(md, token, &scope, name, kNameCapacity, &length))) return {};
    std::string own = utf8(name, length && name[length - 1] == 0 ? length - 1 : length);
    if ((scope >> 24) == 0x01 && scope != token) return token_class_name(module, scope, depth + 1) + "/" + own;
    return own;
  }
  return {};
}

std::string ClrNames::class_name(ClassID klass, int depth) {
  if (!klass) return "?";
  if (depth > kMaxDepth) return "?";
  // Arrays: the element's name and [] (rank > 1: [,]).
  std::uint32_t element_type = 0;
  ClassID element = 0;
  ULONG rank = 0;
  if (info_->table->IsArrayClass(info_, klass, &element_type, &element, &rank) == kS_OK) {
    std::string s = element ? class_name(element, depth + 1) : std::string("?");
    s += '[';
    for (ULONG i = 1; i < rank; ++i) s += ',';
    return s + ']';
  }
  ModuleID module = 0;
  mdTypeDef type = 0;
  ClassID parent = 0;
  ClassID args[kMaxTypeArgs];
  ULONG32 count = 0;
  if (!succeeded(info_->table->GetClassIDInfo2(info_, klass, &module, &type, &parent, kMaxTypeArgs, &count, args)))
    return "?";
  std::string s = token_class_name(module, type, depth);
  if (s.empty()) return "?";
  // Mono names a class by its type's description: System.Int32's methods are "int:Parse (string)".
  if (count == 0) return mono_builtin_name(s);
  s += '<';
  for (ULONG32 i = 0; i < count && i < kMaxTypeArgs; ++i) {
    if (i) s += ", ";
    s += class_name(args[i], depth + 1);
  }
  return s + '>';
}

std::string ClrNames::method_name(FunctionID function) {
  ClassID klass = 0;
  ModuleID module = 0;
  mdToken token = 0;
  ClassID type_args[kMaxTypeArgs];
  ULONG32 type_arg_count = 0;
  if (!succeeded(info_->table->GetFunctionInfo2(info_, function, 0, &klass, &module, &token, kMaxTypeArgs,
                                                &type_arg_count, type_args)))
    return {};
  MetaDataImport* md = import(module);
  if (!md) return {};
  mdTypeDef owner = 0;
  WCHAR name[kNameCapacity];
  ULONG length = 0;
  DWORD attributes = 0, impl_flags = 0;
  PCCOR_SIGNATURE sig = nullptr;
  ULONG sig_size = 0, rva = 0;
  if (!succeeded(md->table->GetMethodProps(md, token, &owner, name, kNameCapacity, &length, &attributes, &sig,
                                           &sig_size, &rva, &impl_flags)))
    return {};
  const std::string method = utf8(name, length && name[length - 1] == 0 ? length - 1 : length);

  // The class: its instantiation when the runtime knows it (a ClassID), else the definition.
  std::vector<std::string> class_args, method_args;
  std::string type;
  if (klass) {
    type = class_name(klass);
    ModuleID m = 0;
    mdTypeDef t = 0;
    ClassID parent = 0, args[kMaxTypeArgs];
    ULONG32 n = 0;
    if (succeeded(info_->table->GetClassIDInfo2(info_, klass, &m, &t, &parent, kMaxTypeArgs, &n, args))) {
      for (ULONG32 i = 0; i < n && i < kMaxTypeArgs; ++i) class_args.push_back(class_name(args[i], 1));
      if (shared(class_args) && name_shared_arguments(class_args, generic_parameter_names(import(m), t))) {
        type = token_class_name(m, t);
        type += '<';
        for (size_t i = 0; i < class_args.size(); ++i) type += (i ? ", " : "") + class_args[i];
        type += '>';
      }
    }
  } else {
    type = mono_builtin_name(token_class_name(module, owner));
  }
  if (type.empty()) type = "?";
  std::string inst;
  if (type_arg_count) {
    for (ULONG32 i = 0; i < type_arg_count && i < kMaxTypeArgs; ++i) method_args.push_back(class_name(type_args[i], 1));
    if (shared(method_args)) name_shared_arguments(method_args, generic_parameter_names(md, token));
    inst = "<";
    for (size_t i = 0; i < method_args.size(); ++i) inst += (i ? ", " : "") + method_args[i];
    inst += '>';
  }
  std::string params;
  if (sig) {
    ModuleTypeNames names(*this, module, md, class_args, method_args, 0);
    signature_parameters(sig, sig_size, names, params);
  }
  return method_full_name(type, method, inst, params);
}

std::string ClrNames::dynamic_method_name(FunctionID function) {
  ModuleID module = 0;
  PCCOR_SIGNATURE sig = nullptr;
  ULONG sig_size = 0, length = 0;
  WCHAR name[kNameCapacity];
  if (!succeeded(info_->table->GetDynamicFunctionInfo(info_, function, &module, &sig, &sig_size, kNameCapacity,
                                                      &length, name)))
    return "(dynamic) ?";
  return "(dynamic) " + utf8(name, length && name[length - 1] == 0 ? length - 1 : length);
}

std::string ClrNames::module_name(ModuleID module, uint64_t* base) {
  LPCBYTE address = nullptr;
  WCHAR name[kNameCapacity];
  ULONG length = 0;
  AssemblyID assembly = 0;
  if (!succeeded(info_->table->GetModuleInfo(info_, module, &address, kNameCapacity, &length, name, &assembly)))
    return {};
  if (base) *base = reinterpret_cast<uint64_t>(address);
  return utf8(name, length && name[length - 1] == 0 ? length - 1 : length);
}

std::string ClrNames::assembly_name(AssemblyID assembly) {
  WCHAR name[kNameCapacity];
  ULONG length = 0;
  AppDomainID domain = 0;
  ModuleID manifest = 0;
  if (!succeeded(info_->table->GetAssemblyInfo(info_, assembly, kNameCapacity, &length, name, &domain, &manifest)))
    return {};
  return utf8(name, length && name[length - 1] == 0 ? length - 1 : length);
}

}  // namespace mlpd::coreclr
