"""`policy.monitor_vars()` (DI-engine's name, e.g. the `metric_list` of `wandb_online_logger`)
lists exactly the statistics the policy's learner reports: the `train/<name>` columns a short
run writes to metrics.jsonl."""
import gymnasium as gym
import numpy as np
import pytest

from rlpipe.cli import main
from rlpipe.middleware import read_metrics
from rlpipe.policies import BCPolicy, get_policy
from rlpipe.zoo import get_entry

RUNS = {  # entry: settings that make one or two learn calls cheap
    "cartpole-dqn": ["--max-env-steps", "384", "--set", "replay.min_samples=64",
                     "--set", "policy.collect.random_collect_size=64"],
    "cartpole-ppo": ["--max-env-steps", "512", "--set", "policy.collect.n_sample=256",
                     "--set", "policy.learn.epoch_per_collect=1"],
    "cartpole-novel-ppo-lstm": ["--max-env-steps", "512",
                                "--set", "policy.learn.epoch_per_collect=1"],
    "simple-spread-mappo": ["--max-env-steps", "400", "--set", "policy.learn.epoch_per_collect=1"],
    "simple-spread-ippo": ["--max-env-steps", "400", "--set", "policy.learn.epoch_per_collect=1"],
    "cartpole-novel-r2d2": ["--max-env-steps", "1200", "--set", "replay.min_samples=256",
                            "--set", "policy.collect.random_collect_size=256"],
    "pendulum-sac": ["--max-env-steps", "400", "--set", "replay.min_samples=256",
                     "--set", "policy.collect.random_collect_size=256"],
    "pendulum-td3": ["--max-env-steps", "400", "--set", "replay.min_samples=256",
                     "--set", "policy.collect.random_collect_size=256"],
}


def monitor_vars(entry):
    """The entry's policy's monitor_vars(): the class's list, or an instance's when its list
    depends on the settings (SAC's)."""
    cls = get_entry(entry).policy_cls
    if cls.learn_stats is not None:
        return cls.learn_stats
    cfg = get_entry(entry).resolve()
    env = gym.make(cfg.env.id)
    return cls(cfg.policy, env.observation_space, env.action_space).monitor_vars()


@pytest.mark.parametrize("entry", list(RUNS))
def test_monitor_vars_are_the_learners_statistics(entry, tmp_path):
    if entry.startswith("simple-spread"):
        pytest.importorskip("mpe2")
    run_dir = tmp_path / "run"
    assert main(["train", entry, "--run-dir", str(run_dir), "--no-progress",
                 "--set", "env.stop_value=1e9"] + RUNS[entry]) == 0
    logged = {k[len("train/"):] for row in read_metrics(run_dir) for k in row
              if k.startswith("train/")}
    assert logged == set(monitor_vars(entry))


def offline_batch(action_space, rows=32):
    rng = np.random.default_rng(0)
    action = (rng.integers(0, action_space.n, rows) if isinstance(action_space, gym.spaces.Discrete)
              else rng.uniform(-1, 1, (rows,) + action_space.shape).astype(np.float32))
    return {"obs": rng.normal(size=(rows, 4)).astype(np.float32), "action": action,
            "reward": rng.normal(size=rows).astype(np.float32),
            "next_obs": rng.normal(size=(rows, 4)).astype(np.float32),
            "terminated": np.arange(rows) % 5 == 0}


BOX = gym.spaces.Box(-1, 1, (2,), np.float32)


@pytest.mark.parametrize("name, action_space", [
    ("bc", gym.spaces.Discrete(3)), ("bc", BOX), ("discrete-cql", gym.spaces.Discrete(3)),
    ("iql", BOX), ("cql", BOX), ("td3-bc", BOX)])
def test_the_offline_policies_monitor_vars_are_their_learn_outputs(name, action_space):
    obs = gym.spaces.Box(-1, 1, (4,), np.float32)
    policy = get_policy(name)({"seed": 0}, obs, action_space)
    out = {}
    for _ in range(3):  # TD3+BC's actor statistics come with its delayed actor updates
        out.update(policy.learn_mode.forward(offline_batch(action_space)))
    assert set(out) == set(policy.monitor_vars())


def test_a_policy_that_lists_no_statistics_says_what_to_pass_instead():
    class Quiet(BCPolicy):
        learn_stats = None

    box = gym.spaces.Box(-1, 1, (2,), np.float32)
    with pytest.raises(NotImplementedError, match="pass metric_list=None to wandb_online_logger"):
        Quiet({}, box, box).monitor_vars()
    assert get_policy("dqn").learn_stats is not None
