#include "coreclr/mono_names.h"

namespace mlpd::coreclr {

namespace {

// ECMA-335 II.23.1.16 element types.
enum : uint8_t {
  kEnd = 0x00,
  kVoid = 0x01,
  kBoolean = 0x02,
  kChar = 0x03,
  kI1 = 0x04,
  kU1 = 0x05,
  kI2 = 0x06,
  kU2 = 0x07,
  kI4 = 0x08,
  kU4 = 0x09,
  kI8 = 0x0a,
  kU8 = 0x0b,
  kR4 = 0x0c,
  kR8 = 0x0d,
  kString = 0x0e,
  kPtr = 0x0f,
  kByRef = 0x10,
  kValueType = 0x11,
  kClass = 0x12,
  kVar = 0x13,
  kArray = 0x14,
  kGenericInst = 0x15,
  kTypedByRef = 0x16,
  kI = 0x18,
  kU = 0x19,
  kFnPtr = 0x1b,
  kObject = 0x1c,
  kSzArray = 0x1d,
  kMVar = 0x1e,
  kCModReqd = 0x1f,
  kCModOpt = 0x20,
  kSentinel = 0x41,
  kPinned = 0x45,
};

constexpr int kMaxDepth = 32;  // nesting of types in one blob (a hostile blob cannot recurse deeper)

struct Reader {
  const uint8_t* p;
  const uint8_t* end;
  bool bad = false;

