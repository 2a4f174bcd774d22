"""OASES (seed 003): state scores from the policy's own answers at every search state, co-trained."""

NAME = "oases"
PARTS = {
    "method": ".method:Oases",
    "reward": ".reward:OasesReward",
    "recipe": ".recipe:RECIPE",
    "paper": ".paper:SETTING",
    "layout": {"oases-table1": ".table:LAYOUT"},
}
