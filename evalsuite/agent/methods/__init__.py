"""The seed papers' methods beyond the Search-R1 reference; importing this package registers them all."""

from evalsuite.agent.methods import oases, r1_searcher, search_p1, smartsearch, subsearch  # noqa: F401
