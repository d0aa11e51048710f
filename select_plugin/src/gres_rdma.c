/* gres/rdma: RDMA NICs as schedulable GRES (slurm.conf GresTypes=gpu,rdma; gres.conf lines from
 * `cnet-topo --format gres`: Name=rdma Type=mlx5_0 File=/dev/infiniband/uverbs0 Cores=...). Modelled on
 * Slurm's gres/nic: counting, core affinity and device files are Slurm's common GRES code; what this
 * plugin adds is the device names, so a step's tasks get CNET_RDMA_DEVICES, NCCL_IB_HCA and
 * UCX_NET_DEVICES for exactly the NICs allocated to them. Naming and formatting live in
 * libcnet_scheduling (rdma_bridge.h). */
#include <stdlib.h>
#include <string.h>

#include "slurm/slurm.h"
#include "slurm/slurm_errno.h"
#include "src/common/slurm_xlator.h"
#include "src/common/bitstring.h"
#include "src/common/env.h"
#include "src/common/pack.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"

#include "gres_compat.h"

#include "cnet/scheduling/rdma_bridge.h"

const char plugin_name[] = "Gres RDMA NIC plugin (cnet)";
const char plugin_type[] = "gres/rdma";
const uint32_t plugin_version = SLURM_VERSION_NUMBER;

static char gres_name[] = "rdma";
static cnet_list_t *gres_devices = NULL;
/* Devices ("mlx5_0:1") by GRES bitmap index, built by slurmd and sent on to slurmstepd. */
static char **device_names = NULL;
static uint32_t device_name_count = 0;

static void free_names(void)
{
	for (uint32_t i = 0; i < device_name_count; i++)
		xfree(device_names[i]);
	xfree(device_names);
	device_name_count = 0;
}

/* The Type= of the gres.conf line whose File= covers `path`, or NULL (Slurm keeps a type only when
 * slurm.conf's Gres= names it too, as cnet-topo --format features writes it: rdma:mlx5_0:1). */
static char *type_of(cnet_list_t *gres_conf_list, const char *path)
{
	gres_slurmd_conf_t *conf;
	char *found = NULL;
	if (!gres_conf_list)
		return NULL;
	cnet_list_itr_t *it = list_iterator_create(gres_conf_list);
	while (!found && (conf = list_next(it))) {
		if (xstrcmp(conf->name, gres_name) || !conf->file || !conf->type_name)
			continue;
		cnet_hostlist_t *files = hostlist_create(conf->file);
		char *file;
		if (!files)
			continue;
		while (!found && (file = hostlist_shift(files))) {
			if (!xstrcmp(file, path))
				found = conf->type_name;
			free(file);
		}
		hostlist_destroy(files);
	}
	list_iterator_destroy(it);
	return found;
}

extern int init(void)
{
	debug("%s: %s loaded", __func__, plugin_name);
	return SLURM_SUCCESS;
}

extern int fini(void)
{
	FREE_NULL_LIST(gres_devices);
	free_names();
	return SLURM_SUCCESS;
}

/* Called at start and on every reconfigure, by slurmd and (for nodes that have not registered, such as
 * State=CLOUD ones) by slurmctld. Devices and their names are built afresh each time. No devices is a
 * valid state: slurmctld never lists them, and a gres.conf line with Count= and no File= has none. */
extern int gres_p_node_config_load(cnet_list_t *gres_conf_list, node_config_load_t *config)
{
	FREE_NULL_LIST(gres_devices);
	free_names();
	int rc = cnet_gres_node_config_load(gres_conf_list, gres_name, config, &gres_devices);
	if (rc != SLURM_SUCCESS) {
		error("%s: gres.conf has no usable Name=rdma lines (write them with cnet-topo --format gres)", plugin_type);
		return rc;
	}
	if (!gres_devices)
		return SLURM_SUCCESS;
	gres_device_t *dev;
	cnet_list_itr_t *it = list_iterator_create(gres_devices);
	while ((dev = list_next(it))) {
		if (dev->index < 0 || dev->index > 4095 || !dev->path)
			continue;
		if ((uint32_t)dev->index >= device_name_count) {
			xrecalloc(device_names, dev->index + 1, sizeof(char *));
			device_name_count = dev->index + 1;
		}
		char *name = cnet_rdma_device_port(dev->path, type_of(gres_conf_list, dev->path));
		if (!name)
			continue;
		xfree(device_names[dev->index]);
		device_names[dev->index] = xstrdup(name);
		free(name);
		debug("%s: device %d %s is %s", plugin_type, dev->index, dev->path, device_names[dev->index]);
	}
	list_iterator_destroy(it);
	return SLURM_SUCCESS;
}

