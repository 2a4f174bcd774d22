"""The seed papers' methods beyond the Search-R1 reference, each registered by name in `evalsuite.agent.method`.

Importing the package imports no method module.
"""
