# torch.distributed over env:// with gloo, as a training script would start: checks that cnet-launch's
# variables make one consistent job (ranks, node ranks, the rendezvous) and that a collective works.
import os

import torch
import torch.distributed as dist

dist.init_process_group("gloo", init_method="env://")
rank, size = dist.get_rank(), dist.get_world_size()
assert rank == int(os.environ["RANK"]) and size == int(os.environ["WORLD_SIZE"])
total = torch.tensor([float(rank + 1)])
dist.all_reduce(total)
names = [None] * size
dist.all_gather_object(names, (os.environ["NODE_RANK"], os.environ["LOCAL_RANK"]))
print(f"rank {rank}/{size} node {os.environ['NODE_RANK']} local {os.environ['LOCAL_RANK']} sum {total.item():.0f} "
      f"pairs {len(set(names))}", flush=True)
dist.destroy_process_group()
