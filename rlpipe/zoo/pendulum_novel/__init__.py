"""Zoo entries for Pendulum without its angular velocity (rlpipe/PendulumNoVel-v1, a POMDP)."""
