"""The offline pipeline's shape: an entry module declaring PIPELINE = "offline", the
middleware chain on an OfflineRLContext, and what async mode may overlap."""
import pytest

from rlpipe.contexts import OfflineRLContext
from rlpipe.engine import contract_of
from rlpipe.engine._scheduler import dependencies
from rlpipe.zoo import ENTRIES, get_entry
from rlpipe.training import train
from rlpipe.pipelines.offline import build_offline
from rlpipe.pipelines.run_keys import RUN_DEFAULTS

from .datasets import cartpole_data


@pytest.fixture
def offline_entry(monkeypatch, minari_root):
    monkeypatch.setitem(ENTRIES, "cartpole-offline-test", "tests.zoo.offline.entry_module")
    cartpole_data("cartpole/entry-v0", 1)
    return "cartpole-offline-test"


def test_an_entry_module_declares_the_offline_pipeline(offline_entry):
    entry = get_entry(offline_entry)
    assert entry.pipeline == "offline"
    cfg = entry.resolve({}, ["dataset.id=cartpole/entry-v0"])
    assert set(RUN_DEFAULTS["offline"]) <= set(cfg)
    assert "replay" not in cfg and "max_env_step" not in cfg
    result = train(offline_entry, overrides=["dataset.id=cartpole/entry-v0",
                                             "max_train_iter=30"], progress=False)
    assert result["train_iter"] == 30 and result["train_epoch"] >= 0
    with pytest.raises(ValueError, match="takes no env steps.*max_train_iter"):
        train(offline_entry, max_env_step=100, overrides=["dataset.id=cartpole/entry-v0"])


class _Recorder:
    """Takes what `Pipeline.install` puts on a task."""

    def __init__(self):
        self.chain = []

    def use(self, fn):
        self.chain.append(fn)


def test_the_chain_and_what_async_mode_overlaps(offline_entry):
    from rlpipe.policies import DQNPolicy

    cfg = get_entry(offline_entry).resolve({}, ["dataset.id=cartpole/entry-v0", "progress=False"])
    pipeline = build_offline(cfg, DQNPolicy)
    recorder = _Recorder()
    try:
        pipeline.install(recorder)
    finally:
        pipeline.close()
    assert isinstance(pipeline.ctx, OfflineRLContext)
    names = [getattr(fn, "__name__", type(fn).__name__) for fn in recorder.chain]
    assert names[:3] == ["_evaluator", "_offline_data_fetcher", "_trainer"]
    fields = frozenset(OfflineRLContext.__dataclass_fields__)
    deps = dependencies([contract_of(fn).resolve(fields) for fn in recorder.chain])
    assert 0 not in deps[1]  # the fetcher draws the next batch while the evaluator runs
    assert 0 in deps[2]  # the trainer writes the train_iter the evaluator reads


def test_async_mode_runs_it_in_threads(offline_entry):
    result = train(offline_entry, async_mode=True, progress=False,
                   overrides=["dataset.id=cartpole/entry-v0", "max_train_iter=20"])
    assert result["train_iter"] == 20 and result["profile"].iterations == 20
