"""The progress recipe (EM + format + 0.2 x coverage F1 of policy vs teacher queries).

`python train_recipes/progress.py [--config FILE] [-o CKPT]` is `evalsuite train progress --config FILE -o CKPT`: the rollout
loop, retriever and reward (`evalsuite.rewards.progress`) live in evalsuite; the settings in configs/progress/.
Paper setting, ours and every deviation: docs/recipes/progress.md.
"""

from evalsuite.training.trainer import recipe_main

METHOD = "progress"

if __name__ == "__main__":
    recipe_main(METHOD)
