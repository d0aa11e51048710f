#pragma once
// Which Slurm release a plugin file was built for, read from the file without loading it (the
// plugin_version Slurm checks when it loads one), and whether the running Slurm would load it: Slurm
// skips a plugin of another release with one log line, and its features silently vanish.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace cnet::doctor {

// Where a dynamic symbol's bytes lie in an ELF64 little-endian file; nullopt when the file is not one
// or has no such symbol. Every offset is checked against the file.
struct ElfSymbol {
  std::uint64_t file_offset = 0, size = 0;
};
std::optional<ElfSymbol> find_dynamic_symbol(const std::filesystem::path& file, const std::string& name);

// The plugin_version a plugin was built with (SLURM_VERSION_NUMBER, 0x160508 for 22.05.8).
std::optional<std::uint32_t> plugin_version(const std::filesystem::path& plugin);
std::string version_text(std::uint32_t version);                  // 0x160508 -> "22.05.8"
std::optional<std::uint32_t> parse_slurm_version(const std::string& text);  // "slurm 22.05.8" -> 0x160508
// Slurm's rule (src/common/plugin.c): a SPANK plugin must match major and minor, any other the release.
bool slurm_would_load(std::uint32_t plugin, std::uint32_t running, bool spank);

}  // namespace cnet::doctor
