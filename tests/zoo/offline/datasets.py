"""Small expert data sets written with `write_dataset`, for the offline zoo tests."""
from __future__ import annotations

import numpy as np

from rlpipe.data import write_dataset
from tests.offline.episodes import play
from tests.offline.experts import cartpole_expert, pendulum_expert


def cartpole_data(dataset_id: str, episodes: int, eps: float = 0.1, seed: int = 0) -> float:
    """`episodes` episodes of the scripted CartPole expert with epsilon-random actions, written
    as `dataset_id`; returns their mean return."""
    rng = np.random.default_rng(seed)

    def act(obs: np.ndarray) -> int:
        return int(rng.integers(2)) if rng.random() < eps else cartpole_expert(obs)

    data = play("CartPole-v1", episodes, act, seed=seed)
    write_dataset(dataset_id, data, "CartPole-v1", algorithm_name="scripted-expert")
    return float(np.mean([ep["rewards"].sum() for ep in data]))


def pendulum_data(dataset_id: str, episodes: int, noise: float = 0.5, seed: int = 0) -> float:
    """The scripted Pendulum expert with Gaussian action noise (`noise` in half action
    ranges), written as `dataset_id`; returns the mean return."""
    rng = np.random.default_rng(seed)

    def act(obs: np.ndarray) -> np.ndarray:
        action = pendulum_expert(obs) + rng.normal(0.0, 2.0 * noise, 1)
        return np.clip(action, -2.0, 2.0).astype(np.float32)

    data = play("Pendulum-v1", episodes, act, seed=seed)
    write_dataset(dataset_id, data, "Pendulum-v1", algorithm_name="scripted-expert")
    return float(np.mean([ep["rewards"].sum() for ep in data]))