static void set_env(char ***env_ptr, bitstr_t *gres_bit_alloc, bitstr_t *usable_gres)
{
	char *csv = NULL;
	gres_device_t *dev;
	if (!gres_devices || !gres_bit_alloc)
		return;
	cnet_list_itr_t *it = list_iterator_create(gres_devices);
	while ((dev = list_next(it))) {
		if (dev->index < 0 || dev->index >= bit_size(gres_bit_alloc) || !bit_test(gres_bit_alloc, dev->index))
			continue;
		if (usable_gres && (dev->index >= bit_size(usable_gres) || !bit_test(usable_gres, dev->index)))
			continue;
		if ((uint32_t)dev->index < device_name_count && device_names[dev->index])
			xstrfmtcat(csv, "%s%s", csv ? "," : "", device_names[dev->index]);
	}
	list_iterator_destroy(it);
	if (!csv) {
		unsetenvp(*env_ptr, "CNET_RDMA_DEVICES");
		return;
	}
	char *lines = cnet_rdma_environment(csv);
	char *save = NULL;
	xfree(csv);
	if (!lines)
		return;
	for (char *line = strtok_r(lines, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *eq = strchr(line, '=');
		if (!eq)
			continue;
		*eq = '\0';
		env_array_overwrite(env_ptr, line, eq + 1);
	}
	free(lines);
}

extern void gres_p_job_set_env(char ***job_env_ptr, bitstr_t *gres_bit_alloc, uint64_t gres_cnt, gres_internal_flags_t flags)
{
	set_env(job_env_ptr, gres_bit_alloc, NULL);
}

extern void gres_p_step_set_env(char ***step_env_ptr, bitstr_t *gres_bit_alloc, uint64_t gres_cnt, gres_internal_flags_t flags)
{
	set_env(step_env_ptr, gres_bit_alloc, NULL);
}

extern void gres_p_task_set_env(char ***step_env_ptr, bitstr_t *gres_bit_alloc, uint64_t gres_cnt, bitstr_t *usable_gres,
				gres_internal_flags_t flags)
{
	set_env(step_env_ptr, gres_bit_alloc, usable_gres);
}

extern void gres_p_send_stepd(buf_t *buffer)
{
	cnet_gres_send_stepd(buffer, gres_devices);
	pack32(device_name_count, buffer);
	for (uint32_t i = 0; i < device_name_count; i++)
		packstr(device_names[i], buffer);
}

extern void gres_p_recv_stepd(buf_t *buffer)
{
	uint32_t count = 0, len;
	cnet_gres_recv_stepd(buffer, &gres_devices);
	free_names();
	safe_unpack32(&count, buffer);
	if (count > 4096)
		goto unpack_error;
	device_names = xcalloc(count ? count : 1, sizeof(char *));
	device_name_count = count;
	for (uint32_t i = 0; i < count; i++)
		safe_unpackstr_xmalloc(&device_names[i], &len, buffer);
	return;
unpack_error:
	error("%s: cannot read the RDMA device names from slurmd; steps get no RDMA variables", plugin_type);
	free_names();
}

extern cnet_list_t *gres_p_get_devices(void)
{
	return gres_devices;
}

extern void gres_p_step_hardware_init(bitstr_t *usable_gres, char *settings)
{
}

extern void gres_p_step_hardware_fini(void)
{
}

CNET_GRES_NOOP_HOOKS
