#include "cnet/transport/link_matrix.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "cnet/common/text.hpp"

namespace cnet::transport {
namespace {

struct PairNumbers {
  std::uint32_t i = 0, j = 0;
  double gbytes = 0, p99_us = 0;
};

std::vector<std::vector<double>> square(std::size_t n) { return std::vector<std::vector<double>>(n, std::vector<double>(n, 0.0)); }

// The job's typical pair: the 75th percentile of bandwidth (25th of latency), so that one bad node,
// which slows half the pairs of a small job, does not drag the yardstick down with it.
double typical(std::vector<double> v, double p) { return v.empty() ? 0 : percentile(std::move(v), p); }

std::string fixed(double v, int digits) {
  char b[32];
  std::snprintf(b, sizeof b, "%.*f", digits, v);
  return b;
}


// Red (worst) to green (best) through yellow, for a share in [0, 1].
std::string heat(double share) {
  share = std::clamp(share, 0.0, 1.0);
  const int r = share < 0.5 ? 230 : static_cast<int>(230 - (share - 0.5) * 2 * 150);
  const int g = share < 0.5 ? static_cast<int>(80 + share * 2 * 130) : 210;
  char b[8];
  std::snprintf(b, sizeof b, "#%02x%02x%02x", r, g, 90);
  return b;
}

// A P99 this much above the typical one at least, besides twice it: sub-microsecond jitter on a fast
// link doubles a small number without meaning anything.
constexpr double kLatencyNoiseUs = 5;

}  // namespace

LinkMatrix measure_link_matrix(UcxChannel& channel, Bootstrap& boot, const std::vector<std::uint32_t>& leaders, const LinkTestOptions& options) {
  const std::size_t n = leaders.size();
  std::vector<PairNumbers> mine;
  std::vector<PerfReport> my_reports;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = i + 1; j < n; ++j) {
      PerfReport r = link_test(channel, leaders[i], leaders[j], options);
      if (channel.rank() != leaders[i] || r.rows.empty()) continue;
      mine.push_back({static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(j), r.rows.back().bandwidth_gbytes, r.rows.front().latency_p99_us});
      my_reports.push_back(std::move(r));
    }
  auto numbers = boot.allgather_values<PairNumbers>("cnet.matrix.pairs", mine);
  auto reports = boot.allgather_text("cnet.matrix.reports", baseline_json(my_reports));
  LinkMatrix m;
  if (n == 0 || channel.rank() != leaders.front()) return m;
  for (auto leader : leaders) m.hosts.push_back(channel.hostname_of(leader));
  m.gbytes = m.p99_us = m.baseline_gbytes = square(n);
  for (const auto& rank : numbers)
    for (const auto& p : rank) {
      if (p.i >= n || p.j >= n) throw BootstrapError("a rank sent a pair outside the matrix");
      m.gbytes[p.i][p.j] = m.gbytes[p.j][p.i] = p.gbytes;
      m.p99_us[p.i][p.j] = m.p99_us[p.j][p.i] = p.p99_us;
    }
  for (const auto& text : reports)
    for (auto& r : baseline_from_json(text)) m.reports.push_back(std::move(r));
  return m;
}

void compare_with_baseline(LinkMatrix& m, const std::vector<PerfReport>& baseline) {
  m.baseline_gbytes = square(m.hosts.size());
  for (const auto& r : baseline) {
    if (r.mode != "p2p" || r.hosts.size() != 2 || r.rows.empty()) continue;
    auto at = [&](const std::string& h) { return std::find(m.hosts.begin(), m.hosts.end(), h) - m.hosts.begin(); };
    const auto i = static_cast<std::size_t>(at(r.hosts[0])), j = static_cast<std::size_t>(at(r.hosts[1]));
    if (i >= m.hosts.size() || j >= m.hosts.size() || i == j) continue;
    m.baseline_gbytes[i][j] = m.baseline_gbytes[j][i] = r.rows.back().bandwidth_gbytes;
  }
}

