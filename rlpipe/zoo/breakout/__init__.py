"""Zoo entries for breakout."""
