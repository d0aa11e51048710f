#include "cnet/topology/render_svg.hpp"

#include <gvc.h>

#include <memory>
#include <mutex>

#include "cnet/topology/model.hpp"

namespace cnet::topology {
namespace {

// Graphviz reports through a global callback: one rendering at a time, its complaints kept here.
std::mutex render_lock;
std::string complaints;
int keep_complaint(char* text) {
  if (complaints.size() < 4096) complaints += text;
  return 0;
}

}  // namespace

std::string render_svg(const std::string& dot) {
  std::lock_guard lock(render_lock);
  complaints.clear();
  agseterr(AGWARN);
  agseterrf(keep_complaint);
  std::unique_ptr<GVC_t, int (*)(GVC_t*)> gvc(gvContext(), gvFreeContext);
  std::unique_ptr<Agraph_t, int (*)(Agraph_t*)> graph(agmemread(dot.c_str()), agclose);
  if (!graph) throw TopologyError("Graphviz cannot read the graph: " + complaints);
  if (gvLayout(gvc.get(), graph.get(), "dot") != 0) throw TopologyError("Graphviz cannot lay out the graph: " + complaints);
  char* data = nullptr;
  unsigned int length = 0;
  const int rc = gvRenderData(gvc.get(), graph.get(), "svg", &data, &length);
  std::string svg = rc == 0 && data ? std::string(data, length) : std::string();
  if (data) gvFreeRenderData(data);
  gvFreeLayout(gvc.get(), graph.get());
  if (svg.empty()) throw TopologyError("Graphviz has no SVG renderer (install libgvc6, whose plugins draw SVG): " + complaints);
  return svg;
}

}  // namespace cnet::topology
