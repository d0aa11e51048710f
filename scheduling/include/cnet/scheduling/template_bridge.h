/* The C face of cnet's template logic for job_submit/cnet: the plugin (C, Slurm's internal headers)
 * hands over the job request's fields, the C++ library (TemplateCatalog, expand_template) answers with
 * the edit to make or the reason to refuse. Nothing throws across this boundary. */
#ifndef CNET_TEMPLATE_BRIDGE_H
#define CNET_TEMPLATE_BRIDGE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CNET_UNSET_U32 0xfffffffeu /* Slurm's NO_VAL */

typedef struct {
	const char *tres_per_node, *features, *qos; /* NULL: not given */
	uint32_t min_nodes, max_nodes, time_limit, req_switch, wait4switch; /* CNET_UNSET_U32: not given */
	int exclusive;                               /* -1 not given, 1 exclusive, 0 shared */
	char **spank_env;
	uint32_t spank_env_size;
	int modify;                                  /* a change to a queued job */
	const char **node_features;                  /* every node's available features ("a,b"), */
	uint32_t node_count;                         /* to cut template constraints to what exists */
} cnet_job_request_t;

typedef struct {
	char *tres_per_node, *features, *qos;        /* malloc'd, NULL: leave alone */
	uint32_t min_nodes, max_nodes, time_limit, req_switch, wait4switch; /* CNET_UNSET_U32: leave */
	int exclusive;                               /* -1 leave, 1 set exclusive */
	char *template_name;                         /* the template applied, NULL if none */
	char *message;                               /* refusal: for the user */
	char *note;                                  /* what was applied: for slurmctld's log */
	char *catalog_problem;                       /* the templates file could not be (re)read */
} cnet_job_edit_t;

/* 0: apply `edit` (possibly nothing), 1: refuse the job with edit->message. The catalogue is read from
 * `templates_path` when first needed and again whenever the file changes; a file that fails to parse
 * keeps the last good catalogue (catalog_problem says why). */
int cnet_apply_template(const char *templates_path, const cnet_job_request_t *request, cnet_job_edit_t *edit);
void cnet_job_edit_free(cnet_job_edit_t *edit);
/* Reads the catalogue now (at plugin load); returns a malloc'd line for the log: the template names,
 * or why the file cannot be used. */
char *cnet_preload_templates(const char *templates_path, int *ok);

#ifdef __cplusplus
}
#endif
#endif
