#include "cnet/doctor/slurm_plugins.hpp"

#include <elf.h>

#include <cstring>
#include <fstream>
#include <regex>
#include <vector>

namespace cnet::doctor {
namespace {

// Reads `n` bytes at `at`; false when the file is shorter.
bool read_at(std::ifstream& in, std::uint64_t at, void* out, std::size_t n, std::uint64_t file_size) {
  if (at > file_size || n > file_size - at) return false;
  in.seekg(static_cast<std::streamoff>(at));
  return static_cast<bool>(in.read(static_cast<char*>(out), static_cast<std::streamsize>(n)));
}

}  // namespace

std::optional<ElfSymbol> find_dynamic_symbol(const std::filesystem::path& file, const std::string& name) {
  std::error_code ec;
  std::uint64_t size = std::filesystem::file_size(file, ec);
  if (ec || !std::filesystem::is_regular_file(file, ec)) return std::nullopt;
  std::ifstream in(file, std::ios::binary);
  Elf64_Ehdr eh{};
  if (!read_at(in, 0, &eh, sizeof eh, size) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0 || eh.e_shnum > 4096)
    return std::nullopt;
  std::vector<Elf64_Shdr> sections(eh.e_shnum);
  if (!read_at(in, eh.e_shoff, sections.data(), sections.size() * sizeof(Elf64_Shdr), size)) return std::nullopt;
  for (const auto& symtab : sections) {
    if (symtab.sh_type != SHT_DYNSYM || symtab.sh_link >= sections.size() || symtab.sh_entsize != sizeof(Elf64_Sym)) continue;
    const Elf64_Shdr& strtab = sections[symtab.sh_link];
    if (strtab.sh_size > (16u << 20) || symtab.sh_size > (64u << 20)) return std::nullopt;
    std::vector<char> names(strtab.sh_size + 1, '\0');
    if (!read_at(in, strtab.sh_offset, names.data(), strtab.sh_size, size)) return std::nullopt;
    std::vector<Elf64_Sym> symbols(symtab.sh_size / sizeof(Elf64_Sym));
    if (!read_at(in, symtab.sh_offset, symbols.data(), symbols.size() * sizeof(Elf64_Sym), size)) return std::nullopt;
    for (const auto& sym : symbols) {
      if (sym.st_name >= strtab.sh_size || name != &names[sym.st_name]) continue;
      if (sym.st_shndx == SHN_UNDEF || sym.st_shndx >= sections.size()) return std::nullopt;
      const Elf64_Shdr& holder = sections[sym.st_shndx];
      if (holder.sh_type == SHT_NOBITS || sym.st_value < holder.sh_addr || sym.st_value - holder.sh_addr > holder.sh_size) return std::nullopt;
      std::uint64_t offset = holder.sh_offset + (sym.st_value - holder.sh_addr);
      if (offset > size || sym.st_size > size - offset) return std::nullopt;
      return ElfSymbol{offset, sym.st_size};
    }
  }
  return std::nullopt;
}

std::optional<std::uint32_t> plugin_version(const std::filesystem::path& plugin) {
  auto sym = find_dynamic_symbol(plugin, "plugin_version");
  if (!sym || sym->size != 4) return std::nullopt;
  std::ifstream in(plugin, std::ios::binary);
  std::uint32_t v = 0;
  in.seekg(static_cast<std::streamoff>(sym->file_offset));
  if (!in.read(reinterpret_cast<char*>(&v), 4)) return std::nullopt;
  return v;
}

std::string version_text(std::uint32_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%u.%02u.%u", (v >> 16) & 0xff, (v >> 8) & 0xff, v & 0xff);
  return buf;
}

std::optional<std::uint32_t> parse_slurm_version(const std::string& text) {
  static const std::regex re(R"(([0-9]{1,3})\.([0-9]{1,2})\.([0-9]{1,3}))");
  std::smatch m;
  if (!std::regex_search(text, m, re)) return std::nullopt;
  unsigned major = std::stoul(m[1]), minor = std::stoul(m[2]), micro = std::stoul(m[3]);
  if (major > 255 || minor > 255 || micro > 255) return std::nullopt;
  return (major << 16) | (minor << 8) | micro;
}

bool slurm_would_load(std::uint32_t plugin, std::uint32_t running, bool spank) {
  std::uint32_t mask = spank ? 0xffff00 : 0xffffff;
  return (plugin & mask) == (running & mask);
}

}  // namespace cnet::doctor
