"""Zoo entries for SISL multiwalker (PettingZoo, 3 walkers carrying a package, continuous
actions; a walker that falls leaves the episode while the others carry on): MAPPO."""
