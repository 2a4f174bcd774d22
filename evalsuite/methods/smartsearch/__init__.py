"""SmartSearch (seed 004): query novelty x usefulness rewards, an SFT -> DPO curriculum and refined rollouts."""

NAME = "smartsearch"
PARTS = {
    "method": ".method:SmartSearch",
    "reward": ".reward:SmartSearchReward",
    "recipe": ".recipe:RECIPE",
    "paper": ".paper:SETTING",
}
