"""Zoo entries for rlpipe/MaskedGrid-v0 (action masks)."""
