"""Offline `--async`: an evaluator process evaluates the weights the trainer publishes while
it trains (0 collectors). The updates are those of the single-process run, bit for bit; the
final weights are evaluated; no child process is left; the run resumes."""
import json
import multiprocessing
import re

import pytest
import torch

from rlpipe.middleware import load_checkpoint
from rlpipe.runs import RunDir
from rlpipe.training import resume, train

from .datasets import cartpole_data
from .test_offline_resume import COMMON


def _run(run_dir, budget, async_mode, **kwargs):
    return train(algo="dqn", dataset="cartpole/async-v0", run_dir=run_dir, progress=False,
                 async_mode=async_mode, overrides=COMMON + [f"max_train_iter={budget}"],
                 **kwargs)


def _weights(run_dir):
    return load_checkpoint(RunDir(run_dir).final)["policy"]


def _same_weights(a, b):
    return all(torch.equal(a[net][k], b[net][k]) for net in ("online", "target") for k in a[net])


def _evaluated_iters(run_dir):
    """The train_iter of the weights each evaluation was of, from the log (metrics.jsonl
    rows carry the learner's train_iter when the evaluation arrived, as online)."""
    text = (RunDir(run_dir).root / "log.txt").read_text()
    return [int(n) for n in re.findall(r"eval at train_iter (\d+): .*evaluator process", text)]


@pytest.fixture
def data(minari_root):
    cartpole_data("cartpole/async-v0", 2)


def test_async_evaluates_in_a_process_beside_the_same_training(data):
    sync = _run("sync", 150, False)
    run = _run("async", 150, True)
    assert multiprocessing.active_children() == []  # the evaluator process is gone
    assert run["train_iter"] == sync["train_iter"] == 150
    assert _same_weights(_weights("sync"), _weights("async"))  # evaluation never touched them
    assert run["final_eval_iter"] == 150 and run["eval_value"] is not None  # the final weights
    evaluated = _evaluated_iters("async")  # the newest published weights when it was free
    assert evaluated[-1] == 150 and evaluated == sorted(set(evaluated))
    assert set(evaluated) <= {0, 50, 100, 150}  # published first, then every eval_freq updates
    config = json.loads((RunDir("async").root / "config.json").read_text())
    assert config["config"]["parallel"]["collectors"] == 0
    assert config["config"]["parallel"]["evaluator"] is True


def test_async_run_resumes_with_its_evaluator_process(data):
    _run("whole", 150, False)
    _run("parts", 100, True)
    parts = resume("parts", overrides=["max_train_iter=150"], progress=False)
    assert multiprocessing.active_children() == []
    assert parts["train_iter"] == 150 and parts["final_eval_iter"] == 150
    assert _same_weights(_weights("whole"), _weights("parts"))


def test_offline_runs_take_no_collectors(data):
    with pytest.raises(ValueError, match="no collectors; --async"):
        _run("c", 10, False, collectors=2)


def test_the_exchange_without_env_steps_wants_an_evaluator_and_no_collector():
    from easydict import EasyDict

    from rlpipe.engine._link import local_links
    from rlpipe.middleware import Exchange

    learner, _, _, close = local_links(collectors=1, evaluator=True)
    try:
        with pytest.raises(ValueError, match="1 collectors and an evaluator: launch it with "
                                             "collectors=0, evaluator=True"):
            Exchange(EasyDict(), object(), learner, env_steps=False)
    finally:
        close()
