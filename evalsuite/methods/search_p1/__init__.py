"""Search-P1 (seed 002): plan-guided search with a dual-track path reward against reference plans."""

NAME = "search-p1"
# How output names the paper, and the seed text of it that `check_quote` reads (none for a paper not among them)
PAPER = {"name": "Search-P1", "seed": "002_fd41f428d429a5a0.txt"}
PARTS = {
    "method": ".method:SearchP1",
    "reward": ".reward:SearchP1Reward",
    "recipe": ".recipe:RECIPE",
    "paper": ".paper:SETTING",
}
