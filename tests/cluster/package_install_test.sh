#!/usr/bin/env bash
# The install path a site takes: build the .deb packages, check their dependencies (the plugins pinned
# to exactly this Slurm), let apt resolve them, unpack them into a scratch root, and run a cluster whose
# plugins and tools all come from that root, not the build tree: a templated pipeline job verified bit
# for bit, the template applied by the installed job_submit/cnet, the installed man pages readable.
# Then, as root on a machine without cnet installed, a real `apt-get install` of both packages, the
# README's main job against that installed copy (contrib/demo.sh --installed), and a purge.
source "$(dirname "$0")/lib.sh"
repo=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d /var/tmp/cnet-package-XXXXXX)  # not /tmp: each node has its own
export CNET_MINICLUSTER_DIR=$work/state
# Against Debian's Slurm the packages are cnet-tools and cnet-slurm-plugins, the plugins pinned to that
# slurm-wlm; against a Slurm built into a prefix their names carry its release and the plugins go there.
tools_pkg=cnet-tools plugins_pkg=cnet-slurm-plugins demo_args=()
if [[ -n ${CNET_SLURM_PREFIX:-} ]]; then
  release=$slurm_release
  tools_pkg=cnet-tools-slurm-$release plugins_pkg=cnet-slurm-plugins-$release demo_args=(--slurm-prefix "$CNET_SLURM_PREFIX")
