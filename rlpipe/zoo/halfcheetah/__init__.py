"""Zoo entries for halfcheetah."""
