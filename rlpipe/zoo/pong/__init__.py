"""Zoo entries for pong."""
