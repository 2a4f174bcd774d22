"""The oases recipe (outcome F1 + state-score differences from the policy's own state evaluations).

`python train_recipes/oases.py [--config FILE] [-o CKPT]` is `evalsuite train oases --config FILE -o CKPT`: the rollout
loop, retriever and reward (`evalsuite.rewards.oases`) live in evalsuite; the settings in configs/oases/.
Paper setting, ours and every deviation: docs/recipes/oases.md.
"""

from evalsuite.training.trainer import recipe_main

METHOD = "oases"

if __name__ == "__main__":
    recipe_main(METHOD)
