/* What gres/rdma needs from Slurm's GRES code, under one set of names whichever release it is built
 * against. Slurm 23.02 moved the GRES interface to src/interfaces/ and folded the common load and
 * pack helpers into it, replaced the List / ListIterator / hostlist_t pointer typedefs with list_t *,
 * list_itr_t * and hostlist_t *, dropped the get_job_info/get_step_info hooks and renamed the epilog
 * hooks to prep. Built and tested against 22.05 and 24.11; a release in between takes the newer side. */
#ifndef CNET_GRES_COMPAT_H
#define CNET_GRES_COMPAT_H

#include "slurm/slurm.h"

#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 2, 0)

#include "src/interfaces/gres.h"
#include "src/common/hostlist.h"
#include "src/common/list.h"

typedef list_t cnet_list_t;
typedef list_itr_t cnet_list_itr_t;
typedef hostlist_t cnet_hostlist_t;

#define cnet_gres_node_config_load(conf_list, name, config, devices) gres_node_config_load(conf_list, config, devices)
#define cnet_gres_send_stepd gres_send_stepd
#define cnet_gres_recv_stepd gres_recv_stepd

/* The hooks Slurm looks up that gres/rdma has nothing to do in. */
#define CNET_GRES_NOOP_HOOKS                                                                      \
	extern gres_prep_t *gres_p_prep_build_env(gres_job_state_t *gres_js) { return NULL; }     \
	extern void gres_p_prep_set_env(char ***prep_env_ptr, gres_prep_t *gres_prep, int node_inx) {}

#else

#include "src/common/gres.h"
#include "src/common/hostlist.h"
#include "src/common/list.h"
#include "src/plugins/gres/common/gres_common.h"

typedef struct xlist cnet_list_t;
typedef struct listIterator cnet_list_itr_t;
typedef struct hostlist cnet_hostlist_t;

#define cnet_gres_node_config_load common_node_config_load
#define cnet_gres_send_stepd common_send_stepd
#define cnet_gres_recv_stepd common_recv_stepd

#define CNET_GRES_NOOP_HOOKS                                                                                          \
	extern int gres_p_get_job_info(gres_job_state_t *gres_js, uint32_t node_inx, enum gres_job_data_type data_type, \
				       void *data) { return EINVAL; }                                               \
	extern int gres_p_get_step_info(gres_step_state_t *gres_ss, uint32_t node_inx,                                \
					enum gres_step_data_type data_type, void *data) { return EINVAL; }           \
	extern gres_epilog_info_t *gres_p_epilog_build_env(gres_job_state_t *gres_js) { return NULL; }                \
	extern void gres_p_epilog_set_env(char ***epilog_env_ptr, gres_epilog_info_t *gres_ei, int node_inx) {}

#endif

#endif
