"""Episodes back from replay-buffer rows: rows of several envs interleaved, oldest first.

A row continues the open episode whose last `next_obs` equals its `obs` (within the same env
stream, where the rows carry `env_id`); a terminated or truncated row closes its episode. A
chain that never continues (the run stopped mid-episode, a row was dropped, or the ring buffer
overwrote the start) ends as a fragment whose last step is marked truncated; a fragment that
starts mid-episode (its beginning overwritten) starts at its first surviving row.
"""
from __future__ import annotations

from collections import defaultdict, deque
from typing import Any, Deque, Dict, List, Mapping, Tuple

import numpy as np

from ._offline_pack import OfflineDataError
from ._tree import Path, flatten, unflatten

NEEDED = ("obs", "action", "reward", "next_obs", "terminated", "truncated")


def chronological(state: Mapping[str, Any]) -> np.ndarray:
    """Row numbers of a ReplayBuffer `state_dict()`, oldest first."""
    size, capacity, pos = int(state["size"]), int(state["capacity"]), int(state["position"])
    if size < capacity:
        return np.arange(size)
    return np.concatenate([np.arange(pos, capacity), np.arange(pos)])


def _keys(leaves: List[np.ndarray], stream: np.ndarray) -> List[bytes]:
    """One hashable key per row: its env stream and the bytes of every leaf of the observation."""
    parts = [np.ascontiguousarray(leaf).reshape(len(leaf), -1).view(np.uint8) for leaf in leaves]
    rows = np.concatenate([stream.reshape(-1, 1).astype("<i8").view(np.uint8)] + parts, axis=1)
    return [r.tobytes() for r in rows]


def episodes_from_rows(data: Mapping[str, Any], order: np.ndarray, where: str) -> Tuple[List[Dict], int]:
    """(episodes, fragments): the episodes `from_episodes` takes, rebuilt from transition rows
    `data` (ReplayBuffer keys) read in `order`; `fragments` counts the chains cut short."""
    missing = [k for k in NEEDED if k not in data]
    if missing:
        raise OfflineDataError(f"{where}: the replay buffer has no {missing[0]!r} column; it needs "
                               f"{', '.join(NEEDED)}")
    if "discount" in data:
        raise OfflineDataError(f"{where}: the buffer holds n-step transitions (a 'discount' "
                               f"column), whose next_obs is n steps ahead; export a one-step buffer")
    if len(order) == 0:
        raise OfflineDataError(f"{where}: the replay buffer is empty")
    obs = {p: np.asarray(a)[order] for p, a in _flat(data["obs"]).items()}
    nxt = {p: np.asarray(a)[order] for p, a in _flat(data["next_obs"]).items()}
    stream = np.asarray(data["env_id"])[order] if "env_id" in data else np.zeros(len(order), np.int64)
    obs_keys = _keys([obs[p] for p in obs], stream)
    next_keys = _keys([nxt[p] for p in obs], stream)
    done = np.asarray(data["terminated"])[order] | np.asarray(data["truncated"])[order]
    open_chains: Dict[bytes, Deque[List[int]]] = defaultdict(deque)
    chains: List[List[int]] = []
    for i in range(len(order)):
        waiting = open_chains.get(obs_keys[i])
        chain = waiting.popleft() if waiting else None
        if waiting is not None and not waiting:
            del open_chains[obs_keys[i]]
        if chain is None:
            chain = []
            chains.append(chain)
        chain.append(i)
        if not done[i]:
            open_chains[next_keys[i]].append(chain)
    cut = {id(c) for q in open_chains.values() for c in q}
    columns = {k: np.asarray(data[k])[order] for k in ("action", "reward", "terminated", "truncated")}
    episodes = []
    for chain in chains:
        rows = np.asarray(chain)
        truncated = columns["truncated"][rows].astype(bool)
        if id(chain) in cut:
            truncated[-1] = True
        observations = {p: np.concatenate([obs[p][rows], nxt[p][rows[-1:]]]) for p in obs}
        episodes.append({"observations": _tree(observations), "actions": columns["action"][rows],
                         "rewards": columns["reward"][rows],
                         "terminations": columns["terminated"][rows].astype(bool),
                         "truncations": truncated})
    return episodes, len(cut)


def _flat(value: Any) -> Dict[Path, Any]:
    return flatten(value) if isinstance(value, Mapping) else {(): value}


def _tree(flat: Dict[Path, np.ndarray]) -> Any:
    return flat[()] if () in flat else unflatten(flat)
