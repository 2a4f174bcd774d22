"""Any lm-evaluation-harness model (hf, vllm, gguf, local-completions, ...) driven through its `generate_until`.

`--model TYPE:ARGS`, e.g. `hf:pretrained=/path,dtype=float32` or
`local-completions:base_url=http://127.0.0.1:8000/v1/completions,model=m,tokenized_requests=False`.
"""

from __future__ import annotations

import time
from typing import Any

from evalsuite.errors import EvalsuiteError
from evalsuite.models.base import Backend, Needs, Generation, GenerationRequest, infer_stop


class LMEvalBackend(Backend):
    """lm-eval drops the `until` string that ended a generation; it is recovered from the unclosed tag."""

    name = "lmeval"
    needs = (Needs("lm_eval", "lmeval"),)

    def __init__(self, model: str, batch_size: int | str = 1, device: str = "cpu", **options: Any):
        (lm_eval,) = self.import_needs()
        from lm_eval.api.registry import get_model

        model_type, sep, model_args = model.partition(":")
        if not sep:
            raise EvalsuiteError(
                f"lmeval model {model!r} has no type", hint="use TYPE:ARGS, e.g. hf:pretrained=/path/to/model"
            )
        self.lm = get_model(model_type).create_from_arg_string(model_args, {"batch_size": batch_size, "device": device})
        self.meta = {"model": model, "version": getattr(lm_eval, "__version__", "unknown")}

    def generate(self, requests: list[GenerationRequest]) -> list[Generation]:
        from lm_eval.api.instance import Instance

        instances = [
            Instance(
                request_type="generate_until",
                doc={},
                idx=index,
                arguments=(
                    r.prompt,
                    {
                        "until": r.stop,
                        "max_gen_toks": r.max_tokens,
                        "do_sample": r.temperature > 0,
                        "temperature": r.temperature,
                    },
                ),
            )
            for index, r in enumerate(requests)
        ]
        start = time.perf_counter()
        texts = self.lm.generate_until(instances)
        latency = time.perf_counter() - start
        out = []
        for request, text in zip(requests, texts):
            stop = infer_stop(text, request.stop)
            out.append(
                Generation(
                    text=text + (stop or ""),
                    finish_reason="stop" if stop else "eos",
                    stop_string=stop,
                    latency_s=latency,
                )
            )
        return out

    def info(self) -> dict[str, Any]:
        return {"backend": self.name, **self.meta}
