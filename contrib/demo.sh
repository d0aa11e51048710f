#!/usr/bin/env bash
# The README's main job: build, start a 2-node minicluster, run a job across it through srun, show the
# result, and stop the cluster again (pass --keep to leave it running).
# Today the job is the PMIx rendezvous every cnet rank starts with, run under a cnet resource template;
# the pipeline job replaces it once cnet-run exists.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${CNET_BUILD_DIR:-$repo/build}
keep=0
[[ ${1:-} == --keep ]] && keep=1

"$repo/contrib/build.sh"
export CNET_MINICLUSTER_DIR=${CNET_MINICLUSTER_DIR:-/var/tmp/cnet-demo-$(id -u)}
mc=$repo/contrib/minicluster
"$mc" down >/dev/null
"$mc" up 2
((keep)) || trap '"$mc" down' EXIT
"$mc" run -- sinfo -N -o '%N %t %c %G'
echo
echo "$ cnet-topo --format matrix      # this node, as cnet sees it"
"$build/bin/cnet-topo" --format matrix | sed -n '1,/^$/p'
echo "$ srun --cnet-template=list"
"$mc" run -- srun --cnet-template=list true
echo
echo "$ srun --mpi=pmix -N2 --ntasks-per-node=2 --gres=gpu:1 --cnet-template=infer-small --cnet-check pmix_exchange"
"$mc" run -- timeout 120 srun --mpi=pmix -N2 --ntasks-per-node=2 --gres=gpu:1 --cnet-template=infer-small --cnet-check \
  bash -c 'echo "rank $SLURM_PROCID: template=$CNET_TEMPLATE NICs=${CNET_NICS:-none} NCCL_TOPO_FILE=$NCCL_TOPO_FILE" >&2; exec "$0"' \
  "$build/bin/pmix_exchange" | sort
echo
echo "$ srun --mpi=pmix -N2 cnet-perf p2p --max-size 4194304      # the link check before a big job"
"$mc" run -- timeout 120 srun --mpi=pmix -N2 "$build/bin/cnet-perf" p2p --max-size 4194304 --iters 100
if ((keep)); then echo "cluster left running: eval \"\$($mc env)\"; '$mc down' stops it"; fi
