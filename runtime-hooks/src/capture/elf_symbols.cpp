#include "elf_symbols.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string_view>

#include <zlib.h>

namespace mlpd::hooks {

namespace {

// Rank among aliases of one address: a global name is the one a user recognises.
int rank(unsigned char info) {
  switch (ELF64_ST_BIND(info)) {
    case STB_GLOBAL: return 0;
    case STB_WEAK: return 1;
    default: return 2;
  }
}

}  // namespace

bool ElfSymbols::load_file(const std::string& path) {
  symbols_.clear();
  names_.clear();
  from_symtab_ = false;
  build_id_.clear();
  debuglink_.clear();
  debuglink_crc_ = 0;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st;
  if (::fstat(fd, &st) != 0 || st.st_size < static_cast<off_t>(sizeof(Elf64_Ehdr))) {
    ::close(fd);
    return false;
  }
  const size_t len = static_cast<size_t>(st.st_size);
  void* map = ::mmap(nullptr, len, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) return false;
  const bool ok = parse(static_cast<const unsigned char*>(map), len);
  ::munmap(map, len);
  return ok;
}

bool ElfSymbols::load_memory(const unsigned char* data, size_t len) {
  symbols_.clear();
  names_.clear();
  from_symtab_ = false;
  build_id_.clear();
  debuglink_.clear();
  debuglink_crc_ = 0;
  return parse(data, len);
}

bool ElfSymbols::parse(const unsigned char* data, size_t len) {
  if (len < sizeof(Elf64_Ehdr)) return false;
  Elf64_Ehdr eh;
  std::memcpy(&eh, data, sizeof eh);
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff == 0 || eh.e_shoff > len ||
      eh.e_shnum > (len - eh.e_shoff) / sizeof(Elf64_Shdr)) {
    return false;
  }
  auto section = [&](size_t i) {
    Elf64_Shdr sh;
    std::memcpy(&sh, data + eh.e_shoff + i * sizeof(Elf64_Shdr), sizeof sh);
    return sh;
  };
  for (size_t i = 0; i < eh.e_shnum && build_id_.empty(); ++i) {
    const Elf64_Shdr sh = section(i);
    if (sh.sh_type != SHT_NOTE || sh.sh_offset > len || sh.sh_size > len - sh.sh_offset) continue;
    size_t at = sh.sh_offset;
    const size_t end = sh.sh_offset + sh.sh_size;
    while (end - at >= sizeof(Elf64_Nhdr)) {
      Elf64_Nhdr nh;
      std::memcpy(&nh, data + at, sizeof nh);
      const size_t name_at = at + sizeof nh;
      const size_t desc_at = name_at + ((nh.n_namesz + 3) & ~3u);
      if (desc_at > end || nh.n_descsz > end - desc_at) break;
      if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && std::memcmp(data + name_at, "GNU", 4) == 0) {
        static const char kHex[] = "0123456789abcdef";
        for (size_t k = 0; k < nh.n_descsz; ++k) {
          build_id_ += kHex[data[desc_at + k] >> 4];
          build_id_ += kHex[data[desc_at + k] & 15];
        }
        break;
      }
      at = desc_at + ((nh.n_descsz + 3) & ~3u);
    }
  }
  // .gnu_debuglink: a file name (NUL-terminated, padded to 4 bytes), then the debug file's CRC-32.
  if (eh.e_shstrndx < eh.e_shnum) {
    const Elf64_Shdr names = section(eh.e_shstrndx);
    if (names.sh_offset <= len && names.sh_size <= len - names.sh_offset) {
      for (size_t i = 0; i < eh.e_shnum; ++i) {
        const Elf64_Shdr sh = section(i);
        if (sh.sh_name >= names.sh_size || sh.sh_type != SHT_PROGBITS || sh.sh_offset > len || sh.sh_size > len - sh.sh_offset)
          continue;
        const char* nm = reinterpret_cast<const char*>(data + names.sh_offset + sh.sh_name);
        if (strnlen(nm, names.sh_size - sh.sh_name) != 14 || std::memcmp(nm, ".gnu_debuglink", 14) != 0) continue;
        const char* text = reinterpret_cast<const char*>(data + sh.sh_offset);
        const size_t l = strnlen(text, sh.sh_size);
        const size_t crc_at = (l + 4) & ~size_t{3};
        // A bare file name: no directory part, nothing that would lead the lookup elsewhere.
        if (l == 0 || l >= sh.sh_size || crc_at + 4 > sh.sh_size || std::memchr(text, '/', l) || std::string_view(text, l) == "..")
          break;
        debuglink_.assign(text, l);
        std::memcpy(&debuglink_crc_, data + sh.sh_offset + crc_at, 4);  // in the file's byte order: little-endian here
        break;
      }
    }
  }
  // .symtab (every function, static ones included) when present, else .dynsym (exported only).
  int table = -1;
  for (size_t i = 0; i < eh.e_shnum; ++i) {
    const Elf64_Shdr sh = section(i);
    if (sh.sh_type == SHT_SYMTAB && sh.sh_size > sizeof(Elf64_Sym)) {
      table = static_cast<int>(i);
      from_symtab_ = true;
      break;
    }
    if (sh.sh_type == SHT_DYNSYM && table < 0) table = static_cast<int>(i);
  }
  if (table < 0) return false;
  const Elf64_Shdr sym = section(static_cast<size_t>(table));
  if (sym.sh_link >= eh.e_shnum || sym.sh_offset > len || sym.sh_size > len - sym.sh_offset) return false;
  const Elf64_Shdr str = section(sym.sh_link);
  if (str.sh_offset > len || str.sh_size > len - str.sh_offset) return false;
  const char* strings = reinterpret_cast<const char*>(data + str.sh_offset);

  struct Candidate {
    uint64_t value, size;
    int rank;
    uint32_t name;
  };
  std::vector<Candidate> found;  // freed on return: only the compact table stays
  const size_t n = sym.sh_size / sizeof(Elf64_Sym);
  found.reserve(n / 2);
  for (size_t i = 0; i < n; ++i) {
    Elf64_Sym s;
    std::memcpy(&s, data + sym.sh_offset + i * sizeof(Elf64_Sym), sizeof s);
    const unsigned type = ELF64_ST_TYPE(s.st_info);
    if ((type != STT_FUNC && type != STT_GNU_IFUNC) || s.st_shndx == SHN_UNDEF || s.st_size == 0 ||
        s.st_name >= str.sh_size || strings[s.st_name] == '\0') {
      continue;
    }
    found.push_back({s.st_value, s.st_size, rank(s.st_info), s.st_name});
  }
  std::sort(found.begin(), found.end(), [](const Candidate& a, const Candidate& b) {
    if (a.value != b.value) return a.value < b.value;
    if (a.rank != b.rank) return a.rank < b.rank;
    return a.size > b.size;
  });
  // Sized exactly: a first pass counts the symbols kept and their names' bytes.
  size_t kept = 0, bytes = 0;
  for (size_t i = 0; i < found.size(); ++i) {
    if (i > 0 && found[i - 1].value == found[i].value) continue;  // an alias: the best came first
    ++kept;
    bytes += strnlen(strings + found[i].name, str.sh_size - found[i].name);
  }
  if (bytes > UINT32_MAX) return false;
  symbols_.reserve(kept);
  names_.reserve(bytes);
  for (size_t i = 0; i < found.size(); ++i) {
    if (i > 0 && found[i - 1].value == found[i].value) continue;
    const Candidate& c = found[i];
    const size_t l = strnlen(strings + c.name, str.sh_size - c.name);
    symbols_.push_back({c.value, c.size, static_cast<uint32_t>(names_.size()), static_cast<uint32_t>(l)});
    names_.append(strings + c.name, l);
  }
  return true;
}

