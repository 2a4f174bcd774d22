"""One package per method: everything a method is, in one place.

`evalsuite/methods/<name>/` holds the method's parts, each optional:

- `method.py`: the `Method` subclass the evaluator plays (prompt, action parser, observation, answer extractor);
- `reward.py`: the `MethodReward` GRPO optimises, with its config dataclass;
- `recipe.py`: the training `Recipe` (`RECIPE`) and its `TrainConfig` subclass, and the method's trainer extensions
  beside it (OASES's co-training and turn credit, SmartSearch's curriculum and refinement, Search-P1's plans);
- `paper.py`: the paper's evaluation setting, with the source of every value, and its table layout;
- `configs/`: the recipe's YAML settings (`cpu_smoke.yaml`, `gpu.yaml`, ...).

The package's `__init__.py` names its method (`NAME`) and its parts as lazy `module:object` targets relative to the
package (`PARTS`). The registries read `PARTS` the first time they are asked for a name, as they read an installed
plugin's entry points, and import a part only when its name is looked up; nothing in the layers below imports a method
package. A method shipped outside evalsuite puts the same objects behind the entry points of its own distribution.
"""
