"""The search-p1 recipe (0.1 format + 0.3 dual-track path + 0.6 soft outcome).

`python train_recipes/search_p1.py [--config FILE] [-o CKPT]` is `evalsuite train search-p1 --config FILE -o CKPT`: the rollout
loop, retriever and reward (`evalsuite.rewards.search_p1`) live in evalsuite; the settings in configs/search-p1/.
Paper setting, ours and every deviation: docs/recipes/search-p1.md.
"""

from evalsuite.training.trainer import recipe_main

METHOD = "search-p1"

if __name__ == "__main__":
    recipe_main(METHOD)
