"""Zoo entries for acrobot."""
