"""Shared pieces of the offline-policy tests: tiny spaces and batches, hand-set linear layers,
the state round trip, and the small offline training loop of the learning checks."""
import copy
import io
import time

import gymnasium as gym
import numpy as np
import torch

from tests.offline.experts import mean_return

OBS2 = gym.spaces.Box(-np.inf, np.inf, (2,), np.float32)
ACT1 = gym.spaces.Box(-2.0, 2.0, (1,), np.float32)  # env units: twice the actor's [-1, 1]
CHOICE3 = gym.spaces.Discrete(3, start=1)

OBS = np.array([[0.5, -1.0], [1.0, 2.0], [-0.5, 0.25]], np.float32)
NEXT_OBS = np.array([[0.0, 1.0], [-1.0, 0.5], [2.0, -0.5]], np.float32)
REWARD = np.array([1.0, -0.5, 0.25], np.float32)
TERMINATED = np.array([False, True, False])
BOX_ACTION = np.array([[1.0], [-0.4], [1.6]], np.float32)  # unit actions 0.5, -0.2, 0.8


def box_batch():
    return {"obs": OBS, "action": BOX_ACTION, "reward": REWARD, "next_obs": NEXT_OBS,
            "terminated": TERMINATED, "truncated": np.zeros(3, bool),
            "index": np.arange(3, dtype=np.int64)}


def merged(base, extra):
    out = copy.deepcopy(base)
    for key, value in (extra or {}).items():
        out[key] = {**out.get(key, {}), **value} if isinstance(value, dict) else value
    return out


@torch.no_grad()
def set_linear(layer, weight, bias):
    layer.weight.copy_(torch.as_tensor(np.asarray(weight, np.float32)).reshape(layer.weight.shape))
    layer.bias.copy_(torch.as_tensor(np.asarray(bias, np.float32)).reshape(layer.bias.shape))


def round_trip_gives_identical_updates(make_policy, batches):
    """Train a policy, save it (through torch.save, weights_only load), load the state into a
    fresh policy, and check both give identical stats and weights on the next updates."""
    policy = make_policy()
    for batch in batches[:3]:
        policy.learn_mode.forward(batch)
    buffer = io.BytesIO()
    torch.save(policy.state_dict(), buffer)
    buffer.seek(0)
    clone = make_policy(seed=123)  # different init: everything must come from the state
    clone.load_state_dict(torch.load(buffer, weights_only=True))
    for batch in batches[3:]:
        assert policy.learn_mode.forward(batch) == clone.learn_mode.forward(batch)
    assert clone.train_iter == policy.train_iter == len(batches)
    assert_same(policy.state_dict(), clone.state_dict(), "state")
    obs = np.asarray(batches[-1]["obs"])
    np.testing.assert_array_equal(policy.eval_mode.forward(obs)["action"],
                                  clone.eval_mode.forward(obs)["action"])


def assert_same(a, b, path):
    """Equal nested states: same keys, equal tensors (exactly), equal numbers and strings."""
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor) and torch.equal(a, b), path
    elif isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b), path
        for key in a:
            assert_same(a[key], b[key], f"{path}.{key}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{path}[{i}]")
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


def train_and_evaluate(policy, buffer, env_id, steps, batch_size=256, episodes=5):
    """`steps` learn steps on `buffer.sample(batch_size)`, then the mean return of eval_mode
    over `episodes` episodes; returns (mean return, seconds)."""
    start = time.perf_counter()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for _ in range(steps):
            policy.learn_mode.forward(buffer.sample(batch_size))
        score = mean_return(env_id, lambda o: policy.eval_mode.forward(o[None])["action"][0],
                            episodes=episodes)
    finally:
        torch.set_num_threads(threads)
    return score, time.perf_counter() - start
