"""rlpipe.envs"""
__all__: list = []
