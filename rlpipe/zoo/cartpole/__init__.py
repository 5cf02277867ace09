"""Zoo entries for cartpole."""
