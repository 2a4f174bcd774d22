"""R1-Searcher: its checkpoints' own tags (evaluation only; no recipe here)."""

NAME = "r1-searcher"
# How output names the paper, and the seed text of it that `check_quote` reads (none for a paper not among them)
PAPER = {"name": "R1-Searcher"}  # not one of the seed texts
PARTS = {
    "method": ".method:R1Searcher",
}
