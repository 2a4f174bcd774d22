"""Search-R1 (the reference): `<search>`/`<answer>` tags, EM reward, GRPO."""

NAME = "search-r1"
# How output names the paper, and the seed text of it that `check_quote` reads (none for a paper not among them)
PAPER = {"name": "Search-R1"}  # not one of the seed texts
PARTS = {
    "method": ".method:SearchR1",
    "reward": ".reward:SearchR1Reward",
    "recipe": ".recipe:RECIPE",
    "paper": ".paper:SETTING",
}
