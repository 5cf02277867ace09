"""Zoo entries for lunarlandercontinuous."""
