// IMetaDataImport and IMetaDataImport2, declared by mlpd itself: the runtime's reader of a module's
// metadata (types, methods, signatures), which the profiler gets from ICorProfilerInfo's
// GetModuleMetaData and uses to name methods and classes. Facts (method order, IIDs) from the
// documented declaration (dotnet/runtime, src/coreclr/inc/cor.h); the shapes are profiling_api.h's.
// The whole table is declared (62 + 8 methods): the object is the runtime's, and a table declared
// short would still be read correctly, but the tests' counts check the order against cor.h's.
#pragma once

#include "coreclr/profiling_api.h"

namespace mlpd::coreclr {

using HCORENUM = void*;
using PCCOR_SIGNATURE = const BYTE*;

inline constexpr Guid kIID_IMetaDataImport = guid("7DAC8207-D3AE-4c75-9B67-92801A497D44");
inline constexpr Guid kIID_IMetaDataImport2 = guid("FCE5EFA0-8BBA-4f8e-A036-8F2022B08466");
inline constexpr DWORD kOfRead = 0;  // GetModuleMetaData's open flags: read only

#define MLPD_IMPORT1_SLOTS(X)                                                                                  \
  X(void, CloseEnum, HCORENUM e)                                                                               \
  X(HRESULT, CountEnum, HCORENUM e, ULONG* count)                                                              \
  X(HRESULT, ResetEnum, HCORENUM e, ULONG position)                                                            \
  X(HRESULT, EnumTypeDefs, HCORENUM* e, mdTypeDef* out, ULONG capacity, ULONG* count)                          \
  X(HRESULT, EnumInterfaceImpls, HCORENUM* e, mdTypeDef type, mdToken* out, ULONG capacity, ULONG* count)     \
  X(HRESULT, EnumTypeRefs, HCORENUM* e, mdToken* out, ULONG capacity, ULONG* count)                            \
  X(HRESULT, FindTypeDefByName, const WCHAR* name, mdToken enclosing, mdTypeDef* type)                         \
  X(HRESULT, GetScopeProps, WCHAR* name, ULONG capacity, ULONG* length, Guid* mvid)                            \
  X(HRESULT, GetModuleFromScope, mdToken* module)                                                              \
  X(HRESULT, GetTypeDefProps, mdTypeDef type, WCHAR* name, ULONG capacity, ULONG* length, DWORD* flags,        \
    mdToken* extends)                                                                                          \
  X(HRESULT, GetInterfaceImplProps, mdToken impl, mdTypeDef* klass, mdToken* iface)                            \
  X(HRESULT, GetTypeRefProps, mdToken ref, mdToken* scope, WCHAR* name, ULONG capacity, ULONG* length)         \
  X(HRESULT, ResolveTypeRef, mdToken ref, const Guid* riid, void** scope, mdTypeDef* type)                     \
  X(HRESULT, EnumMembers, HCORENUM* e, mdTypeDef type, mdToken* out, ULONG capacity, ULONG* count)            \
  X(HRESULT, EnumMembersWithName, HCORENUM* e, mdTypeDef type, const WCHAR* name, mdToken* out,               \
    ULONG capacity, ULONG* count)                                                                              \
  X(HRESULT, EnumMethods, HCORENUM* e, mdTypeDef type, mdMethodDef* out, ULONG capacity, ULONG* count)        \
  X(HRESULT, EnumMethodsWithName, HCORENUM* e, mdTypeDef type, const WCHAR* name, mdMethodDef* out,           \
    ULONG capacity, ULONG* count)                                                                              \
  X(HRESULT, EnumFields, HCORENUM* e, mdTypeDef type, mdFieldDef* out, ULONG capacity, ULONG* count)          \
  X(HRESULT, EnumFieldsWithName, HCORENUM* e, mdTypeDef type, const WCHAR* name, mdFieldDef* out,             \
    ULONG capacity, ULONG* count)                                                                              \
  X(HRESULT, EnumParams, HCORENUM* e, mdMethodDef method, mdToken* out, ULONG capacity, ULONG* count)         \
  X(HRESULT, EnumMemberRefs, HCORENUM* e, mdToken parent, mdToken* out, ULONG capacity, ULONG* count)         \
  X(HRESULT, EnumMethodImpls, HCORENUM* e, mdTypeDef type, mdToken* bodies, mdToken* decls, ULONG capacity,   \
    ULONG* count)                                                                                              \
  X(HRESULT, EnumPermissionSets, HCORENUM* e, mdToken token, DWORD actions, mdToken* out, ULONG capacity,     \
    ULONG* count)                                                                                              \
  X(HRESULT, FindMember, mdTypeDef type, const WCHAR* name, PCCOR_SIGNATURE sig, ULONG sig_size, mdToken* m)  \
  X(HRESULT, FindMethod, mdTypeDef type, const WCHAR* name, PCCOR_SIGNATURE sig, ULONG sig_size,              \
    mdMethodDef* m)                                                                                            \
  X(HRESULT, FindField, mdTypeDef type, const WCHAR* name, PCCOR_SIGNATURE sig, ULONG sig_size, mdFieldDef* f) \
  X(HRESULT, FindMemberRef, mdToken ref, const WCHAR* name, PCCOR_SIGNATURE sig, ULONG sig_size, mdToken* m)  \
  X(HRESULT, GetMethodProps, mdMethodDef method, mdTypeDef* klass, WCHAR* name, ULONG capacity, ULONG* length, \
    DWORD* attributes, PCCOR_SIGNATURE* sig, ULONG* sig_size, ULONG* code_rva, DWORD* impl_flags)             \
  X(HRESULT, GetMemberRefProps, mdToken ref, mdToken* parent, WCHAR* name, ULONG capacity, ULONG* length,     \
    PCCOR_SIGNATURE* sig, ULONG* sig_size)                                                                     \
  X(HRESULT, EnumProperties, HCORENUM* e, mdTypeDef type, mdToken* out, ULONG capacity, ULONG* count)         \
  X(HRESULT, EnumEvents, HCORENUM* e, mdTypeDef type, mdToken* out, ULONG capacity, ULONG* count)             \
  X(HRESULT, GetEventProps, mdToken ev, mdTypeDef* klass, const WCHAR* name, ULONG capacity, ULONG* length,   \
    DWORD* flags, mdToken* type, mdMethodDef* add, mdMethodDef* remove, mdMethodDef* fire,                    \
    mdMethodDef* others, ULONG others_capacity, ULONG* others_count)                                           \
  X(HRESULT, EnumMethodSemantics, HCORENUM* e, mdMethodDef method, mdToken* out, ULONG capacity, ULONG* count) \
  X(HRESULT, GetMethodSemantics, mdMethodDef method, mdToken event_or_property, DWORD* flags)                  \
  X(HRESULT, GetClassLayout, mdTypeDef type, DWORD* pack, void* offsets, ULONG capacity, ULONG* count,        \
    ULONG* size)                                                                                               \
  X(HRESULT, GetFieldMarshal, mdToken field, PCCOR_SIGNATURE* native_type, ULONG* size)                        \
  X(HRESULT, GetRVA, mdToken token, ULONG* rva, DWORD* impl_flags)                                             \
  X(HRESULT, GetPermissionSetProps, mdToken permission, DWORD* action, const void** blob, ULONG* size)        \
  X(HRESULT, GetSigFromToken, mdToken signature, PCCOR_SIGNATURE* sig, ULONG* size)                            \
  X(HRESULT, GetModuleRefProps, mdToken ref, WCHAR* name, ULONG capacity, ULONG* length)                       \
  X(HRESULT, EnumModuleRefs, HCORENUM* e, mdToken* out, ULONG capacity, ULONG* count)                          \
  X(HRESULT, GetTypeSpecFromToken, mdToken spec, PCCOR_SIGNATURE* sig, ULONG* size)                            \
  X(HRESULT, GetNameFromToken, mdToken token, const char** utf8_name)                                          \
  X(HRESULT, EnumUnresolvedMethods, HCORENUM* e, mdToken* out, ULONG capacity, ULONG* count)                   \
  X(HRESULT, GetUserString, mdToken string, WCHAR* text, ULONG capacity, ULONG* length)                        \
  X(HRESULT, GetPinvokeMap, mdToken token, DWORD* flags, WCHAR* name, ULONG capacity, ULONG* length,          \
    mdToken* dll)                                                                                              \
  X(HRESULT, EnumSignatures, HCORENUM* e, mdToken* out, ULONG capacity, ULONG* count)                          \
  X(HRESULT, EnumTypeSpecs, HCORENUM* e, mdToken* out, ULONG capacity, ULONG* count)                           \
  X(HRESULT, EnumUserStrings, HCORENUM* e, mdToken* out, ULONG capacity, ULONG* count)                         \
  X(HRESULT, GetParamForMethodIndex, mdMethodDef method, ULONG sequence, mdToken* param)                       \
  X(HRESULT, EnumCustomAttributes, HCORENUM* e, mdToken token, mdToken type, mdToken* out, ULONG capacity,    \
    ULONG* count)                                                                                              \
  X(HRESULT, GetCustomAttributeProps, mdToken attribute, mdToken* object, mdToken* type, const void** blob,   \
    ULONG* size)                                                                                               \
  X(HRESULT, FindTypeRef, mdToken scope, const WCHAR* name, mdToken* ref)                                      \
  X(HRESULT, GetMemberProps, mdToken member, mdTypeDef* klass, WCHAR* name, ULONG capacity, ULONG* length,    \
    DWORD* attributes, PCCOR_SIGNATURE* sig, ULONG* sig_size, ULONG* code_rva, DWORD* impl_flags,             \
    DWORD* value_type, const void** value, ULONG* value_length)                                                \
  X(HRESULT, GetFieldProps, mdFieldDef field, mdTypeDef* klass, WCHAR* name, ULONG capacity, ULONG* length,   \
    DWORD* attributes, PCCOR_SIGNATURE* sig, ULONG* sig_size, DWORD* value_type, const void** value,          \
    ULONG* value_length)                                                                                       \
  X(HRESULT, GetPropertyProps, mdToken property, mdTypeDef* klass, const WCHAR* name, ULONG capacity,         \
    ULONG* length, DWORD* flags, PCCOR_SIGNATURE* sig, ULONG* sig_size, DWORD* value_type,                    \
    const void** value, ULONG* value_length, mdMethodDef* setter, mdMethodDef* getter, mdMethodDef* others,   \
    ULONG others_capacity, ULONG* others_count)                                                                \
  X(HRESULT, GetParamProps, mdToken param, mdMethodDef* method, ULONG* sequence, WCHAR* name, ULONG capacity, \
    ULONG* length, DWORD* attributes, DWORD* value_type, const void** value, ULONG* value_length)             \
  X(HRESULT, GetCustomAttributeByName, mdToken object, const WCHAR* name, const void** data, ULONG* size)     \
  X(BOOL, IsValidToken, mdToken token)                                                                         \
  X(HRESULT, GetNestedClassProps, mdTypeDef nested, mdTypeDef* enclosing)                                      \
  X(HRESULT, GetNativeCallConvFromSig, const void* sig, ULONG sig_size, ULONG* call_conv)                      \
  X(HRESULT, IsGlobal, mdToken token, int* global)

#define MLPD_IMPORT2_SLOTS(X)                                                                                  \
  X(HRESULT, EnumGenericParams, HCORENUM* e, mdToken owner, mdToken* out, ULONG capacity, ULONG* count)        \
  X(HRESULT, GetGenericParamProps, mdToken param, ULONG* sequence, DWORD* flags, mdToken* owner,              \
    DWORD* reserved, WCHAR* name, ULONG capacity, ULONG* length)                                               \
  X(HRESULT, GetMethodSpecProps, mdToken spec, mdToken* parent, PCCOR_SIGNATURE* sig, ULONG* sig_size)         \
  X(HRESULT, EnumGenericParamConstraints, HCORENUM* e, mdToken param, mdToken* out, ULONG capacity,           \
    ULONG* count)                                                                                              \
  X(HRESULT, GetGenericParamConstraintProps, mdToken constraint, mdToken* param, mdToken* type)               \
  X(HRESULT, GetPEKind, DWORD* pe_kind, DWORD* machine)                                                        \
  X(HRESULT, GetVersionString, WCHAR* text, DWORD capacity, DWORD* length)                                     \
  X(HRESULT, EnumMethodSpecs, HCORENUM* e, mdToken method, mdToken* out, ULONG capacity, ULONG* count)

struct MetaDataImport;
struct MetaDataImportTable1 {
  using Self = MetaDataImport;
  MLPD_IUNKNOWN_SLOTS(MLPD_SLOT)
  MLPD_IMPORT1_SLOTS(MLPD_SLOT)
};
struct MetaDataImportTable2 {
  using Self = MetaDataImport;
  MLPD_IUNKNOWN_SLOTS(MLPD_SLOT)
  MLPD_IMPORT1_SLOTS(MLPD_SLOT)
  MLPD_IMPORT2_SLOTS(MLPD_SLOT)
};
// The runtime's metadata reader of one module, asked for as IMetaDataImport2.
struct MetaDataImport {
  const MetaDataImportTable2* table;
};

}  // namespace mlpd::coreclr
