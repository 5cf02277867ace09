"""rlpipe.data"""
__all__: list = []
