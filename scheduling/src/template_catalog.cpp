#include "cnet/scheduling/template_catalog.hpp"

#include <algorithm>
#include <regex>
#include <set>
#include <sstream>

#include "cnet/common/files.hpp"
#include "cnet/common/slurm_config.hpp"
#include "cnet/common/text.hpp"
#include "cnet/topology/features.hpp"

namespace cnet::scheduling {
namespace {

using common::join;

struct Line {
  std::string where;  // "file:line"
  [[noreturn]] void fail(const std::string& what) const { throw TemplateError(where + ": " + what); }
};

// The keys a template may set, as the documentation spells them; the file may use any case (Slurm's rule).
const char* const kKeys[] = {"TemplateName", "Description", "Gpus", "GpuType", "RdmaNics", "MinGpuMemory", "Fabric",
                             "MinBandwidth", "Nodes", "Features", "SameSwitch", "SwitchWait", "Exclusive", "TimeLimit",
                             "Qos", "AllowOverride"};

std::string canonical_key(const std::string& key, const Line& line) {
  for (const char* k : kKeys)
    if (common::equal_ignoring_case(k, key)) return k;
  line.fail("unknown key " + common::printable(key, 64) + "= (known: " + join({std::begin(kKeys) + 1, std::end(kKeys)}, ", ") + ")");
}

unsigned parse_count(const std::string& key, const std::string& v, const Line& line, unsigned max) {
  static const std::regex digits("[0-9]{1,7}");
  if (!std::regex_match(v, digits) || std::stoul(v) > max)
    line.fail(key + "=" + v + " must be a whole number from 0 to " + std::to_string(max));
  return static_cast<unsigned>(std::stoul(v));
}

bool parse_bool(const std::string& key, const std::string& v, const Line& line) {
  std::string l = v;
  std::transform(l.begin(), l.end(), l.begin(), [](unsigned char c) { return std::tolower(c); });
  if (l == "yes" || l == "true" || l == "1") return true;
  if (l == "no" || l == "false" || l == "0") return false;
  line.fail(key + "=" + v + " must be yes or no");
}

// "80G", "80GB", "80" (GB) -> 80
unsigned parse_gigabytes(const std::string& key, const std::string& v, const Line& line) {
  static const std::regex re("([0-9]{1,5})(G|GB)?", std::regex::icase);
  std::smatch m;
  if (!std::regex_match(v, m, re)) line.fail(key + "=" + v + " must be a size in GB, e.g. 80G");
  return static_cast<unsigned>(std::stoul(m[1]));
}

// Slurm time formats: MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS -> minutes (rounded up).
unsigned parse_time_minutes(const std::string& key, const std::string& v, const Line& line) {
  static const std::regex re("(?:([0-9]{1,3})-)?([0-9]{1,5})(?::([0-9]{1,2}))?(?::([0-9]{1,2}))?");
  std::smatch m;
  if (!std::regex_match(v, m, re)) line.fail(key + "=" + v + " is not a Slurm time (MM, HH:MM:SS or D-HH:MM:SS)");
  unsigned long days = m[1].matched ? std::stoul(m[1]) : 0, a = std::stoul(m[2]);
  unsigned long b = m[3].matched ? std::stoul(m[3]) : 0, c = m[4].matched ? std::stoul(m[4]) : 0;
  unsigned long seconds;
  if (m[1].matched) seconds = ((days * 24 + a) * 60 + b) * 60 + c;        // D-HH[:MM[:SS]]
  else if (m[4].matched) seconds = (a * 60 + b) * 60 + c;                  // HH:MM:SS
  else seconds = a * 60 + b;                                               // MM[:SS]
  if (seconds == 0) line.fail(key + "=" + v + " must be longer than zero");
  return static_cast<unsigned>((seconds + 59) / 60);
}

Fabric parse_fabric(const std::string& v, const Line& line) {
  if (v == "any") return Fabric::any;
  if (v == "ib") return Fabric::ib;
  if (v == "roce") return Fabric::roce;
  if (v == "eth") return Fabric::eth;
  line.fail("Fabric=" + v + " must be one of any, ib, roce, eth");
}

std::string any_of(const std::vector<std::string>& options) {
  if (options.empty()) return "";
  if (options.size() == 1) return options.front();
  return "(" + join(options, "|") + ")";
}

}  // namespace

const char* to_string(Fabric fabric) {
  switch (fabric) {
    case Fabric::any: return "any";
    case Fabric::ib: return "ib";
    case Fabric::roce: return "roce";
    case Fabric::eth: return "eth";
  }
  return "any";
}

bool valid_template_name(const std::string& name) {
  static const std::regex re("[A-Za-z0-9][A-Za-z0-9_.-]{0,63}");
  return name.size() <= 64 && std::regex_match(name, re);
}

namespace {

// The GPU memory classes at or above the template's minimum, and the fabrics at or above its bandwidth.
std::vector<std::string> memory_classes_from(unsigned min_gb) {
  std::vector<std::string> out;
  for (unsigned gb : topology::gpu_memory_classes_gb())
    if (gb >= min_gb) out.push_back(topology::memory_class_feature(gb));
  return out;
}

std::vector<std::string> fabrics_from(Fabric fabric, unsigned min_gbps) {
  std::vector<std::string> out;
  for (auto [f, kind] : {std::pair{Fabric::ib, topology::NicKind::ib}, {Fabric::roce, topology::NicKind::roce}, {Fabric::eth, topology::NicKind::eth}})
    if (fabric == Fabric::any || fabric == f)
      for (unsigned r : topology::fabric_rates_gbps(kind))
        if (r >= min_gbps) out.push_back(topology::fabric_feature(kind, r));
  return out;
}

}  // namespace

std::string ResourceTemplate::constraint() const {
  std::vector<std::string> terms = features;
  if (min_gpu_memory_gb) terms.push_back(any_of(memory_classes_from(min_gpu_memory_gb)));
  if (fabric != Fabric::any || min_bandwidth_gbps) terms.push_back(any_of(fabrics_from(fabric, min_bandwidth_gbps)));
  std::erase(terms, "");
  return join(terms, "&");
}

std::string ResourceTemplate::gres_per_node() const {
  std::vector<std::string> gres;
  if (gpus_per_node) gres.push_back("gpu:" + (gpu_type.empty() ? "" : gpu_type + ":") + std::to_string(gpus_per_node));
  if (rdma_per_node) gres.push_back("rdma:" + std::to_string(rdma_per_node));
  return join(gres, ",");
}

std::string ResourceTemplate::summary() const {
  std::ostringstream out;
  out << name;
  if (!description.empty()) out << ": " << description;
  out << " [";
  std::vector<std::string> parts;
  if (nodes_min) parts.push_back("nodes=" + std::to_string(nodes_min) + (nodes_max != nodes_min ? "-" + std::to_string(nodes_max) : ""));
  if (auto g = gres_per_node(); !g.empty()) parts.push_back("gres=" + g);
  if (auto c = constraint(); !c.empty()) parts.push_back("constraint=" + c);
  if (same_switch) parts.push_back("switches=1");
  if (exclusive) parts.push_back("exclusive");
  if (time_limit_min) parts.push_back("time=" + std::to_string(time_limit_min) + "min");
  if (!qos.empty()) parts.push_back("qos=" + qos);
  out << join(parts, " ") << "]";
  return out.str();
}

TemplateCatalog TemplateCatalog::parse(const std::string& text, const std::string& source) {
  TemplateCatalog catalog;
  std::vector<common::ConfigLine> lines;
  try {
    lines = common::parse_config_lines(text, source, true);
  } catch (const common::ConfigError& e) {
    throw TemplateError(e.what());
  }
  static const std::regex identifier("[A-Za-z0-9_.,:+-]{1,128}");
  std::set<std::string> names;
  for (const auto& parsed : lines) {
    Line line{parsed.where()};
    const auto& pairs = parsed.pairs;
    if (!common::equal_ignoring_case(pairs.front().first, "TemplateName"))
      line.fail("each template starts with TemplateName=NAME, found " + common::printable(pairs.front().first, 64) + "=");
    ResourceTemplate t;
    t.name = pairs.front().second;
    if (!valid_template_name(t.name))
      line.fail("TemplateName=" + common::printable(t.name, 64) + " must be letters, digits, '_', '.' or '-' (at most 64)");
    if (t.name == "list") line.fail("TemplateName=list is reserved for --cnet-template=list");
    if (!names.insert(t.name).second) line.fail("template " + t.name + " is defined twice");
    std::set<std::string> seen;
    for (std::size_t i = 1; i < pairs.size(); ++i) {
      const std::string key = canonical_key(pairs[i].first, line);
      const std::string& v = pairs[i].second;
      if (key == "TemplateName") line.fail("TemplateName= given twice on one line (one template per line)");
      if (!seen.insert(key).second) line.fail(key + " given twice for template " + t.name);
      if (key != "Description" && v.empty()) line.fail(key + "= needs a value");
      if (key == "Description") t.description = v;
      else if (key == "Gpus") t.gpus_per_node = parse_count(key, v, line, 64);
      else if (key == "RdmaNics") t.rdma_per_node = parse_count(key, v, line, 64);
      else if (key == "GpuType") {
        if (!std::regex_match(v, identifier) || v.find_first_of(",:") != std::string::npos)
          line.fail("GpuType=" + common::printable(v, 64) + " must be a gres type such as a100 (letters, digits, '_', '.', '-')");
        t.gpu_type = v;
      } else if (key == "MinGpuMemory") t.min_gpu_memory_gb = parse_gigabytes(key, v, line);
      else if (key == "Fabric") t.fabric = parse_fabric(v, line);
      else if (key == "MinBandwidth") t.min_bandwidth_gbps = parse_count(key, v, line, 100000);
      else if (key == "Nodes") {
        static const std::regex range("([0-9]{1,5})(?:-([0-9]{1,5}))?");
        std::smatch m;
        if (!std::regex_match(v, m, range)) line.fail("Nodes=" + common::printable(v, 64) + " must be N or MIN-MAX");
        t.nodes_min = static_cast<unsigned>(std::stoul(m[1]));
        t.nodes_max = m[2].matched ? static_cast<unsigned>(std::stoul(m[2])) : t.nodes_min;
        if (t.nodes_min == 0 || t.nodes_max < t.nodes_min) line.fail("Nodes=" + v + " must be at least 1 and MIN <= MAX");
      } else if (key == "Features") {
        static const std::regex feature("[A-Za-z0-9_.-]{1,64}");
        for (const auto& f : common::split(v)) {
          if (!std::regex_match(f, feature))
            line.fail("Features=" + common::printable(v, 64) + ": '" + common::printable(f, 64) +
                      "' is not a node feature name (letters, digits, '_', '.', '-')");
          t.features.push_back(f);
        }
        if (t.features.empty()) line.fail("Features= needs at least one feature name");
      } else if (key == "SameSwitch") t.same_switch = parse_bool(key, v, line);
      else if (key == "SwitchWait") t.switch_wait_s = parse_time_minutes(key, v, line) * 60;
      else if (key == "Exclusive") t.exclusive = parse_bool(key, v, line);
      else if (key == "TimeLimit") t.time_limit_min = parse_time_minutes(key, v, line);
      else if (key == "Qos") {
        if (!std::regex_match(v, identifier) || v.find_first_of(",:+") != std::string::npos)
          line.fail("Qos=" + common::printable(v, 64) + " must be a QOS name");
        t.qos = v;
      } else if (key == "AllowOverride") t.allow_override = parse_bool(key, v, line);
    }
    if (t.gpu_type.size() && !t.gpus_per_node) line.fail("GpuType= needs Gpus= for template " + t.name);
    auto largest = topology::gpu_memory_classes_gb().back();
    if (t.min_gpu_memory_gb > largest)
      line.fail("MinGpuMemory=" + std::to_string(t.min_gpu_memory_gb) + "G is more than any GPU memory class cnet knows (the largest is " +
                std::to_string(largest) + "G)");
    if ((t.fabric != Fabric::any || t.min_bandwidth_gbps) && fabrics_from(t.fabric, t.min_bandwidth_gbps).empty())
      line.fail("MinBandwidth=" + std::to_string(t.min_bandwidth_gbps) + " is faster than any " + to_string(t.fabric) +
                " link rate cnet knows (the fastest is 800)");
    catalog.templates_.push_back(std::move(t));
  }
  return catalog;
}

TemplateCatalog TemplateCatalog::load(const std::string& path) {
  std::string text;
  try {
    text = common::read_file(path, 1u << 20);
  } catch (const common::FileError& e) {
    throw TemplateError(std::string("cannot read templates file: ") + e.what() + " (check the templates= path in plugstack.conf)");
  }
  return parse(text, path);
}

const ResourceTemplate* TemplateCatalog::find(const std::string& name) const {
  for (const auto& t : templates_)
    if (t.name == name) return &t;
  return nullptr;
}

std::string TemplateCatalog::names() const {
  std::vector<std::string> n;
  for (const auto& t : templates_) n.push_back(t.name);
  return n.empty() ? "(none defined)" : join(n, ", ");
}

}  // namespace cnet::scheduling