MatrixFindings find_slow_pairs(const LinkMatrix& m, double tolerance) {
  const std::size_t n = m.hosts.size();
  std::vector<double> bandwidths, p99s;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = i + 1; j < n; ++j) bandwidths.push_back(m.gbytes[i][j]), p99s.push_back(m.p99_us[i][j]);
  const double typical_bw = typical(bandwidths, 75), typical_p99 = typical(p99s, 25);
  MatrixFindings f;
  std::vector<unsigned> slow_of(n, 0);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = i + 1; j < n; ++j) {
      const bool has_baseline = !m.baseline_gbytes.empty() && m.baseline_gbytes[i][j] > 0;
      const double expected = has_baseline ? m.baseline_gbytes[i][j] : typical_bw;
      std::vector<std::string> why;
      if (m.gbytes[i][j] < (1 - tolerance) * expected)
        why.push_back(fixed(m.gbytes[i][j], 2) + " GB/s vs " + fixed(expected, 2) + " GB/s" + (has_baseline ? " in the baseline" : " for the job's typical pair"));
      if (typical_p99 > 0 && m.p99_us[i][j] > 2 * typical_p99 && m.p99_us[i][j] > typical_p99 + kLatencyNoiseUs)
        why.push_back("P99 " + fixed(m.p99_us[i][j], 1) + " us vs " + fixed(typical_p99, 1) + " us for the typical pair");
      if (why.empty()) continue;
      f.slow_pairs.push_back({i, j});
      ++slow_of[i], ++slow_of[j];
      std::string line = "slow pair " + m.hosts[i] + " - " + m.hosts[j] + ": ";
      for (std::size_t k = 0; k < why.size(); ++k) line += (k ? "; " : "") + why[k];
      f.lines.push_back(line);
    }
  for (std::size_t i = 0; i < n; ++i)
    if (n > 1 && 2 * slow_of[i] > n - 1) {
      f.suspect_nodes.push_back(i);
      f.lines.push_back("node " + m.hosts[i] + " is in " + std::to_string(slow_of[i]) + " of its " + std::to_string(n - 1) +
                        " pairs' slow ones: check its NIC, cable and switch port (cnet-doctor on it)");
    }
  return f;
}

std::string to_json(const LinkMatrix& m, const MatrixFindings& f) {
  nlohmann::json j = {{"hosts", m.hosts}, {"gbytes", m.gbytes}, {"p99_us", m.p99_us}, {"slow_pairs", nlohmann::json::array()},
                      {"suspect_nodes", nlohmann::json::array()}, {"findings", f.lines}};
  bool any_baseline = false;
  for (const auto& row : m.baseline_gbytes)
    for (double v : row) any_baseline = any_baseline || v > 0;
  if (any_baseline) j["baseline_gbytes"] = m.baseline_gbytes;
  for (const auto& [a, b] : f.slow_pairs) j["slow_pairs"].push_back({m.hosts[a], m.hosts[b]});
  for (auto s : f.suspect_nodes) j["suspect_nodes"].push_back(m.hosts[s]);
  return j.dump(2) + "\n";
}

