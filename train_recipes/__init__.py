"""The training recipes: one module per method (`RECIPE`, a `evalsuite.training.recipe.Recipe`; also a script,
`python train_recipes/<method>.py`) and their YAML settings in configs/<method>/.

Installed as `evalsuite.train_recipes`, so the configs ship inside the wheel; the recipe registry imports every module
here and registers its `RECIPE`. The modules share one shape on purpose (name, protocol, reward, the hooks the method
changes): each is a whole recipe, read and copied on its own.
"""
