"""Checking a batch of actions once, before any sub-env steps with it.

A bad action is the caller's mistake, so it raises ``ValueError`` naming what was wrong instead
of failing the env's own ``assert action_space.contains(action)`` inside ``step()``, which the
recovery would take for an env crash and answer with a restart — and in sync mode only after
the sub-envs before it had already stepped.

The common case, integer actions for a ``MultiDiscrete`` batch space whose sub-spaces are all
``Discrete(n)`` (any discrete env, vectorised), is checked with Python's min/max over a short
list or one bitwise-OR reduction (≈ 0.7-1.3 µs for 8-64 envs) against ≈ 9 µs for
``MultiDiscrete.contains``, with the same answer. The env would then
check the same array again; :class:`PrecheckedMultiDiscrete` is the env's own space object with
one change, it answers True at once for the array that was just checked, until the step is over.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces


# up to this many actions, checking them as a Python list is the faster way (≈ 0.7 µs for 8,
# against ≈ 1.3 for one NumPy reduction)
_SMALL = 16
_BITWISE_OR = np.bitwise_or.reduce


class PrecheckedMultiDiscrete(spaces.MultiDiscrete):
    """A ``MultiDiscrete`` whose ``contains`` trusts the one array :class:`ActionCheck` passed."""

    prechecked: Any = None

    def contains(self, x: Any) -> bool:
        if x is self.prechecked:
            return True
        return super().contains(x)


class ActionCheck:
    """``check(actions)`` returns the actions as an array, or raises ``ValueError``.

    ``space`` is the batched action space. :attr:`fast` tells whether it is a ``MultiDiscrete``
    of equal sizes starting at 0 (the batch of a ``Discrete`` space), checked in about a
    microsecond; other spaces are checked with their own ``contains``. With ``trusted_by_env``
    (a native vector env, whose step checks ``space`` again) the space object becomes a
    :class:`PrecheckedMultiDiscrete` (same state, same sampling); call :meth:`release` after
    each step.
    """

    def __init__(self, space: spaces.Space, n_envs: int, trusted_by_env: bool = False) -> None:
        self._space = space
        self._trusted = False
        self._n_envs = n_envs
        self._shape = space.shape
        self._high: int | None = None
        self._cast_ok: dict[np.dtype, bool] = {}
        if (
            type(space) is spaces.MultiDiscrete
            and space.nvec.ndim == 1
            and not space.start.any()
            and (space.nvec == space.nvec[0]).all()
        ):
            self._high = int(space.nvec[0])  # valid actions: 0 <= a < high
            if trusted_by_env:
                space.__class__ = PrecheckedMultiDiscrete
                self._trusted = True

    @property
    def fast(self) -> bool:
        return self._high is not None

    def __call__(self, actions: Any) -> np.ndarray:
        a = actions if type(actions) is np.ndarray else np.asarray(actions)
        if self._high is not None and a.shape == self._shape:
            cast_ok = self._cast_ok.get(a.dtype)
            if cast_ok is None:
                cast_ok = self._cast_ok[a.dtype] = bool(np.can_cast(a.dtype, self._space.dtype))
            if cast_ok and self._in_range(a):
                if self._trusted:
                    self._space.prechecked = a  # type: ignore[attr-defined]
                return a
        elif self._high is None and self._space.contains(a):
            return a
        raise ValueError(self._explain(a))

    def release(self) -> None:
        """Call once the env has stepped: the space trusts that array no more (it may change)."""
        if self._trusted:
            self._space.prechecked = None  # type: ignore[attr-defined]

    def _in_range(self, a: np.ndarray) -> bool:
        high: int = self._high  # type: ignore[assignment]
        if a.size <= _SMALL:  # Python's min/max over a short list beat NumPy reductions
            values = a.tolist()
            return min(values) >= 0 and max(values) < high
        # one reduction: the bitwise OR of ints >= 0 is >= their max (and < 0 if one is < 0)
        if 0 <= _BITWISE_OR(a) < high:
            return True
        return bool(a.min() >= 0 and a.max() < high)  # exact: OR >= high can still be valid

    def _explain(self, a: np.ndarray) -> str:
        got = f"an array of shape {a.shape} and dtype {a.dtype}"
        if a.size and a.dtype.kind in "iufb":
            got += f" with values in [{a.min()}, {a.max()}]"
        want = f"{self._n_envs} actions (one per sub-env)"
        if self._high is not None:
            want += (f": shape {self._shape}, integers in [0, {self._high - 1}] of a dtype that "
                     f"casts to {self._space.dtype}")
        else:
            want += f" inside {self._space}"
        return f"EnvManager.step: expected {want}; got {got}"
