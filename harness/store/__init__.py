"""The results directory: `episodes.jsonl` (read strictly, written by one process),
trajectories, saved method state, and the run manifest."""
