// Function symbols of one ELF image, for naming sampled native code: `.symtab` when the file has one,
// `.dynsym` otherwise, each with its real start and size. Helper thread only (reads files, allocates).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mlpd::hooks {

class ElfSymbols {
 public:
  // 24 bytes; the names live in one pool (names_), not in a string each: a large library's .symtab
  // has tens of thousands of functions, and the helper keeps every sampled module's table.
  struct Symbol {
    uint64_t value;  // st_value: the start, relative to the module's load bias
    uint64_t size;
    uint32_t name_at;   // in names_
    uint32_t name_len;
  };

  // Reads the ELF file at `path`. False (and no symbols) if it is not a readable 64-bit ELF file.
  bool load_file(const std::string& path);
  // Parses an ELF image already in memory (the vDSO). `len` bounds every read.
  bool load_memory(const unsigned char* data, size_t len);

  // The function symbol containing `value` (bias already subtracted), or nullptr. Where no symbol
  // covers it, `gap_start`/`gap_end` receive the stretch between the neighbouring symbols (0 and
  // UINT64_MAX at the ends), so that the caller can describe the gap instead of blaming a neighbour.
  const Symbol* find(uint64_t value, uint64_t& gap_start, uint64_t& gap_end) const;

  std::string_view name(const Symbol& s) const { return std::string_view(names_).substr(s.name_at, s.name_len); }

  bool from_symtab() const { return from_symtab_; }
  // The GNU build id (hex), empty if the image has none: it names the separate debug file
  // (/usr/lib/debug/.build-id/xx/yyyy.debug) whose .symtab a stripped library lacks.
  const std::string& build_id() const { return build_id_; }
  // The .gnu_debuglink section: the separate debug file's name (empty if none) and its CRC-32.
  const std::string& debuglink() const { return debuglink_; }
  uint32_t debuglink_crc() const { return debuglink_crc_; }
  size_t size() const { return symbols_.size(); }

 private:
  bool parse(const unsigned char* data, size_t len);

  std::vector<Symbol> symbols_;  // sorted by value, no two with the same value
  std::string names_;
  bool from_symtab_ = false;
  std::string build_id_;
  std::string debuglink_;
  uint32_t debuglink_crc_ = 0;
};

// The CRC-32 of the file at `path` (the .gnu_debuglink checksum, zlib's polynomial); false if unreadable.
bool file_crc32(const std::string& path, uint32_t& crc);

}  // namespace mlpd::hooks
