"""Search-P1 (seed 002): plan-guided search with a dual-track path reward against reference plans."""

NAME = "search-p1"
PARTS = {
    "method": ".method:SearchP1",
    "reward": ".reward:SearchP1Reward",
    "recipe": ".recipe:RECIPE",
    "paper": ".paper:SETTING",
}
