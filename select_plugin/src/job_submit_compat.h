/* What job_submit/cnet does differently by Slurm release, in one place. Slurm 23.02 changed the spelling
 * of a job's tres_per_node from "gres:gpu:2" to "gres/gpu:2"; 24.11 misreads the old one, so the gres a
 * template adds are written as the running release writes them. */
#ifndef CNET_JOB_SUBMIT_COMPAT_H
#define CNET_JOB_SUBMIT_COMPAT_H

#include "slurm/slurm.h"

#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 2, 0)
#define CNET_TRES_GRES_PREFIX "gres/"
#else
#define CNET_TRES_GRES_PREFIX "gres:"
#endif

#endif
