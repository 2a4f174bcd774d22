"""SubSearch's β is one number in every training process: two real gloo processes score batches of different
accuracy, sum the step's statistics with `sum_across_processes`, and hold the same β (alone they would differ)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

WORKER = r'''
import json, sys
import torch.distributed as dist
from evalsuite.rewards import get_reward
from evalsuite.runs.schema import Passage, Turn
from evalsuite.training.distributed import sum_across_processes

dist.init_process_group("gloo")
rank = dist.get_rank()
answers = ["Paris", "Paris"] if rank == 0 else ["Lyon", "Lyon"]  # process 0: 2 of 2 correct, process 1: 0 of 2
trajectories = [[Turn(text="t", think=["t"], query="q", passages=[Passage(title="P", text="Paris")]),
                 Turn(text=f"<think>t</think><answer>{a}</answer>", think=["t"], answer=a)] for a in answers]
shared = get_reward("subsearch", {"aggregation": "adaptive_residual", "beta_max": 0.5}, reduce_sum=sum_across_processes)
alone = get_reward("subsearch", {"aggregation": "adaptive_residual", "beta_max": 0.5})
shared(["x", "y"], golden_answers=[["Paris"]] * 2, turns=trajectories)
alone(["x", "y"], golden_answers=[["Paris"]] * 2, turns=trajectories)
print(json.dumps({"rank": rank, "shared": shared.current_beta(), "alone": alone.current_beta()}))
dist.destroy_process_group()
'''


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_processes_hold_the_same_beta(tmp_path):
    pytest.importorskip("torch")
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    port = str(_free_port())
    processes = []
    for rank in range(2):
        env = {**os.environ, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port, "RANK": str(rank), "WORLD_SIZE": "2",
               "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
        processes.append(subprocess.Popen([sys.executable, str(script)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    results = []
    for process in processes:
        out, err = process.communicate(timeout=180)
        assert process.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    by_rank = {r["rank"]: r for r in results}
    # together: 2 correct of 4 -> A_1 = 0.5 -> β_1 = 0.5 · 0.5; alone: A_1 = 1 -> 0, A_1 = 0 -> 0.5
    assert by_rank[0]["shared"] == pytest.approx(0.25) and by_rank[1]["shared"] == pytest.approx(0.25)
    assert by_rank[0]["alone"] == pytest.approx(0.0) and by_rank[1]["alone"] == pytest.approx(0.5)


def test_a_single_process_sums_nothing():
    pytest.importorskip("torch")
    from evalsuite.training.distributed import sum_across_processes

    assert sum_across_processes([3.0, 4.0]) == [3.0, 4.0]
