#!/usr/bin/env bash
# cnet-launch through srun: PyTorch (Debian's python3-torch, CPU) initialises torch.distributed via
# env:// with gloo across two nodes and all_reduce gives the right sum; the plan is consistent across
# ranks and names rank 0's node address; the command's exit code comes back through srun.
source "$(dirname "$0")/lib.sh"
launch() { on_cluster srun --mpi=pmix -N2 --ntasks-per-node=2 "$@"; }

out=$(launch "$CNET_BIN/cnet-launch" -- /usr/bin/python3 "$(dirname "$(readlink -f "$0")")/torch_allreduce.py" 2>&1) ||
  fail "torch job: $out"
echo "$out"
for r in 0 1 2 3; do
  grep -q "^rank $r/4 node $((r / 2)) local $((r % 2)) sum 10 pairs 4$" <<<"$out" || fail "rank $r: wrong rank, node or sum"
done

# Each node has its own network: the rendezvous is rank 0's node address on its eth0, never loopback.
cn1_addr=$(on_cluster scontrol show node cn1 | grep -o 'NodeAddr=[^ ]*' | cut -d= -f2)
plans=$(launch "$CNET_BIN/cnet-launch" --dry-run --json 2>/dev/null) || fail "dry run"
/usr/bin/python3 - "$plans" "$cn1_addr" <<'PY' || fail "dry-run plans disagree (cn1 at $cn1_addr): $plans"
import json, sys
plans = [json.loads(l) for l in sys.argv[1].splitlines()]
assert sorted(p["rank"] for p in plans) == [0, 1, 2, 3]
assert len({(p["env"]["MASTER_ADDR"], p["env"]["MASTER_PORT"]) for p in plans}) == 1
for p in plans:
    e = p["env"]
    assert e["MASTER_ADDR"] == sys.argv[2] and int(e["MASTER_PORT"]) > 0
    assert e["LOCAL_RANK"] == str(p["rank"] % 2) and e["GROUP_RANK"] == str(p["rank"] // 2)
    assert e["GLOO_SOCKET_IFNAME"] == "eth0" and e["WORLD_SIZE"] == "4"
    assert p["host"] == ("cn1" if p["rank"] < 2 else "cn2")
PY

rc=0
launch "$CNET_BIN/cnet-launch" -- bash -c 'exit 7' 2>/dev/null || rc=$?
expect_eq "$rc" 7 "the command's exit code through srun"
rc=0
err=$(launch "$CNET_BIN/cnet-launch" -- /nonexistent/train 2>&1) || rc=$?
expect_eq "$rc" 127 "a missing command"
grep -q "cannot run '/nonexistent/train'" <<<"$err" || fail "missing command not named: $err"
rc=0
"$CNET_BIN/cnet-launch" --bind sideways -- true 2>/dev/null || rc=$?
expect_eq "$rc" 2 "a bad --bind"
echo ok
