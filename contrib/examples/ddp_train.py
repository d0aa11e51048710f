# A small data-parallel training run with torch.distributed, started by cnet-launch (env:// rendezvous):
# each rank trains on its own shard of a synthetic regression task, DDP averages the gradients, and at
# the end every rank checks its weights equal rank 0's (what DDP promises) and rank 0 prints the loss.
#   srun --mpi=pmix cnet-launch -- python3 ddp_train.py [--steps N]
import argparse
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=50)
args = parser.parse_args()

cuda = torch.cuda.is_available()
dist.init_process_group("nccl" if cuda else "gloo", init_method="env://")
rank, world = dist.get_rank(), dist.get_world_size()
device = torch.device("cuda", int(os.environ["LOCAL_RANK"]) % torch.cuda.device_count()) if cuda else torch.device("cpu")

torch.manual_seed(0)  # the same initial weights everywhere (DDP also broadcasts rank 0's)
model = DistributedDataParallel(torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1)).to(device),
                                device_ids=[device.index] if cuda else None)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
target = torch.randn(16, 1, device=device)
data = torch.Generator(device="cpu").manual_seed(1000 + rank)  # each rank its own shard
first = last = None
for step in range(args.steps):
    x = torch.randn(32, 16, generator=data).to(device)
    loss = torch.nn.functional.mse_loss(model(x), x @ target)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    mean = loss.detach().clone()
    dist.all_reduce(mean)
    mean = mean.item() / world
    first = mean if first is None else first
    last = mean

weights = torch.cat([p.detach().flatten() for p in model.parameters()])
reference = weights.clone()
dist.broadcast(reference, 0)
in_sync = torch.equal(weights, reference)
agree = torch.tensor([int(in_sync)], device=device)
dist.all_reduce(agree, op=dist.ReduceOp.MIN)
if rank == 0:
    print(f"ddp: {world} ranks on {os.environ.get('SLURM_JOB_NODELIST', '?')}, {args.steps} steps, "
          f"loss {first:.4f} -> {last:.4f}, weights {'identical on every rank' if agree.item() else 'DIFFER between ranks'}",
          flush=True)
dist.destroy_process_group()
raise SystemExit(0 if agree.item() and last < first else 1)
