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
	const char *tres_gres_prefix;                /* "gres/" (Slurm 23.02+) or NULL: "gres:" (22.05) */
} cnet_job_request_t;

typedef struct {
	char *tres_per_node, *features, *qos;        /* malloc'd, NULL: leave alone */
	uint32_t min_nodes, max_nodes, time_limit, req_switch, wait4switch; /* CNET_UNSET_U32: leave */
	int exclusive;                               /* -1 leave, 1 set exclusive */
	char *template_name;                         /* the template applied, NULL if none */
	char *message;                               /* refusal: for the user */
	char *note;                                  /* what was applied: for slurmctld's log */
} cnet_job_edit_t;

/* slurmctld's log, for what the background reader finds: a catalogue taken into use, or a problem. */
typedef void (*cnet_log_fn)(const char *line, int is_error);

/* 0: apply `edit` (possibly nothing), 1: refuse the job with edit->message. Touches no file: the
 * catalogue comes from a background reader (cnet/scheduling/template_watcher.hpp) that rereads
 * `templates_path` whenever it changes; a file that fails to parse keeps the last good catalogue. */
int cnet_apply_template(const char *templates_path, const cnet_job_request_t *request, cnet_job_edit_t *edit);
void cnet_job_edit_free(cnet_job_edit_t *edit);
/* At plugin load: starts the reader (polling every `interval_ms`, 0: 2 s), which reports to `log`
 * each catalogue it takes into use and each problem, once; waits at most 2 s for the first read. */
void cnet_preload_templates(const char *templates_path, unsigned interval_ms, cnet_log_fn log);
/* At plugin unload: stops the reader. */
void cnet_stop_templates(void);

#ifdef __cplusplus
}
#endif
#endif
