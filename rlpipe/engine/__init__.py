"""The engine: Task, middleware contracts, the async scheduler."""
from ._contract import Contract, contract, contract_of

__all__ = ["Contract", "contract", "contract_of"]
