"""Hidden state per env: the helpers of the acting path (`RecurrentActing`, `EnvCursor`).

A recurrent policy (`policy.recurrent`, see rlpipe.policies.base) is called
`forward(obs, state=state, first=first, ...)` and returns `"state"`, the state after the step.
Whoever acts keeps one state per env and marks where an episode starts:

- `first` (bool [n]) is True after a reset, after each episode end (terminated or truncated;
  the env manager autoresets in the same vector step) and after an env restart (`valid` False:
  the manager rebuilt the env and `obs` is the fresh env's first observation) — `starts()`;
- the state rows where `first` is True are zeros (`zero_rows`), before the policy sees them,
  so that a record's `state` is exactly what the policy started that step from.
"""
from __future__ import annotations

from typing import Any, Dict, Mapping

import numpy as np

State = Dict[str, Any]  # a (nested) dict of arrays, each with a leading env axis


def is_recurrent(face: Any) -> bool:
    """Whether a policy face (or the policy behind it) carries hidden state."""
    owner = getattr(face, "policy", face)
    return bool(getattr(owner, "recurrent", getattr(face, "recurrent", False)))


def policy_name(face: Any) -> str:
    return type(getattr(face, "policy", face)).__name__


def initial_state(face: Any, n: int) -> State:
    """The face's `initial_state(n)`, checked: a dict of arrays with leading axis `n`."""
    make = getattr(face, "initial_state", None)
    if make is None:
        make = getattr(getattr(face, "policy", None), "initial_state", None)
    if make is None:
        raise TypeError(f"{policy_name(face)} is recurrent but its face has no initial_state(n); "
                        f"define initial_state(n) on the policy (rlpipe.policies.Policy gives "
                        f"both faces one)")
    state = make(n)
    check_state(state, n, f"{policy_name(face)}.initial_state({n})")
    return state


def check_state(state: Any, n: int, where: str) -> None:
    """Refuse a state that is not a dict of arrays with leading axis `n`, naming `where`."""
    if not isinstance(state, Mapping) or not state:
        raise TypeError(f"{where} must be a non-empty dict of arrays [n, ...] (e.g. "
                        f"{{'h': [n, H]}}), got {type(state).__name__}")
    for key, value in state.items():
        if isinstance(value, Mapping):
            check_state(value, n, f"{where}[{key!r}]")
            continue
        shape = getattr(value, "shape", None)
        if shape is None or len(shape) == 0 or shape[0] != n:
            raise ValueError(f"{where}[{key!r}] must be an array with a leading axis of {n} "
                             f"(one row per env), got shape {shape}")


def next_state(face: Any, output: Mapping[str, Any], n: int, check: bool = True) -> State:
    """`output["state"]` of a recurrent face, or an error naming the policy; `check`: also
    check its layout (the acting path does so on its first step only: it runs every step)."""
    state = output.get("state")
    if state is None:
        raise KeyError(f"{policy_name(face)} is recurrent but its forward() returned no "
                       f"'state' (keys {sorted(output)}); return the state after the step "
                       f"beside 'action', in initial_state()'s layout")
    if check:
        check_state(state, n, f"{policy_name(face)}.forward()['state']")
    return state


def starts(terminated: np.ndarray, truncated: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Bool [n]: where the observation to act from next begins an episode (an episode ended —
    the env manager autoreset it — or the env was restarted)."""
    begins = terminated | truncated
    if not valid.all():
        begins |= ~valid
    return begins


def zero_rows(state: State, rows: np.ndarray) -> State:
    """`state` with the rows where `rows` is True set to zeros (new arrays; `state` itself is
    not changed, and is returned as it is when no row is True)."""
    if not rows.any():
        return state
    out: State = {}
    for key, value in state.items():
        if isinstance(value, np.ndarray):
            value = value.copy()
            value[rows] = 0
        elif isinstance(value, Mapping):
            value = zero_rows(value, rows)
        else:
            value = np.array(value, copy=True)
            value[rows] = 0
        out[key] = value
    return out


def copy_state(state: Any) -> Any:
    """A deep copy of a (nested) state, for a resume state that must not change later."""
    if state is None:
        return None
    if isinstance(state, Mapping):
        return {k: copy_state(v) for k, v in state.items()}
    return np.array(state, copy=True)
