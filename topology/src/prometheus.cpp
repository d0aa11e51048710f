#include "cnet/metrics/prometheus.hpp"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>

namespace cnet::metrics {

namespace {
namespace fs = std::filesystem;

const std::regex kMetricName("[a-zA-Z_:][a-zA-Z0-9_:]*");
const std::regex kLabelName("[a-zA-Z_][a-zA-Z0-9_]*");

std::string escaped(const std::string& value, bool quote_too) {
  std::string out;
  for (char c : value) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '"' && quote_too) out += "\\\"";
    else out += c;
  }
  return out;
}

std::string number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// The folder the textfile goes into, once the path passed the checks.
fs::path textfile_folder(const std::string& path) {
  if (!path.ends_with(".prom"))
    throw std::runtime_error(path + ": the file name must end in .prom (node_exporter's textfile collector reads only those)");
  fs::path target(path);
  fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  if (!fs::is_directory(dir))
    throw std::runtime_error(path + ": folder " + dir.string() + " does not exist (node_exporter's --collector.textfile.directory)");
  return dir;
}

}  // namespace

std::string to_text(const std::vector<Family>& families) {
  std::ostringstream out;
  for (const auto& f : families) {
    if (!std::regex_match(f.name, kMetricName)) throw std::invalid_argument("invalid Prometheus metric name '" + f.name + "'");
    out << "# HELP " << f.name << " " << escaped(f.help, false) << "\n# TYPE " << f.name << " " << f.type << "\n";
    for (const auto& s : f.samples) {
      out << f.name;
      if (!s.labels.empty()) {
        out << "{";
        bool first = true;
        for (const auto& [k, v] : s.labels) {
          if (!std::regex_match(k, kLabelName) || k.starts_with("__"))
            throw std::invalid_argument("invalid Prometheus label name '" + k + "' on " + f.name);
          out << (first ? "" : ",") << k << "=\"" << escaped(v, true) << "\"";
          first = false;
        }
        out << "}";
      }
      out << " " << number(s.value) << "\n";
    }
  }
  return out.str();
}

void check_textfile_path(const std::string& path) { textfile_folder(path); }

void write_textfile(const std::string& path, const std::string& text) {
  fs::path target(path), dir = textfile_folder(path);
  // A dot name: the collector skips it while it is being written.
  fs::path tmp = dir / ("." + target.filename().string() + "." + std::to_string(getpid()));
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    if (!out.flush()) {
      std::error_code ec;
      fs::remove(tmp, ec);
      throw std::runtime_error("cannot write " + tmp.string() + ": " + std::strerror(errno));
    }
  }
  std::error_code ec;
  fs::rename(tmp, target, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw std::runtime_error("cannot replace " + path + ": " + ec.message());
  }
}

}  // namespace cnet::metrics
