#!/usr/bin/env bash
# The README's main job: build, start a 2-node minicluster (a network namespace per node), run a vision
# model (ResNet-50, ONNX) over a folder of images as a 2-stage pipeline across it through srun under a
# cnet resource template, verify it bit for bit against one process, show the predictions and
# throughput, and stop the cluster again.
#   --keep               leave the cluster running
#   --installed          build nothing: use the installed cnet-tools and cnet-slurm-plugins packages
#                        (/usr/bin and Slurm's plugin folder), as a site checks its install
#   --slurm-prefix DIR   run on the Slurm installed in DIR (e.g. /opt/slurm-24.11; built there from source
#                        first, by contrib/slurm-build.sh, when the folder is named slurm-MAJOR.MINOR and
#                        holds none yet), with cnet built against it in build-slurm-MAJOR.MINOR/
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
keep=0 installed=0 slurm_prefix=""
while (($#)); do
  case $1 in
    --keep) keep=1; shift ;;
    --installed) installed=1; shift ;;
    --slurm-prefix) slurm_prefix=${2:?--slurm-prefix needs a folder}; shift 2 ;;
    *) echo "demo.sh: unknown option '$1' (--keep, --installed, --slurm-prefix DIR)" >&2; exit 2 ;;
  esac
done

# The release of the Slurm in a prefix: what it was built as, what its slurmd says, or its folder's name.
release_of() {
  local r
  r=$(cat "$1/.cnet-built" 2>/dev/null || "$1/sbin/slurmd" -V 2>/dev/null | awk '{print $2}' || true)
  [[ -n $r ]] || r=$(basename "$1" | sed -n 's/^slurm-\([0-9]*\.[0-9]*\).*/\1/p')
  [[ -n $r ]] || { echo "demo.sh: no Slurm in $1 and its name does not say which to build (slurm-MAJOR.MINOR)" >&2; exit 1; }
  sed -E 's/^([0-9]+\.[0-9]+).*/\1/' <<<"$r"
}
release="" plugins_pkg=cnet-slurm-plugins tools_pkg=cnet-tools slurm_pkgs="slurmctld slurmd"
if [[ -n $slurm_prefix ]]; then
  release=$(release_of "$slurm_prefix")
  export CNET_SLURM_PREFIX=$slurm_prefix
  plugins_pkg=cnet-slurm-plugins-$release tools_pkg=cnet-tools-slurm-$release slurm_pkgs=""
fi
build=${CNET_BUILD_DIR:-$repo/build${release:+-slurm-$release}}

if ((installed)); then
  for p in $tools_pkg $plugins_pkg $slurm_pkgs munge; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' ||
      { echo "demo.sh --installed: package $p is not installed (apt-get install ./cnet-*.deb${slurm_pkgs:+ $slurm_pkgs} munge)" >&2; exit 1; }
  done
  bin=/usr/bin
  CNET_PLUGIN_DIR=$(dpkg -L "$plugins_pkg" | awk '/\/cnet\.so$/ { d = $0 } END { sub(/\/cnet\.so$/, "", d); print d }')
  export CNET_PLUGIN_DIR
  echo "demo: installed cnet $(dpkg-query -W -f='${Version}' "$tools_pkg"): tools in $bin, plugins in $CNET_PLUGIN_DIR"
else
  CNET_BUILD_DIR=$build "$repo/contrib/build.sh" ${release:+--slurm "$release"}
  bin=$build/bin
  export CNET_BUILD_DIR=$build
fi
[[ -z $slurm_prefix ]] || echo "demo: Slurm $("$slurm_prefix/sbin/slurmd" -V | awk '{print $2}') from $slurm_prefix"
export CNET_MINICLUSTER_DIR=${CNET_MINICLUSTER_DIR:-/var/tmp/cnet-demo-$(id -u)}
mc=$repo/contrib/minicluster
"$mc" down >/dev/null
# each node has a network (and address) of its own, so the link check below crosses a real link
"$mc" up 2
((keep)) || trap '"$mc" down' EXIT
"$mc" run -- sinfo -N -o '%N %o %t %c %G'
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
# The source article's demo: a mid-sized vision model split into two stages on two machines, reading a
# folder of images, checked against one machine. ResNet-50 as torchvision builds it, exported to ONNX
# with random weights (nothing is downloaded; --weights default or a .pth gives real ones).
echo "$ contrib/examples/export_onnx.py resnet50 resnet50.onnx"
[[ -s resnet50.onnx ]] || /usr/bin/python3 "$repo/contrib/examples/export_onnx.py" resnet50 resnet50.onnx
echo "$ contrib/examples/make_images.py test_images 32      # JPEG and PNG of several sizes"
rm -rf test_images && /usr/bin/python3 "$repo/contrib/examples/make_images.py" test_images 32
echo
echo "$ srun --mpi=pmix -N2 --ntasks-per-node=1 --gres=gpu:1 --cnet-template=infer-small \\"
echo "       cnet-run --name demo_infer --model resnet50.onnx --input test_images --output preds.jsonl \\"
echo "                --parallel-scheme pipeline --num-stages 2 --micro-batch 4 --verify"
"$mc" run -- timeout 600 srun --mpi=pmix -N2 --ntasks-per-node=1 --gres=gpu:1 --cnet-template=infer-small \
  "$bin/cnet-run" --name demo_infer --model resnet50.onnx --input test_images --output preds.jsonl \
  --parallel-scheme pipeline --num-stages 2 --micro-batch 4 --verify
echo
echo "result: $work/preds.jsonl (top-5 classes and scores per image, in file-name order), first lines:"
head -3 preds.jsonl | sed 's/^/  /'
if ((keep)); then echo "cluster left running: eval \"\$($mc env)\"; '$mc down' stops it"; fi
