"""rlpipe.policies"""
__all__: list = []
