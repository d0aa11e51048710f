#pragma once
// The peer the topology benchmarks measure cnet against: hwloc loading an XML export and writing it
// out again, the least comparable work (what `lstopo --of xml` does).
#include <hwloc.h>

#include <string>

namespace cnet::bench {

inline int hwloc_load_and_export(const std::string& xml) {
  hwloc_topology_t t;
  hwloc_topology_init(&t);
  hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  hwloc_topology_set_xml(t, xml.c_str());
  hwloc_topology_load(t);
  char* buf = nullptr;
  int len = 0;
  hwloc_topology_export_xmlbuffer(t, &buf, &len, 0);
  hwloc_free_xmlbuffer(t, buf);
  hwloc_topology_destroy(t);
  return len;
}

}  // namespace cnet::bench
