/* The C face of gres/rdma's logic (cnet/scheduling/rdma_gres.hpp). Results are malloc'd; nothing throws. */
#ifndef CNET_RDMA_BRIDGE_H
#define CNET_RDMA_BRIDGE_H

#ifdef __cplusplus
extern "C" {
#endif

/* The RDMA device and port a gres.conf File= names, as "mlx5_0:1" (sysfs, else Type=, else the file name). */
char *cnet_rdma_device_port(const char *device_file, const char *type);
/* The step environment for a comma-separated "device:port" list: "NAME=VALUE" lines joined by '\n'. */
char *cnet_rdma_environment(const char *device_ports_csv);

#ifdef __cplusplus
}
#endif
#endif
