"""The text protocol between a search agent and its environment, below the agent that speaks it.

Tag scanning (`tags`), the action a turn takes and the response parser (`trajectory`), passages as the model reads
them (`passages`), Search-R1's format (`search_r1`) and recorded trajectories (`recording`). Run records, backends,
retrievers, metrics and rewards read responses through this package without importing the agent; the methods in
`evalsuite.agent` build their prompts and actions on it.
"""
