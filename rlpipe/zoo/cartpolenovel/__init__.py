"""Zoo entries for CartPole without velocities (rlpipe/CartPoleNoVel-v1, a POMDP)."""
