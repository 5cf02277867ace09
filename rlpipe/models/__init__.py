"""rlpipe.models"""
__all__: list = []
