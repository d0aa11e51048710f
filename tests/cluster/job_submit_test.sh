#!/usr/bin/env bash
# job_submit/cnet on the minicluster's slurmctld: a template expands into the job request (scontrol show
# job), conflicting user flags are refused naming both, AllowOverride lets them through, jobs under a
# template queue by priority while the GPUs are busy, a change to a queued job is checked too, and a
# templates file damaged before `scontrol reconfigure` keeps the last good catalogue.
source "$(dirname "$0")/lib.sh"
[[ -f $CNET_BUILD_DIR/plugins/job_submit_cnet.so ]] || fail "job_submit_cnet.so not built (configure with -DCNET_SLURM_SOURCE)"
eval "$("$CNET_MINICLUSTER" env)"
catalog=$CNET_MINICLUSTER_DIR/etc/cnet-templates.conf
ctld_log=$CNET_MINICLUSTER_DIR/log/slurmctld.log
cp "$catalog" "$catalog.orig"
jobs_file=$(mktemp)
cancel_all() { xargs -r scancel <"$jobs_file" 2>/dev/null || true; : >"$jobs_file"; }
features() { scontrol update NodeName=cn[1-2] AvailableFeatures="$1" ActiveFeatures="$1"; }
cleanup() {
  cancel_all
  rm -f "$jobs_file"
  features ""
  cp "$catalog.orig" "$catalog"
  scontrol reconfigure
}
trap cleanup EXIT
field() { scontrol show job "$1" | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n1; }
submit() { local id; id=$(cd /var/tmp && sbatch --parsable "$@") || return 1; echo "$id" >>"$jobs_file"; echo "$id"; }
refused() {  # refused PATTERN SBATCH-ARGS...: sbatch fails and says PATTERN
  local pattern=$1 out
  shift
  if out=$(cd /var/tmp && sbatch --parsable "$@" 2>&1); then echo "$out" >>"$jobs_file"; fail "accepted: sbatch $*"; fi
  grep -qF -- "$pattern" <<<"$out" || fail "sbatch $* did not say '$pattern': $out"
}

id=$(submit -H --cnet-template=infer-small --wrap true)
expect_eq "$(field "$id" TresPerNode)" "${tres_gres}gpu:1" "infer-small gres"
expect_eq "$(field "$id" TimeLimit)" "01:00:00" "infer-small time limit"
expect_eq "$(field "$id" NumNodes)" "1-2" "infer-small nodes"
refused "template 'infer-pipeline' needs node feature (gpumem40g|" --cnet-template=infer-pipeline --wrap true
features gpumem80g,ib200  # what cnet-topo --format features writes on such nodes
id=$(submit -H --cnet-template=infer-pipeline --wrap true)
expect_eq "$(field "$id" Features)" "gpumem80g&ib200" "infer-pipeline constraint, cut to the classes nodes have"
expect_eq "$(field "$id" TresPerNode)" "${tres_gres}gpu:2" "infer-pipeline gres"
id=$(submit -H --cnet-template=infer-small -C ib200 --wrap true)
expect_eq "$(field "$id" Features)" "ib200" "a template without a constraint keeps the user's"
echo "templates expand into the job request"

refused "template 'infer-small' sets --gres=gpu:1 but the job asks for --gres=gpu:2" --cnet-template=infer-small --gres=gpu:2 --wrap true
refused "sets a time limit of 1:00:00 but the job asks for --time=2:00:00" --cnet-template=infer-small -t 2:00:00 --wrap true
refused "sets --nodes=1-2 but the job asks for --nodes=3" --cnet-template=infer-small -N3 --wrap true
id=$(submit -H --cnet-template=debug --gres=gpu:2 --wrap true)
expect_eq "$(field "$id" TresPerNode)" "${tres_gres}gpu:2" "AllowOverride=yes keeps the user's gres"
id=$(submit -H --cnet-template=infer-small -t 10 --wrap true)
expect_eq "$(field "$id" TimeLimit)" "00:10:00" "a shorter time than the template's"
echo "conflicts refused, overrides allowed"

held=$id
# An operator (root here) changes a queued templated job as they see fit; a user's change is checked
# against the template like a submission (template_expansion_test.cpp, modify).
scontrol update jobid="$held" TimeLimit=3:00:00 || fail "job_modify refused root's change"
expect_eq "$(field "$held" TimeLimit)" "03:00:00" "time limit after root's change"
cancel_all

# Busy GPUs: templated jobs wait, and the higher priority one starts first.
# The blocker runs before the others are submitted: the jobs cancelled above may still be completing,
# and 24.11's priority/basic gives every job priority 1, so 100 and 200 would otherwise overtake it.
blocker=$(submit -N2 --gres=gpu:2 --wrap "sleep 300")
for ((i = 0; i < 100; i++)); do [[ $(field "$blocker" JobState) == RUNNING ]] && break; sleep 0.2; done
expect_eq "$(field "$blocker" JobState)" RUNNING "the blocking job"
low=$(submit --cnet-template=infer-small -N2 --priority=100 --wrap true)
high=$(submit --cnet-template=infer-small -N2 --priority=200 --wrap true)
for ((i = 0; i < 50; i++)); do
  [[ $(field "$high" Reason) == Resources ]] && break
  sleep 0.2
done
expect_eq "$(field "$high" Reason)" Resources "the higher priority job waits for resources"
expect_eq "$(field "$low" Reason)" Priority "the lower priority job waits behind it"
scancel "$blocker"
for ((i = 0; i < 100; i++)); do
  [[ $(field "$high" JobState) =~ RUNNING|COMPLETED|COMPLETING ]] && break
  sleep 0.2
done
[[ $(field "$high" JobState) =~ RUNNING|COMPLETED|COMPLETING ]] || fail "high priority job did not start: $(field "$high" JobState)"
start_high=$(field "$high" StartTime) start_low=$(field "$low" StartTime)
[[ $start_low == Unknown || ! $start_low < $start_high ]] || fail "low priority job started first ($start_low < $start_high)"
cancel_all
echo "templated jobs queue by priority"

# A damaged catalogue on reconfigure: the last good one stays in force, and the reason is logged.
# The catalogue is reread in the background (every 2 s) when the file changes, never during a submission.
echo "TemplateName=broken Gpus=lots" >>"$catalog"
for ((i = 0; i < 50; i++)); do grep -q "job_submit/cnet: .*Gpus=lots must be a whole number" "$ctld_log" && break; sleep 0.2; done
grep -q "job_submit/cnet: .*Gpus=lots must be a whole number.*keeping the templates read before" "$ctld_log" ||
  fail "the damaged catalogue is not logged: $(grep job_submit/cnet "$ctld_log" | tail -n3)"
id=$(submit -H --cnet-template=infer-small --wrap true)
expect_eq "$(field "$id" TresPerNode)" "${tres_gres}gpu:1" "template applied from the last good catalogue"
# A good change is picked up.
sed 's/^TemplateName=infer-small .*/TemplateName=infer-small Description="shorter" \\/; s/Gpus=1 Nodes=1-2 TimeLimit=01:00:00/Gpus=1 Nodes=1-2 TimeLimit=00:30:00/' \
  "$catalog.orig" >"$catalog"
for ((i = 0; i < 50; i++)); do
  id=$(submit -H --cnet-template=infer-small --wrap true)
  [[ $(field "$id" TimeLimit) == 00:30:00 ]] && break
  sleep 0.2
done
expect_eq "$(field "$id" TimeLimit)" "00:30:00" "the fixed catalogue's time limit"
echo ok
