"""`OfflineDataset`: a fixed data set held once in memory, sampled in epochs of shuffled batches
in the ReplayBuffer's batch layout, so the same learners train online and offline."""
from __future__ import annotations

import threading
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

import gymnasium as gym
import numpy as np

from ._offline_pack import OfflineDataError, Packed, pack
from ._tree import unflatten

__all__ = ["OfflineDataError", "OfflineDataset", "same_space"]


def _one_line(space: gym.Space) -> str:
    return " ".join(str(space).split())


def same_space(a: gym.Space, b: gym.Space) -> bool:
    """Whether a data set made in space `a` fits space `b`: same kind, shape and dtype, bounds
    equal to float32 precision (a space read back from JSON may differ in the last bits)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, gym.spaces.Dict):
        return list(a.spaces) == list(b.spaces) and all(same_space(a[k], b[k]) for k in a.spaces)
    if isinstance(a, gym.spaces.Tuple):
        return len(a.spaces) == len(b.spaces) and all(map(same_space, a.spaces, b.spaces))
    if isinstance(a, gym.spaces.Box):
        return (a.shape == b.shape and a.dtype == b.dtype
                and np.allclose(a.low, b.low, rtol=1e-6, equal_nan=True)
                and np.allclose(a.high, b.high, rtol=1e-6, equal_nan=True))
    return a == b


def _steps(episode: Any) -> int:
    """The step count an episode claims (its rewards); `pack` checks the rest."""
    rewards = episode.get("rewards") if isinstance(episode, Mapping) else None
    return int(np.size(rewards)) if rewards is not None else 0


class OfflineDataset:
    """Transitions of whole episodes, each observation stored once (T+1 rows per episode).

    `sample(batch_size)` gives ReplayBuffer.sample's keys (`obs`, `action`, `reward` float32,
    `next_obs`, `terminated`, `truncated`, `index` int64): rows are drawn without replacement
    within an epoch (a new permutation per pass; a batch that crosses the end of a pass is
    topped up from the next one), and `epoch` counts completed passes. `state_dict()` holds the
    sampling state (RNG, the position in the pass, the epoch; the permutation is rebuilt from
    the RNG state it was drawn with), so a resumed run draws the same batches.

    Build one with `from_episodes` (dicts of observations (T+1 rows, or a dict of such arrays),
    actions, rewards, terminations, truncations) or `rlpipe.data.load_dataset` (Minari).
    Thread-safe: one lock covers sampling and the state.
    """

    def __init__(self, packed: Packed, observation_space: gym.Space, action_space: gym.Space, *,
                 seed: int = 0, id: Optional[str] = None) -> None:  # noqa: A002 - Minari's word
        self._data = packed
        self.observation_space = observation_space
        self.action_space = action_space
        self.id = id
        self._size = len(packed.reward)
        self._nested = () not in packed.obs
        self._lock = threading.Lock()
        self._rng = np.random.default_rng(seed)
        self._epoch = 0
        self._new_pass()

    @classmethod
    def from_episodes(cls, episodes: Iterable[Mapping[str, Any]], observation_space: gym.Space,
                      action_space: gym.Space, *, seed: int = 0,
                      id: Optional[str] = None) -> "OfflineDataset":  # noqa: A002
        """A data set of `episodes` (see the class doc); refuses, in one line naming the episode
        and step, empty data, length mismatches and NaN or infinite rewards or observations."""
        episodes = episodes if isinstance(episodes, Sequence) else list(episodes)
        where = f"data set {id!r}" if id else "OfflineDataset.from_episodes"
        n_steps = sum(_steps(ep) for ep in episodes)
        packed = pack(episodes, len(episodes), n_steps, observation_space, action_space, where)
        return cls(packed, observation_space, action_space, seed=seed, id=id)

    # -- what it holds ----------------------------------------------------------------------
    def __len__(self) -> int:
        """Transitions."""
        return self._size

    @property
    def n_episodes(self) -> int:
        return len(self._data.starts) - 1

    @property
    def episode_returns(self) -> np.ndarray:
        """The undiscounted return of each episode (float64)."""
        return self._data.episode_returns

    @property
    def episode_lengths(self) -> np.ndarray:
        return np.diff(self._data.starts)

    @property
    def nbytes(self) -> int:
        """Bytes of the arrays held (observations once, the index arrays included)."""
        return self._data.nbytes

    def obs_stats(self) -> Tuple[np.ndarray, np.ndarray]:
        """Per-dimension mean and std (float64) of the stored observations of a vector (1-D
        Box) observation space, every observation counted once (final ones included)."""
        if self._nested or len(self.observation_space.shape or ()) != 1:
            raise OfflineDataError(f"data set {self.id!r}: observation statistics need vector "
                                   f"observations (a 1-D Box), not "
                                   f"{_one_line(self.observation_space)}")
        obs = self._data.obs[()]
        return obs.mean(axis=0, dtype=np.float64), obs.std(axis=0, dtype=np.float64)

    @property
    def epoch(self) -> int:
        """Passes over the data completed by `sample`."""
        return self._epoch

    def episodes(self) -> List[Dict[str, Any]]:
        """The episodes as `from_episodes` takes them (views into the arrays, no copies)."""
        out = []
        d = self._data
        for k in range(self.n_episodes):
            a, b = int(d.starts[k]), int(d.starts[k + 1])
            rows = slice(a + k, b + k + 1)
            obs = self._obs_tree({p: v[rows] for p, v in d.obs.items()})
            out.append({"observations": obs, "actions": d.action[a:b], "rewards": d.reward[a:b],
                        "terminations": d.terminated[a:b], "truncations": d.truncated[a:b]})
        return out

    # -- sampling ---------------------------------------------------------------------------
    def _new_pass(self) -> None:
        self._pass_rng = self._rng.bit_generator.state
        self._perm = self._rng.permutation(self._size)
        self._pos = 0

    def _take(self, n: int) -> np.ndarray:
        parts = []
        while n > 0:
            chunk = self._perm[self._pos:self._pos + n]
            parts.append(chunk)
            self._pos += len(chunk)
            n -= len(chunk)
            if self._pos == self._size:
                self._epoch += 1
                self._new_pass()
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def _obs_tree(self, flat: Mapping[Any, np.ndarray]) -> Any:
        return unflatten(flat) if self._nested else flat[()]

    def rows(self, index: np.ndarray) -> Dict[str, Any]:
        """The transitions at `index` (int64 array) as a batch dict (copies), with `index`."""
        d = self._data
        index = np.asarray(index, dtype=np.int64)
        at = d.obs_row[index]
        return {"obs": self._obs_tree({p: v[at] for p, v in d.obs.items()}),
                "action": d.action[index], "reward": d.reward[index],
                "next_obs": self._obs_tree({p: v[at + 1] for p, v in d.obs.items()}),
                "terminated": d.terminated[index], "truncated": d.truncated[index],
                "index": index}

    def sample(self, batch_size: int) -> Dict[str, Any]:
        """`batch_size` transitions, without replacement within an epoch (see the class doc)."""
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) \
                or batch_size <= 0:
            raise ValueError(f"OfflineDataset.sample: batch_size must be a positive int, "
                             f"got {batch_size!r}")
        with self._lock:
            index = self._take(int(batch_size))
        return self.rows(index)

    # -- state ------------------------------------------------------------------------------
    def state_dict(self) -> Dict[str, Any]:
        """The sampling state: RNG state (now, and where this pass's permutation was drawn),
        position in the pass, epoch; plus id and size to check on load."""
        with self._lock:
            return {"kind": "OfflineDataset", "id": self.id, "size": self._size,
                    "rng": self._rng.bit_generator.state, "pass_rng": self._pass_rng,
                    "position": self._pos, "epoch": self._epoch}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore a `state_dict()` of a data set of the same size."""
        if state.get("kind") != "OfflineDataset" or int(state.get("size", -1)) != self._size:
            raise OfflineDataError(
                f"data set {self.id!r}: the saved sampling state is of {state.get('kind')!r} "
                f"{state.get('id')!r} with {state.get('size')} transitions, not of this data set "
                f"({self._size} transitions); resume with the data set the run trained on")
        with self._lock:
            self._rng.bit_generator.state = state["pass_rng"]
            self._perm = self._rng.permutation(self._size)
            self._pass_rng = state["pass_rng"]
            self._rng.bit_generator.state = state["rng"]
            self._pos = int(state["position"])
            self._epoch = int(state["epoch"])

    # -- checks -----------------------------------------------------------------------------
    def check_spaces(self, observation_space: gym.Space, action_space: gym.Space,
                     env_name: str) -> None:
        """Raise a one-line OfflineDataError when the data set was made for other spaces than
        the env's."""
        for what, mine, theirs in (("observation", self.observation_space, observation_space),
                                   ("action", self.action_space, action_space)):
            if not same_space(mine, theirs):
                raise OfflineDataError(
                    f"data set {self.id!r} does not fit env {env_name!r}: its {what} space is "
                    f"{_one_line(mine)} but the env's is {_one_line(theirs)}; use a data set collected in {env_name} "
                    f"(`rlpipe dataset collect ... --env {env_name}`)")

    def __repr__(self) -> str:
        return (f"OfflineDataset(id={self.id!r}, transitions={self._size}, "
                f"episodes={self.n_episodes}, epoch={self._epoch})")
