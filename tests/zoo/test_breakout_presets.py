"""breakout-dqn and breakout-ppo train on the "train" Atari preset (clipped rewards, a lost life
ends the transition) and evaluate on "eval" (whole games), through `env.eval_env_kwargs`; an
untrained greedy agent's evaluation ends (FIRE after each lost life) instead of running to the
27k-step cut."""
import importlib.util
import time

import numpy as np
import pytest

from rlpipe.zoo import get_entry
from rlpipe.pipelines.offpolicy import eval_env_kwargs, make_envs

needs_ale = pytest.mark.skipif(importlib.util.find_spec("ale_py") is None,
                               reason='ale-py not installed: pip install "rlpipe[atari]"')


def test_eval_env_kwargs_go_over_env_kwargs():
    cfg = get_entry("cartpole-dqn").resolve({"env": {"env_kwargs": {"a": 1, "b": 2},
                                                     "eval_env_kwargs": {"b": 3}}})
    assert eval_env_kwargs(cfg.env) == {"a": 1, "b": 3}
    assert eval_env_kwargs(get_entry("cartpole-dqn").resolve({}).env) is None


@needs_ale
@pytest.mark.parametrize("name", ["breakout-dqn", "breakout-ppo", "pong-dqn"])
def test_collector_envs_end_transitions_at_lost_lives_and_evaluator_envs_do_not(name):
    cfg = get_entry(name).resolve({"env": {"n_envs": 1, "eval_n_envs": 1, "mode": "sync"}})
    collector_env, evaluator_env = make_envs(cfg)
    ended = {}
    try:
        for label, env in (("collector", collector_env), ("evaluator", evaluator_env)):
            env.reset()
            results = [env.step(np.zeros(1, dtype=np.int64)) for _ in range(150)]
            first_game = next((t for t, r in enumerate(results) if r.episodes), 149) + 1
            ended[label] = (sum(int(r.terminated.sum()) for r in results[:first_game]),
                            sum(len(r.episodes) for r in results))
    finally:
        collector_env.close()
        evaluator_env.close()
    if name.startswith("breakout"):  # 5 lives lost and one game over in ~120 steps of NOOP
        assert ended == {"collector": (5, 1), "evaluator": (1, 1)}
    else:  # Pong has no lives; its game is longer than 150 steps
        assert ended == {"collector": (0, 0), "evaluator": (0, 0)}

@needs_ale
def test_breakout_dqn_evaluation_of_an_untrained_agent_ends(tmp_path):
    entry = get_entry("breakout-dqn")
    cfg = entry.resolve({"max_env_step": 32, "progress": False, "run_dir": str(tmp_path),
                         "env": {"n_envs": 2, "eval_n_envs": 1, "mode": "sync"},
                         "replay": {"capacity": 200, "min_samples": 16},
                         "policy": {"collect": {"n_sample": 16, "random_collect_size": 16},
                                    "learn": {"batch_size": 4, "update_per_collect": 1},
                                    "eval": {"evaluator": {"eval_freq": 1, "n_episode": 1}},
                                    "model": {"hidden": (32,)}}})
    start = time.monotonic()
    result = entry.run(cfg)
    # a greedy agent that never fires would play 27,000 steps per evaluation episode
    assert time.monotonic() - start < 60 and result["env_step"] >= 32
    assert 0 <= result["eval_value"] < 50  # a whole game's real score was reported