const ElfSymbols::Symbol* ElfSymbols::find(uint64_t value, uint64_t& gap_start, uint64_t& gap_end) const {
  auto it = std::upper_bound(symbols_.begin(), symbols_.end(), value,
                             [](uint64_t v, const Symbol& s) { return v < s.value; });
  gap_end = it == symbols_.end() ? UINT64_MAX : it->value;
  gap_start = 0;
  // Symbols may nest or overlap (a function inside a larger one's range is rare but legal): look a
  // few entries back for one that covers the address.
  for (int back = 0; it != symbols_.begin() && back < 8; ++back) {
    --it;
    if (value < it->value + it->size) return &*it;
    gap_start = std::max(gap_start, it->value + it->size);
  }
  return nullptr;
}

bool file_crc32(const std::string& path, uint32_t& crc) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  uLong c = ::crc32(0L, Z_NULL, 0);
  std::vector<unsigned char> buf(1 << 16);  // not on the stack: the helper thread's is small
  ssize_t n;
  while ((n = ::read(fd, buf.data(), buf.size())) > 0) c = ::crc32(c, buf.data(), static_cast<uInt>(n));
  ::close(fd);
  if (n < 0) return false;
  crc = static_cast<uint32_t>(c);
  return true;
}

}  // namespace mlpd::hooks