std::string heatmap_svg(const LinkMatrix& m, const MatrixFindings& f, const std::string& title) {
  const std::size_t n = m.hosts.size();
  const int cell = 64, label = 110, top = 70, gap = 50;
  const int side = static_cast<int>(n) * cell, width = 2 * (label + side) + gap + 20, height = top + label / 2 + side + 40 + 14 * static_cast<int>(f.lines.size());
  double best_bw = 0, best_p99 = 0, worst_p99 = 0;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j)
      if (i != j) {
        best_bw = std::max(best_bw, m.gbytes[i][j]);
        worst_p99 = std::max(worst_p99, m.p99_us[i][j]);
        best_p99 = best_p99 == 0 ? m.p99_us[i][j] : std::min(best_p99, m.p99_us[i][j]);
      }
  auto slow = [&](std::size_t i, std::size_t j) {
    return std::find(f.slow_pairs.begin(), f.slow_pairs.end(), std::make_pair(std::min(i, j), std::max(i, j))) != f.slow_pairs.end();
  };
  auto suspect = [&](std::size_t i) { return std::find(f.suspect_nodes.begin(), f.suspect_nodes.end(), i) != f.suspect_nodes.end(); };
  std::ostringstream s;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height << "\" viewBox=\"0 0 " << width << " " << height
    << "\" font-family=\"Helvetica, Arial, sans-serif\">\n<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n"
    << "<text x=\"10\" y=\"24\" font-size=\"16\" font-weight=\"bold\">" << common::xml_escaped(title) << "</text>\n";
  for (int half = 0; half < 2; ++half) {
    const int x0 = 10 + half * (label + side + gap) + label, y0 = top + label / 2;
    s << "<text x=\"" << x0 << "\" y=\"" << top - 12 << "\" font-size=\"13\" font-weight=\"bold\">"
      << (half == 0 ? "bandwidth, GB/s (1 MiB messages)" : "P99 latency, us (8 B messages)") << "</text>\n";
    for (std::size_t i = 0; i < n; ++i) {
      const std::string colour = suspect(i) ? "#cc0000" : "#222222", weight = suspect(i) ? "bold" : "normal";
      s << "<text class=\"host\" x=\"" << x0 - 6 << "\" y=\"" << y0 + static_cast<int>(i) * cell + cell / 2 + 4 << "\" font-size=\"11\" text-anchor=\"end\" fill=\""
        << colour << "\" font-weight=\"" << weight << "\">" << common::xml_escaped(m.hosts[i]) << (suspect(i) ? " (suspect)" : "") << "</text>\n";
      s << "<text x=\"" << x0 + static_cast<int>(i) * cell + cell / 2 << "\" y=\"" << y0 - 6 << "\" font-size=\"11\" text-anchor=\"middle\" fill=\"" << colour
        << "\" font-weight=\"" << weight << "\">" << common::xml_escaped(m.hosts[i]) << "</text>\n";
      for (std::size_t j = 0; j < n; ++j) {
        const int x = x0 + static_cast<int>(j) * cell, y = y0 + static_cast<int>(i) * cell;
        if (i == j) {
          s << "<rect x=\"" << x << "\" y=\"" << y << "\" width=\"" << cell << "\" height=\"" << cell << "\" fill=\"#eeeeee\" stroke=\"#ffffff\"/>\n";
          continue;
        }
        const double v = half == 0 ? m.gbytes[i][j] : m.p99_us[i][j];
        const double share = half == 0 ? (best_bw > 0 ? v / best_bw : 0) : (worst_p99 > best_p99 ? (worst_p99 - v) / (worst_p99 - best_p99) : 1);
        const bool marked = slow(i, j);
        s << "<rect class=\"" << (marked ? "pair slow" : "pair") << "\" x=\"" << x << "\" y=\"" << y << "\" width=\"" << cell << "\" height=\"" << cell
          << "\" fill=\"" << heat(share) << "\" stroke=\"" << (marked ? "#cc0000" : "#ffffff") << "\" stroke-width=\"" << (marked ? 3 : 1) << "\"/>\n";
        s << "<text x=\"" << x + cell / 2 << "\" y=\"" << y + cell / 2 + (half == 0 ? 0 : 4) << "\" font-size=\"12\" text-anchor=\"middle\">"
          << fixed(v, half == 0 ? 2 : 1) << "</text>\n";
        if (half == 0 && !m.baseline_gbytes.empty() && m.baseline_gbytes[i][j] > 0)
          s << "<text x=\"" << x + cell / 2 << "\" y=\"" << y + cell / 2 + 15 << "\" font-size=\"10\" text-anchor=\"middle\">"
            << (v >= m.baseline_gbytes[i][j] ? "+" : "") << fixed(100 * (v / m.baseline_gbytes[i][j] - 1), 0) << "% vs base</text>\n";
      }
    }
  }
  int y = top + label / 2 + side + 28;
  s << "<text x=\"10\" y=\"" << y << "\" font-size=\"11\" fill=\"#555555\">green best, red worst; a red outline: a slow pair; a red name: a node behind most of its slow pairs</text>\n";
  for (const auto& line : f.lines) s << "<text x=\"10\" y=\"" << (y += 14) << "\" font-size=\"11\" fill=\"#cc0000\">" << common::xml_escaped(line) << "</text>\n";
  s << "</svg>\n";
  return s.str();
}

}  // namespace cnet::transport
