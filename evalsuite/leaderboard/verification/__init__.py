"""Leaderboard verification's checks, one module per concern; `evalsuite.leaderboard.verify` runs them."""
