"""The seed papers' methods beyond the Search-R1 reference; `evalsuite.agent.method.get_method` registers them all.

Importing the package imports no method module (the Search-R1 reference itself uses `tags.py` from here).
"""

BUILTIN_METHOD_MODULES = ("oases", "r1_searcher", "search_p1", "smartsearch", "subsearch")
