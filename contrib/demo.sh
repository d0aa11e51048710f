#!/usr/bin/env bash
# The README's main job: build, start a 2-node minicluster, run a 2-stage pipeline inference job across
# it through srun under a cnet resource template, verify it bit for bit against one process, show the
# result and throughput, and stop the cluster again.
#   --keep       leave the cluster running
#   --installed  build nothing: use the installed cnet-tools and cnet-slurm-plugins packages (/usr/bin and
#                Slurm's plugin folder), as a site checks its install
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${CNET_BUILD_DIR:-$repo/build}
keep=0 installed=0
for arg in "$@"; do
  case $arg in
    --keep) keep=1 ;;
    --installed) installed=1 ;;
    *) echo "demo.sh: unknown option '$arg' (--keep, --installed)" >&2; exit 2 ;;
  esac
done

if ((installed)); then
  for p in cnet-tools cnet-slurm-plugins slurmctld slurmd munge; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' ||
      { echo "demo.sh --installed: package $p is not installed (apt-get install ./cnet-*.deb slurmctld slurmd munge)" >&2; exit 1; }
  done
  bin=/usr/bin
  CNET_PLUGIN_DIR=$(dpkg -L cnet-slurm-plugins | awk '/\/cnet\.so$/ { d = $0 } END { sub(/\/cnet\.so$/, "", d); print d }')
  export CNET_PLUGIN_DIR
  echo "demo: installed cnet $(dpkg-query -W -f='${Version}' cnet-tools): tools in $bin, plugins in $CNET_PLUGIN_DIR"
else
  "$repo/contrib/build.sh"
  bin=$build/bin
fi
export CNET_MINICLUSTER_DIR=${CNET_MINICLUSTER_DIR:-/var/tmp/cnet-demo-$(id -u)}
mc=$repo/contrib/minicluster
"$mc" down >/dev/null
"$mc" up 2
((keep)) || trap '"$mc" down' EXIT
"$mc" run -- sinfo -N -o '%N %t %c %G'
echo
echo "$ cnet-topo --format matrix      # this node, as cnet sees it"
"$bin/cnet-topo" --format matrix | sed -n '1,/^$/p'
echo "$ srun --cnet-template=list"
"$mc" run -- srun --cnet-template=list true
echo
echo "$ srun --mpi=pmix -N2 cnet-perf p2p --max-size 4194304      # the link check before a big job"
"$mc" run -- timeout 120 srun --mpi=pmix -N2 "$bin/cnet-perf" p2p --max-size 4194304 --iters 100
echo

# The job's files live where every node sees them (each node has a private /tmp).
work=$CNET_MINICLUSTER_DIR/demo
mkdir -p "$work"
cd "$work"
echo "$ cnet-run make-model --output model.safetensors --layers 12 --hidden 512"
"$bin/cnet-run" make-model --output model.safetensors --layers 12 --hidden 512
echo "$ cnet-run make-input --output inputs.safetensors --rows 2048 --model model.safetensors"
"$bin/cnet-run" make-input --output inputs.safetensors --rows 2048 --model model.safetensors
echo
echo "$ srun --mpi=pmix -N2 --ntasks-per-node=1 --gres=gpu:1 --cnet-template=infer-small \\"
echo "       cnet-run --name demo_infer --model model.safetensors --input inputs.safetensors --output out.safetensors \\"
echo "                --parallel-scheme pipeline --num-stages 2 --micro-batch 16 --verify"
"$mc" run -- timeout 300 srun --mpi=pmix -N2 --ntasks-per-node=1 --gres=gpu:1 --cnet-template=infer-small \
  "$bin/cnet-run" --name demo_infer --model model.safetensors --input inputs.safetensors --output out.safetensors \
  --parallel-scheme pipeline --num-stages 2 --micro-batch 16 --verify
echo
echo "result: $work/out.safetensors (tensor 'output', 2048 rows), first row:"
/usr/bin/python3 - "$work/out.safetensors" <<'PY'
import json, struct, sys
with open(sys.argv[1], "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    t = json.loads(f.read(n))["output"]
    f.seek(8 + n + t["data_offsets"][0])
    row = struct.unpack(f"<{t['shape'][1]}f", f.read(4 * t["shape"][1]))
print(f"  shape {t['shape']}, row 0: " + " ".join(f"{v:.4f}" for v in row[:8]) + " ...")
PY
if ((keep)); then echo "cluster left running: eval \"\$($mc env)\"; '$mc down' stops it"; fi
