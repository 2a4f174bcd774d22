"""The subsearch recipe (EM with answerability/decomposition process rewards, adaptive-residual aggregation).

`python train_recipes/subsearch.py [--config FILE] [-o CKPT]` is `evalsuite train subsearch --config FILE -o CKPT`: the rollout
loop, retriever and reward (`evalsuite.rewards.subsearch`) live in evalsuite; the settings in configs/subsearch/.
Paper setting, ours and every deviation: docs/recipes/subsearch.md.
"""

from evalsuite.training.trainer import recipe_main

METHOD = "subsearch"

if __name__ == "__main__":
    recipe_main(METHOD)
