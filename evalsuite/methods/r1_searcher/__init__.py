"""R1-Searcher: its checkpoints' own tags (evaluation only; no recipe here)."""

NAME = "r1-searcher"
PARTS = {
    "method": ".method:R1Searcher",
}
