"""SubSearch (seed 001): sub-question decomposition with intermediate rewards."""

NAME = "subsearch"
# How output names the paper, and the seed text of it that `check_quote` reads (none for a paper not among them)
PAPER = {"name": "SubSearch", "seed": "001_78ae4c0020f19de4.txt"}
PARTS = {
    "method": ".method:SubSearch",
    "reward": ".reward:SubSearchReward",
    "recipe": ".recipe:RECIPE",
    "paper": ".paper:SETTING",
}
