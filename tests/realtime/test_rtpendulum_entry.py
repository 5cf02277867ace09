"""The rtpendulum-sac zoo entry resolves and runs, in one process and with its collector process."""
import json
import os

import pytest

pytest.importorskip("rtgym")
pytestmark = pytest.mark.filterwarnings("ignore:Time-step timed out")

from rlpipe.zoo import get_entry  # noqa: E402
from rlpipe.training import train  # noqa: E402

SHORT = ["max_env_step=300", "env.env_kwargs={'hz': 100, 'ep_max_length': 50}",
         "env.eval_n_envs=1", "policy.eval.evaluator.n_episode=1",
         "policy.eval.evaluator.eval_freq=300", "policy.collect.random_collect_size=100",
         "replay.min_samples=100", "ckpt.train_freq=1000", "env.stop_value=1"]


def test_entry_resolves_with_its_collector_process():
    cfg = get_entry("rtpendulum-sac").resolve()
    assert cfg.env.id == "rlpipe/RTPendulum-v0"
    assert cfg.parallel.collectors == 1 and cfg.parallel.backend == "local"
    assert cfg.parallel.child_nice == 0  # the collector keeps its priority


def _metrics(run_dir):
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        return [json.loads(line) for line in f]


@pytest.mark.slow
def test_entry_runs_a_few_hundred_steps_in_its_collector_process(tmp_path):
    run_dir = str(tmp_path / "run")
    result = train("rtpendulum-sac", seed=0, overrides=SHORT, run_dir=run_dir, progress=False)
    assert result["env_step"] >= 300
    rows = [r for r in _metrics(run_dir) if "collect/overrun_rate" in r]
    assert rows, "the learner logged no collect/overrun_rate"
    last = rows[-1]
    assert last["collect/rt_time_steps"] >= 300  # counted in the collector, summed at the learner
    assert 0.0 <= last["collect/overrun_rate"] <= 1.0


@pytest.mark.slow
def test_entry_runs_in_one_process(tmp_path):
    entry = get_entry("rtpendulum-sac")
    cfg = entry.resolve({"parallel": {"collectors": 0}, "run_dir": str(tmp_path / "one")},
                        SHORT)
    result = entry.run(cfg)
    assert result["env_step"] >= 300
    assert any("collect/overrun_rate" in r for r in _metrics(cfg.run_dir))
