#!/usr/bin/env bash
# Installs every build and test dependency of cnet from Debian's archive. Idempotent: packages already
# installed are skipped, so a second run costs one dpkg query.
set -euo pipefail

packages=(
  build-essential cmake pkg-config git ca-certificates curl
  # Slurm: daemons for the minicluster, headers for the plugins, munge for auth
  slurm-wlm slurmctld slurmd slurm-client munge libslurm-dev libmunge-dev
  # data path and rendezvous
  libpmix-dev libucx-dev ucx-utils
  # topology
  libhwloc-dev hwloc
  # libraries (libssl-dev: HMAC for cnet-perf -s/-c's peer authentication)
  libboost-program-options-dev nlohmann-json3-dev libopenblas-dev libssl-dev
  # ONNX models (protobuf, checker, shape inference)
  libonnx-dev libprotobuf-dev
  # images for vision models
  libjpeg62-turbo-dev libpng-dev
  # pictures: Graphviz lays out cnet-topo's SVG; rsvg-convert renders every picture in the tests
  libgraphviz-dev librsvg2-bin
  # tests and benchmarks (Open MPI is the peer for collective benchmarks); clang's libFuzzer for contrib/fuzz.sh
  libgtest-dev libgmock-dev libbenchmark-dev openmpi-bin libopenmpi-dev clang libclang-rt-14-dev
  # cnet-launch's integration test: torch.distributed (CPU, gloo) for /usr/bin/python3
  python3-torch
  # ONNX models are checked against PyTorch itself: torchvision's models exported with random weights
  python3-torchvision
  # packages and docs: man pages from --help (dpkg-dev for cpack's dpkg-shlibdeps comes with build-essential);
  # devscripts for hardening-check
  help2man lintian devscripts
  # the metrics test: promtool checks the textfiles and example alert rules (the server is never started)
  prometheus
  # minicluster: unshare/nsenter, ip, ps
  util-linux iproute2 procps bzip2 python3
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages already installed"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
sudo_cmd=()
[[ $(id -u) == 0 ]] || sudo_cmd=(sudo)
"${sudo_cmd[@]}" apt-get update -q
# --no-install-recommends keeps it lean; the daemons must not start by themselves (the minicluster
# starts its own with its own config), so policy-rc.d denies service starts during the install.
policy=/usr/sbin/policy-rc.d
created_policy=0
if [[ ! -e $policy ]]; then
  printf '#!/bin/sh\nexit 101\n' | "${sudo_cmd[@]}" tee "$policy" >/dev/null
  "${sudo_cmd[@]}" chmod 755 "$policy"
  created_policy=1
fi
trap '((created_policy)) && "${sudo_cmd[@]}" rm -f "$policy"' EXIT
"${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