  bool byte(uint8_t& b) {
    if (p >= end) return bad = true, false;
    b = *p++;
    return true;
  }
  bool peek(uint8_t& b) const {
    if (p >= end) return false;
    b = *p;
    return true;
  }
  // II.23.2: compressed unsigned integer (1, 2 or 4 bytes).
  bool compressed(uint32_t& v) {
    uint8_t b0;
    if (!byte(b0)) return false;
    if ((b0 & 0x80) == 0) {
      v = b0;
      return true;
    }
    if ((b0 & 0xC0) == 0x80) {
      uint8_t b1;
      if (!byte(b1)) return false;
      v = (static_cast<uint32_t>(b0 & 0x3F) << 8) | b1;
      return true;
    }
    if ((b0 & 0xE0) == 0xC0) {
      uint8_t b1, b2, b3;
      if (!byte(b1) || !byte(b2) || !byte(b3)) return false;
      v = (static_cast<uint32_t>(b0 & 0x1F) << 24) | (static_cast<uint32_t>(b1) << 16) |
          (static_cast<uint32_t>(b2) << 8) | b3;
      return true;
    }
    return bad = true, false;
  }
  // II.23.2.8: TypeDefOrRefOrSpecEncoded -> a token.
  bool type_token(uint32_t& token) {
    uint32_t v;
    if (!compressed(v)) return false;
    static constexpr uint32_t kTables[] = {0x02000000, 0x01000000, 0x1b000000};
    if ((v & 3) == 3) return bad = true, false;
    token = kTables[v & 3] | (v >> 2);
    return true;
  }
};

void append_token_type(uint32_t token, TypeNames& names, std::string& out, int depth);
bool type(Reader& r, TypeNames& names, std::string& out, int depth);

// CustomMod* before a type: appended after it, as Mono prints them.
bool custom_modifiers(Reader& r, TypeNames& names, std::string& mods, int depth) {
  uint8_t b;
  while (r.peek(b) && (b == kCModReqd || b == kCModOpt)) {
    ++r.p;
    uint32_t token;
    if (!r.type_token(token)) return false;
    mods += b == kCModReqd ? " modreq(" : " modopt(";
    append_token_type(token, names, mods, depth + 1);
    mods += ')';
  }
  return true;
}

const char* builtin(uint8_t e) {
  switch (e) {
    case kVoid: return "void";
    case kBoolean: return "bool";
    case kChar: return "char";
    case kI1: return "sbyte";
    case kU1: return "byte";
    case kI2: return "int16";
    case kU2: return "uint16";
    case kI4: return "int";
    case kU4: return "uint";
    case kI8: return "long";
    case kU8: return "ulong";
    case kR4: return "single";
    case kR8: return "double";
    case kString: return "string";
    case kI: return "intptr";
    case kU: return "uintptr";
    case kObject: return "object";
    case kTypedByRef: return "typedbyref";
    default: return nullptr;
  }
}

void append_token_type(uint32_t token, TypeNames& names, std::string& out, int depth) {
  if ((token >> 24) == 0x1b) {
    const uint8_t* blob = nullptr;
    size_t size = 0;
    if (depth < kMaxDepth && names.type_spec(token, blob, size)) {
      Reader inner{blob, blob + size};
      if (type(inner, names, out, depth + 1)) return;
    }
    out += '?';
    return;
  }
  std::string name = names.type_name(token);
  out += name.empty() ? std::string("?") : name;
}

// One Type (II.23.2.12), with its custom modifiers and a leading BYREF.
bool type(Reader& r, TypeNames& names, std::string& out, int depth) {
  if (depth > kMaxDepth) {
    out += '?';
    return r.bad = true, false;
  }
  std::string mods;
  if (!custom_modifiers(r, names, mods, depth)) {
    out += '?';
    return false;
  }
  uint8_t e;
  if (!r.byte(e)) {
    out += '?';
    return false;
  }
  bool byref = false;
  if (e == kByRef) {
    byref = true;
    if (!custom_modifiers(r, names, mods, depth) || !r.byte(e)) {
      out += '?';
      return false;
    }
  }
  if (e == kPinned) return type(r, names, out, depth + 1);
  bool ok = true;
  if (const char* b = builtin(e)) {
    out += b;
  } else {
    switch (e) {
      case kPtr:
        ok = type(r, names, out, depth + 1);
        out += '*';
        break;
      case kValueType:
      case kClass: {
        uint32_t token;
        if (!r.type_token(token)) {
          out += '?';
          return false;
        }
        append_token_type(token, names, out, depth);
        break;
      }
      case kVar:
      case kMVar: {
        uint32_t index;
        if (!r.compressed(index)) {
          out += '?';
          return false;
        }
        std::string name = names.generic_parameter(e == kMVar, index);
        out += name.empty() ? (e == kMVar ? "!!" : "!") + std::to_string(index) : name;
        break;
      }
      case kSzArray:
        ok = type(r, names, out, depth + 1);
        out += "[]";
        break;
      case kArray: {
        ok = type(r, names, out, depth + 1);
        uint32_t rank = 0, sizes = 0, bounds = 0, v = 0;
        if (!ok || !r.compressed(rank) || !r.compressed(sizes)) {
          out += '?';
          return false;
        }
        for (uint32_t i = 0; i < sizes; ++i)
          if (!r.compressed(v)) return out += '?', false;
        if (!r.compressed(bounds)) return out += '?', false;
        for (uint32_t i = 0; i < bounds; ++i)
          if (!r.compressed(v)) return out += '?', false;  // signed, same length
        if (rank > 256) return out += '?', r.bad = true, false;
        out += '[';
        for (uint32_t i = 1; i < rank; ++i) out += ',';
        out += ']';
        break;
      }
      case kGenericInst: {
        uint8_t kind;
        uint32_t token, count;
        if (!r.byte(kind) || (kind != kClass && kind != kValueType) || !r.type_token(token) ||
            !r.compressed(count) || count > 1024) {
          out += '?';
          return r.bad = true, false;
        }
        append_token_type(token, names, out, depth);
        out += '<';
        for (uint32_t i = 0; i < count && ok; ++i) {
          if (i) out += ", ";
          ok = type(r, names, out, depth + 1);
        }
        out += '>';
        break;
      }
      case kFnPtr: {
        // The method signature is read (to stay in step) and printed as Mono does: "*()".
        Reader sig{r.p, r.end};
        uint8_t conv;
        uint32_t params;
        if (!sig.byte(conv)) return out += '?', false;
        if (conv & 0x10) {
          uint32_t generic;
          if (!sig.compressed(generic)) return out += '?', false;
        }
        if (!sig.compressed(params) || params > 4096) return out += '?', false;
        std::string scratch;
        for (uint32_t i = 0; i <= params && ok; ++i) ok = type(sig, names, scratch, depth + 1);
        r.p = sig.p;
        out += "*()";
        break;
      }
      default:
        out += '?';
        return r.bad = true, false;
    }
  }
  out += mods;
  if (byref) out += '&';
  return ok && !r.bad;
}

}  // namespace

size_t append_type(const uint8_t* blob, size_t size, TypeNames& names, std::string& out) {
  Reader r{blob, blob + size};
  if (!type(r, names, out, 0)) return 0;
  return static_cast<size_t>(r.p - blob);
}

bool signature_parameters(const uint8_t* blob, size_t size, TypeNames& names, std::string& out) {
  Reader r{blob, blob + size};
  uint8_t conv;
  uint32_t count = 0;
  if (!r.byte(conv)) return out += '?', false;
  if (conv & 0x10) {  // GENERIC: the number of generic parameters comes first
    uint32_t generic;
    if (!r.compressed(generic)) return out += '?', false;
  }
  if (!r.compressed(count) || count > 65535) return out += '?', false;
  std::string ret;
  if (!type(r, names, ret, 0)) return out += '?', false;  // the return type, not printed
  for (uint32_t i = 0; i < count; ++i) {
    uint8_t b;
    if (r.peek(b) && b == kSentinel) ++r.p;  // varargs: the fixed part ends here
    if (i) out += ',';
    if (!type(r, names, out, 0)) return false;
  }
  return true;
}

std::string method_full_name(std::string_view type_name, std::string_view method,
                             std::string_view method_instantiation, std::string_view params) {
  std::string s;
  s.reserve(type_name.size() + method.size() + method_instantiation.size() + params.size() + 4);
  s.append(type_name).append(":").append(method).append(method_instantiation).append(" (").append(params).append(")");
  return s;
}

std::string class_name(std::string_view name_space, std::string_view name) {
  std::string s;
  if (!name_space.empty()) s.append(name_space).append(".");
  s.append(name);
  return s;
}

std::string utf8(const char16_t* text, size_t length) {
  std::string s;
  s.reserve(length);
  for (size_t i = 0; i < length; ++i) {
    uint32_t c = text[i];
    if (c >= 0xD800 && c <= 0xDBFF && i + 1 < length && text[i + 1] >= 0xDC00 && text[i + 1] <= 0xDFFF) {
      c = 0x10000 + ((c - 0xD800) << 10) + (static_cast<uint32_t>(text[i + 1]) - 0xDC00);
      ++i;
    } else if (c >= 0xD800 && c <= 0xDFFF) {
      c = 0xFFFD;
    }
    if (c < 0x80) {
      s += static_cast<char>(c);
    } else if (c < 0x800) {
      s += static_cast<char>(0xC0 | (c >> 6));
      s += static_cast<char>(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
      s += static_cast<char>(0xE0 | (c >> 12));
      s += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      s += static_cast<char>(0x80 | (c & 0x3F));
    } else {
      s += static_cast<char>(0xF0 | (c >> 18));
      s += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
      s += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      s += static_cast<char>(0x80 | (c & 0x3F));
    }
  }
  return s;
}

}  // namespace mlpd::coreclr
