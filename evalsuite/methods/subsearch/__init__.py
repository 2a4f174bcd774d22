"""SubSearch (seed 001): sub-question decomposition with intermediate rewards."""

NAME = "subsearch"
PARTS = {
    "method": ".method:SubSearch",
    "reward": ".reward:SubSearchReward",
    "recipe": ".recipe:RECIPE",
    "paper": ".paper:SETTING",
}
