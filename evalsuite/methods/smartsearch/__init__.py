"""SmartSearch (seed 004): query novelty x usefulness rewards, an SFT -> DPO curriculum and refined rollouts."""

NAME = "smartsearch"
# How output names the paper, and the seed text of it that `check_quote` reads (none for a paper not among them)
PAPER = {"name": "SmartSearch", "seed": "004_ab15083f9a5b84ae.txt"}
PARTS = {
    "method": ".method:SmartSearch",
    "reward": ".reward:SmartSearchReward",
    "recipe": ".recipe:RECIPE",
    "paper": ".paper:SETTING",
}
