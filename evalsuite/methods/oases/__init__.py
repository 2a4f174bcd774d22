"""OASES (seed 003): state scores from the policy's own answers at every search state, co-trained."""

NAME = "oases"
# How output names the paper, and the seed text of it that `check_quote` reads (none for a paper not among them)
PAPER = {"name": "OASES", "seed": "003_7936c9aae4d474f1.txt"}
PARTS = {
    "method": ".method:Oases",
    "reward": ".reward:OasesReward",
    "recipe": ".recipe:RECIPE",
    "paper": ".paper:SETTING",
    "layout": {"oases-table1": ".table:LAYOUT"},
}
