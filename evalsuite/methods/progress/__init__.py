"""Progress (seed 000): Search-R1's protocol, trained with a query-coverage process reward against teacher queries."""

NAME = "progress"
# How output names the paper, and the seed text of it that `check_quote` reads (none for a paper not among them)
PAPER = {"name": "Progress", "seed": "000_3eb2e7720ac63a45.txt"}
PARTS = {
    "reward": ".reward:ProgressReward",
    "recipe": ".recipe:RECIPE",
    "paper": ".paper:SETTING",
    "layout": {"progress-table1": ".table:LAYOUT"},
}
