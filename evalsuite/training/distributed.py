"""Statistics that must be the same in every training process (accelerate launches one per GPU).

Each process scores only its own completions, so a reward that keeps state across steps (SubSearch's EMA of batch
accuracy, which sets its β) would drift apart between processes if each updated it from its own share. The reward
therefore sums its per-step statistics over every process first: `torch.distributed.all_reduce` when a process group
is initialised (accelerate initialises one for multi-process runs), the values themselves otherwise. Every process
calls the reward once per generation batch (TRL scores its local completions on each process), so the collective
call is matched on all of them.
"""

from __future__ import annotations

from evalsuite.errors import require


def sum_across_processes(values: list[float]) -> list[float]:
    """The element-wise sum of `values` over every process of the initialised process group (the values themselves
    in a single process)."""
    torch = require("torch", "train", "training")
    distributed = torch.distributed
    if not (distributed.is_available() and distributed.is_initialized()):
        return list(values)
    # NCCL reduces only tensors on the process's GPU; gloo (CPU) takes host tensors. float64: counts stay exact.
    device = (
        torch.device("cuda", torch.cuda.current_device())
        if distributed.get_backend() == "nccl"
        else torch.device("cpu")
    )
    tensor = torch.tensor(values, dtype=torch.float64, device=device)
    distributed.all_reduce(tensor, op=distributed.ReduceOp.SUM)
    return [float(v) for v in tensor.cpu().tolist()]
