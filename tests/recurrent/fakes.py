"""A test-only recurrent policy whose hidden state is easy to check by hand.

`CountingPolicy`'s state per env is `count` (steps taken since the episode began, [n, 1]) and,
nested, `memory.first_obs` (the episode's first observation, [n, obs_dim]). It acts from its
memory: action 1 where the first observation's component 0 is positive, else 0 — so it names
the cue of rlpipe/RememberFirst-v0 at every step. Every call is logged in `calls`.
"""
from __future__ import annotations

from typing import Any, Dict, Mapping

import numpy as np
from easydict import EasyDict

from rlpipe.policies import Policy


def _copy(state: Any) -> Any:
    if isinstance(state, Mapping):
        return {k: _copy(v) for k, v in state.items()}
    return np.array(state, copy=True)


class CountingPolicy(Policy):
    recurrent = True

    @classmethod
    def default_config(cls) -> EasyDict:
        return EasyDict()

    def __init__(self, obs_space, action_space, cfg=None) -> None:
        super().__init__(cfg, obs_space, action_space)
        self.obs_dim = int(np.prod(obs_space.shape))
        self.calls: list = []  # (face, obs, state, first, kwargs) of every forward

    def initial_state(self, n: int) -> Dict[str, Any]:
        return {"count": np.zeros((n, 1), np.float32),
                "memory": {"first_obs": np.zeros((n, self.obs_dim), np.float32)}}

    def _step(self, face, obs, state, first, kwargs) -> Dict[str, Any]:
        self.calls.append((face, np.array(obs, copy=True), _copy(state), first.copy(), kwargs))
        rows = first[:, None]  # the policy zeroes the rows that begin an episode itself
        count = np.where(rows, 0.0, state["count"]) + 1.0
        first_obs = np.where(rows, obs, state["memory"]["first_obs"]).astype(np.float32)
        action = (first_obs[:, 0] > 0).astype(np.int64)
        return {"action": action, "value": count[:, 0].copy(),
                "state": {"count": count.astype(np.float32), "memory": {"first_obs": first_obs}}}

    def _forward_collect(self, obs, state=None, first=None, **kwargs):
        return self._step("collect", obs, state, first, kwargs)

    def _forward_eval(self, obs, state=None, first=None, **kwargs):
        return self._step("eval", obs, state, first, kwargs)

    def _refresh(self) -> None:
        pass

    def _forward_learn(self, batch):
        self.train_iter += 1
        return {}

    def state_dict(self):
        return {"train_iter": self.train_iter}

    def load_state_dict(self, state) -> None:
        self.train_iter = int(state["train_iter"])


class ForgetfulPolicy(CountingPolicy):
    """The same actions from the current observation only (feed-forward)."""

    recurrent = False
    initial_state = Policy.initial_state

    def _step(self, face, obs, state, first, kwargs):
        assert state is None and first is None, "a feed-forward policy is called without state"
        self.calls.append((face, np.array(obs, copy=True), None, None, kwargs))
        return {"action": (np.asarray(obs)[:, 0] > 0).astype(np.int64)}
