"""The leaderboard as data: accepted entries under entries/<entry-id>/ and the site's settings in site.yaml.

Installed as `evalsuite.leaderboard_data`, so `evalsuite leaderboard build` works from the wheel alone.
"""
