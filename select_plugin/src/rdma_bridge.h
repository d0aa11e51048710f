/* The C face of gres/rdma's logic (cnet/spank/rdma_gres.hpp). Results are malloc'd; nothing throws. */
#ifndef CNET_RDMA_BRIDGE_H
#define CNET_RDMA_BRIDGE_H

#ifdef __cplusplus
extern "C" {
#endif

/* The RDMA device a gres.conf File= names (sysfs, else Type=, else the file name). */
char *cnet_rdma_device_name(const char *device_file, const char *type);
/* The step environment for a comma-separated device list: "NAME=VALUE" lines joined by '\n'. */
char *cnet_rdma_environment(const char *devices_csv);

#ifdef __cplusplus
}
#endif
#endif
