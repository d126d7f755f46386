"""Leaderboard: aggregation of episode records into tables (statistics, plots and the
regression check build on the same cells)."""
