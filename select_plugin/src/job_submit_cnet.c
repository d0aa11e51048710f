/* job_submit/cnet: applies cnet resource templates centrally. slurm.conf: JobSubmitPlugins=cnet.
 * The template a job names (--cnet-template, carried in its SPANK environment by cnet.so) is expanded
 * into the request: gres per node, node features, node count, switches, exclusive, time limit, QOS.
 * What the user set against the template is refused with a message naming both. The catalogue is
 * <slurm.conf dir>/cnet-templates.conf (or $CNET_TEMPLATES in slurmctld's environment), reread by a
 * background reader when the file changes, never while a submission holds slurmctld's locks; a damaged
 * file keeps the last good catalogue. The logic lives in libcnet_scheduling
 * (template_bridge.h); this file only moves fields in and out of Slurm's structures. */
#include <libgen.h>
#include <stdlib.h>
#include <string.h>

#include "slurm/slurm.h"
#include "slurm/slurm_errno.h"
#include "src/common/log.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/slurmctld/slurmctld.h"

#include "cnet/scheduling/template_bridge.h"
#include "job_submit_compat.h"

const char plugin_name[] = "cnet resource templates";
const char plugin_type[] = "job_submit/cnet";
const uint32_t plugin_version = SLURM_VERSION_NUMBER;

static char *templates_path = NULL;

/* From the catalogue reader's thread: Slurm's log functions may be called from any thread. */
static void log_catalogue(const char *line, int is_error)
{
	if (is_error)
		error("job_submit/cnet: %s", line);
	else
		info("job_submit/cnet: %s", line);
}

extern int init(void)
{
	const char *env = getenv("CNET_TEMPLATES");
	if (env && env[0] == '/') {
		templates_path = xstrdup(env);
	} else {
		char *conf = xstrdup(slurm_conf.slurm_conf ? slurm_conf.slurm_conf : "/etc/slurm/slurm.conf");
		templates_path = xstrdup_printf("%s/cnet-templates.conf", dirname(conf));
		xfree(conf);
	}
	cnet_preload_templates(templates_path, 0, log_catalogue);
	return SLURM_SUCCESS;
}

extern int fini(void)
{
	cnet_stop_templates();
	xfree(templates_path);
	return SLURM_SUCCESS;
}

static void replace(char **field, const char *value)
{
	if (!value)
		return;
	xfree(*field);
	*field = xstrdup(value);
}

static void set_u32(uint32_t *field, uint32_t value)
{
	if (value != CNET_UNSET_U32)
		*field = value;
}

static int apply(job_desc_msg_t *job_desc, char **spank_env, uint32_t spank_env_size, int modify, uint32_t uid,
		 char **err_msg)
{
	cnet_job_request_t request = {
		.tres_per_node = job_desc->tres_per_node,
		.features = job_desc->features,
		.qos = job_desc->qos,
		.min_nodes = job_desc->min_nodes,
		.max_nodes = job_desc->max_nodes,
		.time_limit = job_desc->time_limit,
		.req_switch = job_desc->req_switch,
		.wait4switch = job_desc->wait4switch,
		.exclusive = job_desc->shared == NO_VAL16 ? -1 : job_desc->shared == JOB_SHARED_NONE ? 1 : 0,
		.spank_env = spank_env,
		.spank_env_size = spank_env_size,
		.modify = modify,
		.tres_gres_prefix = CNET_TRES_GRES_PREFIX,
	};
	/* Slurm refuses a constraint naming a feature no node has: let the library see which exist. */
	node_record_t *node_ptr;
	const char **features = xcalloc(node_record_count + 1, sizeof(char *));
	uint32_t n = 0;
	for (int i = 0; (node_ptr = next_node(&i)); i++)
		features[n++] = node_ptr->features;
	request.node_features = features;
	request.node_count = n;
	cnet_job_edit_t edit;
	int refuse = cnet_apply_template(templates_path, &request, &edit);
	xfree(features);
	if (refuse) {
		info("job_submit/cnet: refused job of uid %u: %s", uid, edit.message);
		if (err_msg)
			*err_msg = xstrdup(edit.message);
		cnet_job_edit_free(&edit);
		return SLURM_ERROR;
	}
	if (edit.template_name) {
		replace(&job_desc->tres_per_node, edit.tres_per_node);
		replace(&job_desc->features, edit.features);
		replace(&job_desc->qos, edit.qos);
		set_u32(&job_desc->min_nodes, edit.min_nodes);
		set_u32(&job_desc->max_nodes, edit.max_nodes);
		set_u32(&job_desc->time_limit, edit.time_limit);
		set_u32(&job_desc->req_switch, edit.req_switch);
		set_u32(&job_desc->wait4switch, edit.wait4switch);
		if (edit.exclusive == 1)
			job_desc->shared = JOB_SHARED_NONE;
		info("job_submit/cnet: uid %u template %s: %s", uid, edit.template_name,
		     edit.note && edit.note[0] ? edit.note : "nothing to add");
	}
	cnet_job_edit_free(&edit);
	return SLURM_SUCCESS;
}

extern int job_submit(job_desc_msg_t *job_desc, uint32_t submit_uid, char **err_msg)
{
	return apply(job_desc, job_desc->spank_job_env, job_desc->spank_job_env_size, 0, submit_uid, err_msg);
}

extern int job_modify(job_desc_msg_t *job_desc, job_record_t *job_ptr, uint32_t submit_uid)
{
	/* root, SlurmUser and operators change queued jobs as they see fit (scontrol update) */
	if (validate_operator(submit_uid))
		return SLURM_SUCCESS;
	return apply(job_desc, job_ptr->spank_job_env, job_ptr->spank_job_env_size, 1, submit_uid, NULL);
}
