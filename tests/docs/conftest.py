"""Docs register policies the way a user would (docs/new_algorithm.md registers "reinforce");
undo that after each test here, so a later test in the same session sees only the built-in
policies (e.g. `rlpipe list`'s algorithm names)."""
from __future__ import annotations

from typing import Iterator

import pytest

from rlpipe.policies import registry


@pytest.fixture(autouse=True)
def _restore_policy_registry() -> Iterator[None]:
    saved = dict(registry._REGISTRY)
    yield
    registry._REGISTRY.clear()
    registry._REGISTRY.update(saved)
