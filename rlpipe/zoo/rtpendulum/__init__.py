"""Zoo entries for the simulated real-time pendulum (rlpipe/RTPendulum-v0)."""
