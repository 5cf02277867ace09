"""Test-wide setup: checkpoints are signed with a throw-away key, never the user's real one."""
import os

import pytest


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


#: Tests that run alone, after the parallel pass of `make test` (pytest-xdist, one worker per
#: core): real-time envs and wall-clock checks that a second busy worker would make late, kills
#: and signals timed against a running child, and Ray, whose `ray.init()` joins a local cluster
#: another worker started (and then loses it when that worker shuts it down).
SERIAL = ("realtime/", "cluster/", "faults/", "engine/test_parallel_local.py",
          "engine/test_task_async.py", "engine/test_task_profile.py", "zoo/test_distributed.py",
          "zoo/test_ray_progress.py", "recurrent/test_collector_processes.py",
          "spaces/test_masks_zoo.py")


def pytest_collection_modifyitems(config, items):
    tests_dir = os.path.dirname(__file__)
    for item in items:
        where = os.path.relpath(str(item.fspath), tests_dir).replace(os.sep, "/")
        if where.startswith(SERIAL):
            item.add_marker(pytest.mark.serial)
