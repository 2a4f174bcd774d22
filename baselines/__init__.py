"""Inference-only baselines (direct, cot, naive-rag, ircot, search-o1), registered as methods by name in
`evalsuite.agent.method`."""
