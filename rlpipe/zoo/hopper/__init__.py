"""Zoo entries for hopper."""
