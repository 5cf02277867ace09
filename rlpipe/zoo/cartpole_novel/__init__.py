"""Zoo entries for CartPole without its velocities (rlpipe/CartPoleNoVel-v1, a POMDP)."""
