"""The search-r1 recipe (EM on the response's answer (+ optional format/retrieval shaping)).

`python train_recipes/search_r1.py [--config FILE] [-o CKPT]` is `evalsuite train search-r1 --config FILE -o CKPT`: the rollout
loop, retriever and reward (`evalsuite.rewards.search_r1`) live in evalsuite; the settings in configs/search-r1/.
Paper setting, ours and every deviation: docs/recipes/search-r1.md.
"""

from evalsuite.training.trainer import recipe_main

METHOD = "search-r1"

if __name__ == "__main__":
    recipe_main(METHOD)
