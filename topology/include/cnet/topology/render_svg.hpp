#pragma once
// A DOT graph rendered as SVG by Graphviz's own library (libgvc: the dot layout, the SVG renderer):
// cnet writes what is in the picture (to_dot), Graphviz decides where it goes. A library of its own
// (cnet_topology_svg), so the Slurm plugins that use the topology never load Graphviz.

#include <string>

namespace cnet::topology {

// Throws TopologyError with Graphviz's complaint when it cannot read or lay out the graph.
std::string render_svg(const std::string& dot);

}  // namespace cnet::topology