fi
real_install=0
cleanup() {
  "$CNET_MINICLUSTER" down >/dev/null 2>&1
  CNET_MINICLUSTER_DIR=$work/demo "$CNET_MINICLUSTER" down >/dev/null 2>&1
  ((real_install)) && apt-get purge -y -q "$tools_pkg" "$plugins_pkg" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT

(cd "$CNET_BUILD_DIR" && cpack -G DEB -B "$work/packages" >"$work/cpack.log" 2>&1) || fail "cpack: $(tail -20 "$work/cpack.log")"
tools=$(ls "$work"/packages/"$tools_pkg"_*.deb) && plugins=$(ls "$work"/packages/"$plugins_pkg"_*.deb) || fail "packages missing: $(ls "$work/packages")"
if [[ -z ${CNET_SLURM_PREFIX:-} ]]; then
  slurm_version=$(dpkg-query -W -f='${Version}' slurm-wlm-basic-plugins)
  depends=$(dpkg-deb -f "$plugins" Depends)
  [[ $depends == *"slurm-wlm-basic-plugins (= $slurm_version)"* ]] || fail "plugins not pinned to Slurm $slurm_version: $depends"
else
  [[ $(dpkg-deb -f "$plugins" Description) == *"Slurm $release"*" in $CNET_SLURM_PREFIX"* ]] ||
    fail "the plugin package does not say which Slurm it is for: $(dpkg-deb -f "$plugins" Description)"
  expect_eq "$(dpkg-deb -f "$plugins" Provides)" cnet-slurm-plugins "what $plugins_pkg stands in for"
fi
[[ $(dpkg-deb -f "$tools" Depends) == *libucx0* ]] || fail "cnet-tools lacks its shared-library dependencies"
# (whole outputs into grep: grep -q would stop reading early and pipefail would report the writer's SIGPIPE)
grep -q '/etc/slurm/cnet-templates.conf$' <<<"$(dpkg-deb -c "$plugins")" || fail "no templates file in the plugin package"
grep -qx /etc/slurm/cnet-templates.conf <<<"$(dpkg-deb --ctrl-tarfile "$plugins" | tar -xO ./conffiles)" ||
  fail "the templates file is not a conffile (an upgrade would overwrite the admin's edits)"
# Debian's own package checker; the copyright file waits for the project to choose a licence.
# Against a Slurm under its own prefix the plugins belong in that Slurm's plugin folder (/opt/...) and
# cnet-pool needs a RUNPATH to its libslurm: both wrong for Debian's archive, inherent in a site's own build.
lint_allowed=no-copyright-file
[[ -z ${CNET_SLURM_PREFIX:-} ]] || lint_allowed+=,dir-or-file-in-opt,custom-library-search-path
lint=$(lintian --suppress-tags "$lint_allowed" "$tools" "$plugins" 2>&1) || true
grep -q '^E: ' <<<"$lint" && fail "lintian finds errors: $lint"
apt-get install --simulate -q "$tools" "$plugins" >"$work/apt.log" 2>&1 || fail "apt cannot install the packages here: $(tail "$work/apt.log")"

root=$work/root
dpkg -x "$tools" "$root" && dpkg -x "$plugins" "$root"
# awk reads the whole listing: an early exit would kill dpkg-query with SIGPIPE, failing under pipefail
if [[ -n ${CNET_SLURM_PREFIX:-} ]]; then
  plugin_dir=$root$CNET_SLURM_PREFIX/lib/slurm
else
  plugin_dir=$root$(dpkg-query -L slurm-wlm-basic-plugins | awk '/\/auth_munge\.so$/ && !d { d = $0; sub(/\/auth_munge\.so$/, "", d) } END { print d }')
fi
for so in cnet.so job_submit_cnet.so gres_rdma.so; do [[ -f $plugin_dir/$so ]] || fail "$so not installed in $plugin_dir"; done
for tool in cnet-run cnet-launch cnet-topo cnet-doctor cnet-perf cnet-pool; do
  [[ -x $root/usr/bin/$tool ]] || fail "$tool not installed"
  expect_eq "$("$root/usr/bin/$tool" --version)" "$tool (cnet) $(dpkg-deb -f "$tools" Version)" "$tool --version"
  grep -q '^\.SH NAME' <<<"$(zcat "$root/usr/share/man/man1/$tool.1.gz")" || fail "no man page for $tool"
done
grep -q 'TemplateName=' <<<"$(zcat "$root/usr/share/man/man5/cnet-templates.conf.5.gz")" || fail "no cnet-templates.conf(5)"

CNET_PLUGIN_DIR=$plugin_dir CNET_BUILD_DIR=$work/no-build-tree "$CNET_MINICLUSTER" up 2 --rdma 2 >"$work/up.log" 2>&1 ||
  fail "cluster on the installed plugins: $(tail "$work/up.log")"
eval "$("$CNET_MINICLUSTER" env)"
grep -q "^PluginDir=.*:$plugin_dir$" "$SLURM_CONF" || fail "PluginDir does not use the installed plugins: $(grep PluginDir "$SLURM_CONF")"
grep -qE "$CNET_BUILD_DIR/(plugins|bin)" "$SLURM_CONF" "$CNET_MINICLUSTER_DIR/etc/plugstack.conf" && fail "the cluster still uses the build tree"

[[ $(sinfo -h -N -n cn1 -o '%G') == *rdma:mlx5_0:1* ]] || fail "the installed gres/rdma did not load: $(sinfo -h -N -o '%N %G')"

cd "$work"
bin=$root/usr/bin
"$bin/cnet-run" make-model --output model.safetensors --layers 6 --hidden 128 2>/dev/null
"$bin/cnet-run" make-input --output input.safetensors --rows 256 --model model.safetensors 2>/dev/null
out=$(timeout 120 srun -N2 --ntasks-per-node=1 --gres=gpu:1 --cnet-template=infer-small --cnet-bind=none \
        "$bin/cnet-run" --model model.safetensors --input input.safetensors --output out.safetensors --verify 2>&1) ||
  fail "pipeline job on the installed copy: $out"
echo "$out"
grep -q "verify: bit-identical to one process" <<<"$out" || fail "not verified: $out"
job=$(sbatch --parsable --cnet-template=infer-small --wrap true) || fail "sbatch under a template"
scontrol show job "$job" | grep -q "TimeLimit=01:00:00" || fail "the installed job_submit/cnet did not apply infer-small: $(scontrol show job "$job")"
"$CNET_MINICLUSTER" down >/dev/null

known() { dpkg-query -W "$1" >/dev/null 2>&1; }
if [[ $(id -u) != 0 ]] || known "$tools_pkg" || known cnet-tools || known "$plugins_pkg" || known cnet-slurm-plugins; then
  echo "skipping the real install: not root, or cnet is already installed here (it is not ours to remove)"
  echo ok
  exit 0
fi
real_install=1
apt-get install -y -q "$tools" "$plugins" >"$work/apt.log" 2>&1 || fail "apt-get install: $(tail "$work/apt.log")"
[[ $(command -v cnet-run) == /usr/bin/cnet-run ]] || fail "cnet-run is not on PATH after the install"
# The snippets an admin pastes name files the packages really installed.
examples=/usr/share/doc/$plugins_pkg/examples
read -r _ so args < <(grep '^required ' "$examples/plugstack.conf")
[[ -f $so ]] || fail "plugstack.conf snippet names $so, which is not installed"
templates=$(sed -n 's/.*templates=\([^ ]*\).*/\1/p' <<<"$args")
[[ -f $templates ]] || fail "plugstack.conf snippet names templates $templates, which is not installed"
health=$(sed -n 's/^HealthCheckProgram=//p' "$examples/slurm.conf.cnet")
[[ -x $health ]] || fail "slurm.conf snippet names HealthCheckProgram $health, which is not installed"
man -w cnet-templates.conf >/dev/null 2>&1 || [[ -f /usr/share/man/man5/cnet-templates.conf.5.gz ]] || fail "man page not installed"
# The demo sees this machine as it is, like a site's first node (not the fixture topology).
out=$(env -u CNET_SPANK_ARGS CNET_MINICLUSTER_DIR=$work/demo bash "$repo/contrib/demo.sh" --installed "${demo_args[@]}" 2>&1) ||
  fail "demo.sh --installed: $out"
echo "$out" | tail -n 12
grep -q "plugins in ${plugin_dir#"$root"}" <<<"$out" || fail "the demo did not use the installed plugins: $out"
grep -q "verify: bit-identical to one process" <<<"$out" || fail "the demo job on the installed copy was not verified: $out"
apt-get purge -y -q "$tools_pkg" "$plugins_pkg" >"$work/apt.log" 2>&1 || fail "apt-get purge: $(tail "$work/apt.log")"
real_install=0
[[ ! -e /usr/bin/cnet-run && ! -e ${plugin_dir#"$root"}/cnet.so ]] || fail "purge left files behind"
[[ ! -e /etc/slurm/cnet-templates.conf ]] || fail "purge left /etc/slurm/cnet-templates.conf"
echo ok
