"""The shared GRPO trainer and its recipe interface (`training.recipe`: `Recipe`, the hooks a method overrides,
`RolloutExtension`), TRL's rollout function over the evaluator's loop (`training.rollout`), training rows, logs and
provenance. Its heavy libraries (torch, TRL, accelerate) are imported inside the functions that need them.

Nothing is re-exported here, so importing one module of the package loads only what that module needs.
"""
