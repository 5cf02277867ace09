"""Test-wide setup: checkpoints are signed with a throw-away key, never the user's real one."""
import os

import pytest

from tests.r2d2.core_standin import install as _install_core_standin

# rlpipe.models.recurrent (RecurrentCore) ships with the LSTM-PPO job; until it is in main, R2D2's
# tests use a private stand-in of the agreed interface (a no-op once the real module exists).
_install_core_standin()


@pytest.fixture(autouse=True, scope="session")
def _tmp_signing_key(tmp_path_factory):
    """Point RLPIPE_KEY_FILE (rlpipe.runs.key_file) at a key in a temp folder for the whole
    session; subprocesses started by tests inherit it."""
    previous = os.environ.get("RLPIPE_KEY_FILE")
    os.environ["RLPIPE_KEY_FILE"] = str(tmp_path_factory.mktemp("rlpipe-key") / "hmac.key")
    yield
    if previous is None:
        os.environ.pop("RLPIPE_KEY_FILE", None)
    else:
        os.environ["RLPIPE_KEY_FILE"] = previous


@pytest.fixture(autouse=True)
def _policy_registry_restored():
    """A test that registers a policy (a user's algorithm) leaves the registry as it found it,
    so later tests see only rlpipe's own names (e.g. in `rlpipe list`)."""
    from rlpipe.policies._space_table import _REGISTRY

    before = dict(_REGISTRY)
    yield
    _REGISTRY.clear()
    _REGISTRY.update(before)
