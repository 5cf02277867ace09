"""Zoo entries for MiniGrid (the [minigrid] extra)."""
