"""rlpipe.zoo"""
__all__: list = []
