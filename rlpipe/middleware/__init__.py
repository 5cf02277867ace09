"""rlpipe.middleware"""
__all__: list = []
