"""Zoo entries for MPE simple_spread (mpe2, 3 agents, 25-step episodes): MAPPO, IPPO, and
MAPPO with continuous actions."""
