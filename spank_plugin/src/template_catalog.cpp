#include "cnet/spank/template_catalog.hpp"
#include "cnet/spank/text_lists.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

namespace cnet::scheduling {
namespace {

// Marketed GPU memory sizes (GB) and link rates (Gb/s) nodes advertise as features (cnet-topo --format
// features); a minimum becomes "any of the classes at or above it".
const unsigned kMemoryClasses[] = {8, 12, 16, 24, 32, 40, 48, 64, 80, 94, 96, 120, 128, 141, 144, 180, 192, 288};
const unsigned kIbRates[] = {10, 20, 40, 56, 100, 200, 400, 800};
const unsigned kEthRates[] = {1, 10, 25, 40, 50, 100, 200, 400, 800};

struct Line {
  std::string source;
  int number;
  [[noreturn]] void fail(const std::string& what) const {
    throw TemplateError(source + ":" + std::to_string(number) + ": " + what);
  }
};

// Splits `Key=Value Key="quoted value"` into pairs, Slurm-config style.
std::vector<std::pair<std::string, std::string>> split_pairs(const std::string& text, const Line& line) {
  std::vector<std::pair<std::string, std::string>> out;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    if (i >= text.size()) break;
    std::size_t eq = text.find('=', i);
    std::size_t space = text.find_first_of(" \t", i);
    if (eq == std::string::npos || (space != std::string::npos && space < eq))
      line.fail("expected Key=Value, found '" + text.substr(i, space == std::string::npos ? std::string::npos : space - i) + "'");
    std::string key = text.substr(i, eq - i);
    i = eq + 1;
    std::string value;
    if (i < text.size() && text[i] == '"') {
      std::size_t close = text.find('"', i + 1);
      if (close == std::string::npos) line.fail("unterminated quote in " + key + "=");
      value = text.substr(i + 1, close - i - 1);
      i = close + 1;
    } else {
      std::size_t end = text.find_first_of(" \t", i);
      value = text.substr(i, end == std::string::npos ? std::string::npos : end - i);
      i = end == std::string::npos ? text.size() : end;
    }
    out.emplace_back(key, value);
  }
  return out;
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

std::string ResourceTemplate::constraint() const {
  std::vector<std::string> terms = features;
  if (min_gpu_memory_gb) {
    std::vector<std::string> classes;
    for (unsigned gb : kMemoryClasses)
      if (gb >= min_gpu_memory_gb) classes.push_back("gpumem" + std::to_string(gb) + "g");
    terms.push_back(any_of(classes));
  }
  if (fabric != Fabric::any || min_bandwidth_gbps) {
    std::vector<std::string> fabrics;
    auto add = [&](const char* kind, const auto& rates) {
      for (unsigned r : rates)
        if (r >= min_bandwidth_gbps) fabrics.push_back(kind + std::to_string(r));
    };
    if (fabric == Fabric::any || fabric == Fabric::ib) add("ib", kIbRates);
    if (fabric == Fabric::any || fabric == Fabric::roce) add("roce", kEthRates);
    if (fabric == Fabric::any || fabric == Fabric::eth) add("eth", kEthRates);
    if (fabrics.empty()) fabrics.push_back("unreachable" + std::to_string(min_bandwidth_gbps));
    terms.push_back(any_of(fabrics));
  }
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
  std::istringstream in(text);
  std::string raw, pending;
  int number = 0, start = 0;
  static const std::regex identifier("[A-Za-z0-9_.,:+-]{1,128}");
  while (std::getline(in, raw)) {
    ++number;
    if (raw.find('\0') != std::string::npos) Line{source, number}.fail("contains a NUL byte; is this a text file?");
    if (auto hash = raw.find('#'); hash != std::string::npos) raw.erase(hash);
    bool continues = !raw.empty() && raw.back() == '\\';
    if (continues) raw.pop_back();
    if (pending.empty()) start = number;
    pending += raw + " ";
    if (continues) continue;
    std::string line_text;
    line_text.swap(pending);
    Line line{source, start};
    auto pairs = split_pairs(line_text, line);
    if (pairs.empty()) continue;
    if (pairs.front().first != "TemplateName")
      line.fail("each template starts with TemplateName=NAME, found " + pairs.front().first + "=");
    ResourceTemplate t;
    t.name = pairs.front().second;
    if (!valid_template_name(t.name))
      line.fail("TemplateName=" + t.name + " must be letters, digits, '_', '.' or '-' (at most 64)");
    if (t.name == "list") line.fail("TemplateName=list is reserved for --cnet-template=list");
    if (catalog.find(t.name)) line.fail("template " + t.name + " is defined twice");
    std::set<std::string> seen;
    for (std::size_t i = 1; i < pairs.size(); ++i) {
      const auto& [key, v] = pairs[i];
      if (!seen.insert(key).second) line.fail(key + " given twice for template " + t.name);
      if (key != "Description" && v.empty()) line.fail(key + "= needs a value");
      if (key == "Description") t.description = v;
      else if (key == "Gpus") t.gpus_per_node = parse_count(key, v, line, 64);
      else if (key == "RdmaNics") t.rdma_per_node = parse_count(key, v, line, 64);
      else if (key == "GpuType") {
        if (!std::regex_match(v, identifier) || v.find_first_of(",:") != std::string::npos)
          line.fail("GpuType=" + v + " must be a gres type such as a100 (letters, digits, '_', '.', '-')");
        t.gpu_type = v;
      } else if (key == "MinGpuMemory") t.min_gpu_memory_gb = parse_gigabytes(key, v, line);
      else if (key == "Fabric") t.fabric = parse_fabric(v, line);
      else if (key == "MinBandwidth") t.min_bandwidth_gbps = parse_count(key, v, line, 100000);
      else if (key == "Nodes") {
        static const std::regex range("([0-9]{1,5})(?:-([0-9]{1,5}))?");
        std::smatch m;
        if (!std::regex_match(v, m, range)) line.fail("Nodes=" + v + " must be N or MIN-MAX");
        t.nodes_min = static_cast<unsigned>(std::stoul(m[1]));
        t.nodes_max = m[2].matched ? static_cast<unsigned>(std::stoul(m[2])) : t.nodes_min;
        if (t.nodes_min == 0 || t.nodes_max < t.nodes_min) line.fail("Nodes=" + v + " must be at least 1 and MIN <= MAX");
      } else if (key == "Features") {
        std::stringstream parts(v);
        std::string f;
        while (std::getline(parts, f, ',')) {
          static const std::regex feature("[A-Za-z0-9_.-]{1,64}");
          if (!std::regex_match(f, feature))
            line.fail("Features=" + v + ": '" + f + "' is not a node feature name (letters, digits, '_', '.', '-')");
          t.features.push_back(f);
        }
      } else if (key == "SameSwitch") t.same_switch = parse_bool(key, v, line);
      else if (key == "SwitchWait") t.switch_wait_s = parse_time_minutes(key, v, line) * 60;
      else if (key == "Exclusive") t.exclusive = parse_bool(key, v, line);
      else if (key == "TimeLimit") t.time_limit_min = parse_time_minutes(key, v, line);
      else if (key == "Qos") {
        if (!std::regex_match(v, identifier) || v.find_first_of(",:+") != std::string::npos)
          line.fail("Qos=" + v + " must be a QOS name");
        t.qos = v;
      } else if (key == "AllowOverride") t.allow_override = parse_bool(key, v, line);
      else
        line.fail("unknown key " + key + "= (known: Description, Gpus, GpuType, RdmaNics, MinGpuMemory, Fabric, MinBandwidth, "
                  "Nodes, Features, SameSwitch, SwitchWait, Exclusive, TimeLimit, Qos, AllowOverride)");
    }
    if (t.gpu_type.size() && !t.gpus_per_node) line.fail("GpuType= needs Gpus= for template " + t.name);
    catalog.templates_.push_back(std::move(t));
  }
  if (!pending.empty() && pending.find_first_not_of(' ') != std::string::npos)
    Line{source, start}.fail("file ends inside a continued line (trailing '\\')");
  return catalog;
}

TemplateCatalog TemplateCatalog::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw TemplateError("cannot read templates file " + path + ": check the templates= path in plugstack.conf");
  std::stringstream text;
  text << in.rdbuf();
  if (text.str().size() > (1u << 20)) throw TemplateError(path + " is larger than 1 MiB; is it the right file?");
  return parse(text.str(), path);
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
