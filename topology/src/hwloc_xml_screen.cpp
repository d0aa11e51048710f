#include "hwloc_xml_screen.hpp"

#include <hwloc.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <iterator>
#include <optional>
#include <regex>
#include <string>

#include "cnet/common/process.hpp"
#include "cnet/topology/discover.hpp"

namespace cnet::topology {
namespace {

constexpr const char* kRegenerate = "regenerate it with 'lstopo --of xml FILE' on the node";

// hwloc 2.x reads only 1.x and 2.x exports and calls anything newer invalid; say which it is.
void refuse_newer_xml_versions(const std::filesystem::path& path, const std::string& text) {
  std::string head = text.substr(0, 4096);
  static const std::regex version("<topology[^>]*\\sversion=\"([0-9]+)(\\.[0-9]+)?\"");
  std::smatch m;
  if (!std::regex_search(head, m, version) || std::stoi(m[1].str().substr(0, 6)) <= HWLOC_API_VERSION >> 16) return;
  throw TopologyError("'" + path.string() + "': hwloc XML version " + m[1].str() + m[2].str() + " is newer than this hwloc (" +
                      std::to_string(HWLOC_API_VERSION >> 16) + ".x) can read; export the node with an hwloc " +
                      std::to_string(HWLOC_API_VERSION >> 16) + ".x lstopo ('lstopo --of xml FILE')");
}

// The value of attribute `name` in one start tag, or nothing; a plain scan, since std::regex recurses
// per character and a long hostile tag would exhaust the stack.
std::optional<std::string> attribute(const std::string& tag, const std::string& name) {
  for (std::size_t at = tag.find(name + "=\""); at != std::string::npos; at = tag.find(name + "=\"", at + 1)) {
    if (at == 0 || !std::isspace(static_cast<unsigned char>(tag[at - 1]))) continue;
    std::size_t begin = at + name.size() + 2, end = tag.find('"', begin);
    if (end == std::string::npos) return std::nullopt;
    return tag.substr(begin, end - begin);
  }
  return std::nullopt;
}

// A PU or NUMA node is placed in its cpuset/nodeset by os_index; without one (or with an absurd one)
// hwloc sets bit 2^32-1 and builds 512 MiB bitmaps, taking seconds and the memory of a slurmd. lstopo
// always writes a real index, so such a file was damaged after export.
void refuse_objects_without_indexes(const std::filesystem::path& path, const std::string& text) {
  constexpr unsigned long kMostIndexes = 1ul << 20;  // far above any machine's CPU or NUMA count
  for (std::size_t at = text.find("<object"); at != std::string::npos; at = text.find("<object", at + 1)) {
    // A tag ends at its '>', or where the next tag begins when it was never closed: each scan stops at
    // the next '<', so a file of unterminated tags is read once, not once per tag.
    std::size_t end = text.find_first_of("<>", at + 1);
    std::string tag = text.substr(at, end == std::string::npos ? std::string::npos : end - at);
    auto type = attribute(tag, "type");
    if (!type || (*type != "PU" && *type != "NUMANode")) continue;
    auto index = attribute(tag, "os_index");
    bool sensible = index && !index->empty() && index->size() <= 7 &&
                    std::all_of(index->begin(), index->end(), [](char c) { return c >= '0' && c <= '9'; }) &&
                    std::stoul(*index) < kMostIndexes;
    if (sensible) continue;
    auto line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n');
    throw TopologyError("'" + path.string() + "' line " + std::to_string(line) + ": a " + *type +
                        " object without a sensible os_index (" + (index ? "'" + *index + "'" : "none") +
                        "), so this is a damaged hwloc XML export; " + kRegenerate);
  }
}

// hwloc before 2.12 trusts an export's structure: a damaged one (an object without complete_cpuset, a
// memory tier without a nodeset) crashes the process reading it, lstopo included. An export is read
// once in a child process first, so a damaged file is an error, not a crash of cnet-topo or slurmd.
void refuse_exports_hwloc_crashes_on(const std::filesystem::path& path) {
  auto r = common::run_in_child([&] {
    hwloc_topology_t probe = nullptr;
    if (hwloc_topology_init(&probe) != 0) return std::string("init");
    hwloc_topology_set_io_types_filter(probe, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    int rc = hwloc_topology_set_xml(probe, path.c_str()) == 0 ? hwloc_topology_load(probe) : -1;
    hwloc_topology_destroy(probe);
    return std::string(rc == 0 ? "ok" : "invalid");
  }, std::chrono::seconds(60));
  if (r.ok() && r.output == "ok") return;
  if (r.ok())  // refused cleanly by hwloc: not loaded again here, where its error path would leak
    throw TopologyError("'" + path.string() + "' is not a valid hwloc 2.x XML export (truncated or damaged?); " + kRegenerate);
  throw TopologyError("'" + path.string() + "' makes hwloc " + (r.timed_out ? "hang" : "crash") +
                      " while reading it: a damaged hwloc XML export (hwloc " HWLOC_VERSION " does not check every attribute); " +
                      kRegenerate);
}

}  // namespace

void screen_hwloc_xml(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  refuse_newer_xml_versions(path, text);
  refuse_objects_without_indexes(path, text);
  refuse_exports_hwloc_crashes_on(path);
}

}  // namespace cnet::topology
