"""Action masks: where an env's mask of valid actions comes from, and its checks.

A mask is a bool array ``[n_envs, n_actions]`` (Discrete actions), True where the action is
allowed. For a 1-D MultiDiscrete(nvec) action space it is ``[n_envs, sum(nvec)]``: one segment
per component, in order (sb3-contrib's MaskablePPO layout); a source may also give a tuple/list
of per-component masks ``[n_envs, nvec[i]]`` (or, per env in an info, ``[nvec[i]]``), which is
joined into that layout. Every segment must allow at least one value. Three sources, tried in
this order:

- a user function ``action_mask_fn(obs, infos) -> mask`` given to the manager (batched: ``obs``
  is the batched observation, ``infos`` the vector env's info dict);
- an observation key ``"action_mask"`` of a Dict observation space (PettingZoo's convention);
- ``info["action_mask"]`` of the env's ``reset``/``step`` (per env; gymnasium batches it).

``MaskSource.current`` gives the mask to act from after a reset or step; ``MaskSource.next``
the mask of a step's true next observation (at an episode's end: the final observation's, from
``info["final_info"]``; where an ended episode has none, all True: a terminal step's next mask is
never used, its discount being 0).
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, List, Optional, Sequence, Union

import numpy as np
from gymnasium import spaces

from rlpipe.mask_layout import empty_segments, flat_mask, mask_segments

MASK_KEY = "action_mask"
MaskFn = Callable[[Any, dict], Any]


def load_mask_fn(spec: Union[str, MaskFn, None]) -> Optional[MaskFn]:
    """A mask function from a callable or a ``"module:function"`` string (config files)."""
    if spec is None or callable(spec):
        return spec
    if not isinstance(spec, str) or ":" not in spec:
        raise ValueError(f"action_mask_fn must be a callable or a 'module:function' string, got "
                         f"{spec!r}; e.g. env.action_mask_fn=mypkg.masks:legal_moves")
    module, _, name = spec.partition(":")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as err:
        raise ValueError(f"action_mask_fn {spec!r}: cannot import {name!r} from {module!r} "
                         f"({err}); give an importable 'module:function'") from err


def sample_valid_actions(rng: np.random.Generator, mask: np.ndarray,
                         sizes: Sequence[int]) -> np.ndarray:
    """Uniformly random valid values (from 0) per row: ``[rows]`` for one segment (Discrete),
    ``[rows, len(sizes)]`` for several (MultiDiscrete), each drawn within its segment."""
    scores = np.where(mask, rng.random(mask.shape), -1.0)
    if len(sizes) == 1:
        return scores.argmax(axis=1)
    return np.stack([part.argmax(axis=1) for part in
                     np.split(scores, np.cumsum(sizes)[:-1], axis=1)], axis=1)


class MaskSource:
    """Reads the masks of one env manager (see the module docstring)."""

    def __init__(self, label: str, obs_space: Any, action_space: Any, n_envs: int,
                 fn: Optional[MaskFn], enabled: bool) -> None:
        self.label = label
        self.n_envs = n_envs
        self.fn = fn
        self.enabled = enabled
        self.from_obs = isinstance(obs_space, spaces.Dict) and MASK_KEY in obs_space.spaces
        self.sizes = mask_segments(action_space)
        self.n_actions = sum(self.sizes) if self.sizes is not None else None
        self.from_info: Optional[bool] = None  # decided at the first reset

    def current(self, obs: Any, infos: dict, step: int) -> Optional[np.ndarray]:
        """The mask to act from (None: the env gives none), checked for all-false rows."""
        mask = self._read(obs, infos, first=True)
        if mask is not None:
            empty = empty_segments(mask, self.sizes)
            if empty.any():
                env_id, part = (int(i) for i in np.argwhere(empty)[0])
                what = "" if len(self.sizes) == 1 else f" for action component {part}"
                raise ValueError(
                    f"env {self.label}, sub-env {env_id}, manager step {step}: the action mask "
                    f"allows no action{what} (all False); a mask must allow at least one action "
                    f"(one value of every component) in every state the agent acts in. Fix the "
                    f"env's mask (or its action_mask_fn).")
        return mask

    def next(self, next_obs: Any, infos: dict, done_rows: np.ndarray,
             current: Optional[np.ndarray]) -> Optional[np.ndarray]:
        """The mask of each step's true next observation (see the module docstring)."""
        if current is None:
            return None
        if not done_rows.size:
            return current
        if self.fn is not None or self.from_obs:
            mask = self._read(next_obs, infos, first=False)
            mask = mask.copy()
        else:
            mask = current.copy()
            mask[done_rows] = True
            final = infos.get("final_info")
            if isinstance(final, dict) and MASK_KEY in final:
                has = final.get("_" + MASK_KEY, np.ones(self.n_envs, dtype=bool))
                rows = done_rows[np.asarray(has)[done_rows]]
                mask[rows] = self._shape(final[MASK_KEY])[rows]
        rows = done_rows[empty_segments(mask[done_rows], self.sizes).any(axis=1)]
        mask[rows] = True  # a final state with no legal move (game over): never bootstrapped
        return mask

    def _read(self, obs: Any, infos: dict, first: bool) -> Optional[np.ndarray]:
        if not self.enabled:
            return None
        if self.fn is not None:
            return self._shape(self.fn(obs, infos))
        if self.from_obs:
            return self._shape(obs[MASK_KEY])
        if self.from_info is None:
            self.from_info = MASK_KEY in infos
        if not self.from_info:
            return None
        if MASK_KEY not in infos:
            raise ValueError(f"env {self.label}: info['{MASK_KEY}'] was given at reset but is "
                             f"missing now; an env that masks actions must give the mask in the "
                             f"info of every reset and step")
        return self._shape(infos[MASK_KEY])

    def _shape(self, mask: Any) -> np.ndarray:
        if self.sizes is None:
            raise ValueError(f"env {self.label}: action masks need a Discrete or 1-D "
                             f"MultiDiscrete action space; give this env no masks "
                             f"(EnvManager(action_masks=False))")
        mask = flat_mask(mask, self.sizes)
        if mask.shape != (self.n_envs, self.n_actions):
            if len(self.sizes) == 1:
                raise ValueError(f"env {self.label}: an action mask must have shape [n_envs, "
                                 f"n_actions] = [{self.n_envs}, {self.n_actions}], got "
                                 f"{mask.shape}")
            raise ValueError(f"env {self.label}: an action mask must have shape [n_envs, "
                             f"sum(nvec)] = [{self.n_envs}, {self.n_actions}] (one segment per "
                             f"component, sizes {self.sizes}) or be a tuple of per-component "
                             f"masks [n_envs, nvec[i]]; got {mask.shape}")
        return mask
