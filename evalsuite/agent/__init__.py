"""Evaluation: what a method is (`agent.method`: `Method`, the method registry; `agent.tag_method`), the papers'
settings machinery (`agent.papers`), a run's settings (`agent.config.RunConfig`), the batched rollout loop
(`agent.engine`), the run driver (`agent.runner`), its Ray driver (`agent.distributed`) and merging runs
(`agent.merge`).

Nothing is re-exported here, so importing one module of the package loads only what that module needs.
"""
