"""Search-R1 (the reference): `<search>`/`<answer>` tags, EM reward, GRPO."""

NAME = "search-r1"
PARTS = {
    "method": ".method:SearchR1",
    "reward": ".reward:SearchR1Reward",
    "recipe": ".recipe:RECIPE",
    "paper": ".paper:SETTING",
}
