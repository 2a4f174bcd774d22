"""The smartsearch recipe (SFT -> DPO curriculum, then EM +/- scaled novelty x usefulness + format).

`python train_recipes/smartsearch.py [--config FILE] [-o CKPT]` is `evalsuite train smartsearch --config FILE -o CKPT`: the rollout
loop, retriever and reward (`evalsuite.rewards.smartsearch`) live in evalsuite; the settings in configs/smartsearch/.
Paper setting, ours and every deviation: docs/recipes/smartsearch.md.
"""

from evalsuite.training.trainer import recipe_main

METHOD = "smartsearch"

if __name__ == "__main__":
    recipe_main(METHOD)
