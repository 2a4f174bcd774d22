"""The project's results: numbers the seed papers report, transcribed under reported/<paper>/.

Installed as `evalsuite.results`, so the transcribed tables ship inside the wheel.
"""
