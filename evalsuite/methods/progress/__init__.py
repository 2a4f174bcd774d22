"""Progress (seed 000): Search-R1's protocol, trained with a query-coverage process reward against teacher queries."""

NAME = "progress"
PARTS = {
    "reward": ".reward:ProgressReward",
    "recipe": ".recipe:RECIPE",
    "paper": ".paper:SETTING",
    "layout": {"progress-table1": ".table:LAYOUT"},
}
