"""Zoo entries for lunarlander."""
