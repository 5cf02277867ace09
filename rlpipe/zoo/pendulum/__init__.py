"""Zoo entries for pendulum."""
