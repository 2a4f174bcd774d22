"""The training recipes: one script per method (`python train_recipes/<method>.py`) and their YAML settings in configs/.

Installed as `evalsuite.train_recipes`, so the configs ship inside the wheel.
"""
