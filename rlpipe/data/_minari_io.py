"""Minari data sets on disk: load one into an `OfflineDataset`, write episodes as one, list and
summarise the local ones. The local root is Minari's (`MINARI_DATASETS_PATH`, default
~/.minari/datasets); nothing is downloaded. `minari` is imported only when needed.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import warnings
from pathlib import Path
from typing import Any, Dict, Iterable, Iterator, List, Mapping, NamedTuple, Optional, Union

import gymnasium as gym
import numpy as np

from ._offline import OfflineDataset
from ._offline_pack import ACTION_SPACES, OfflineDataError, as_obs_tree, check_episode, pack

__all__ = ["dataset_spec", "dataset_root", "dataset_summary", "load_dataset", "local_datasets",
           "write_dataset"]

ID_RE = re.compile(r"^(?:[-_\w][-_\w/]*[-_\w]/)?[-_\w]+?-v\d+$")
INSTALL_HINT = 'pip install "rlpipe[offline]"'


def _minari() -> Any:
    try:
        import minari
    except ImportError as err:
        raise ImportError(f"offline data sets need the minari package ({err}); install it with "
                          f"`{INSTALL_HINT}`") from None
    return minari


def dataset_root() -> Path:
    """Where Minari keeps local data sets: $MINARI_DATASETS_PATH, else ~/.minari/datasets."""
    root = os.environ.get("MINARI_DATASETS_PATH")
    return Path(root) if root else Path.home() / ".minari" / "datasets"


def check_id(dataset_id: str) -> str:
    if not isinstance(dataset_id, str) or not ID_RE.match(dataset_id):
        raise OfflineDataError(f"data set id {dataset_id!r} is malformed: use NAMESPACE/NAME-vN "
                               f"(e.g. cartpole/medium-v0)")
    return dataset_id


def local_datasets() -> List[str]:
    """The ids of the data sets under the local root, sorted."""
    root = dataset_root()
    if not root.is_dir():
        return []
    found = [p.parent.relative_to(root).as_posix() for p in root.rglob("data")
             if p.is_dir() and (p / "metadata.json").is_file()]
    return sorted(found)


def _missing(dataset_id: str) -> OfflineDataError:
    there = local_datasets()
    held = ", ".join(there) if there else "none"
    return OfflineDataError(
        f"data set {dataset_id!r} is not in the Minari root {dataset_root()} (set by "
        f"MINARI_DATASETS_PATH; data sets there: {held}); make it with `rlpipe dataset collect "
        f"random --env ENV --episodes N --id {dataset_id}` (or from a run folder)")


def rebuild_command(dataset_id: str) -> str:
    """The `rlpipe dataset collect` command that makes data set `dataset_id` again, from what
    its metadata.json says it was made of (a random policy, a run's checkpoint or its replay
    buffer); SOURCE where the metadata does not say."""
    try:
        meta = json.loads((dataset_root() / dataset_id / "data" / "metadata.json").read_text())
        env = (json.loads(meta.get("env_spec") or "null") or {}).get("id")
    except (OSError, ValueError, AttributeError):  # the metadata is damaged too
        meta, env = {}, None
    made_by = str(meta.get("algorithm_name") or "")
    episodes = f" --episodes {meta['total_episodes']}" if meta.get("total_episodes") else ""
    path = re.search(r"\((.+?\.pt)\)", made_by)
    run = str(Path(path[1]).parent.parent) if path else None  # RUN/ckpt/best.pt
    if made_by.startswith("random"):
        source = f"random --env {env or 'ENV'}{episodes}"
    elif run and " replay buffer (" in made_by:
        source = f"--from-replay {run}"
    elif run:
        source = f"{run}{episodes}"
    else:
        source = f"SOURCE{episodes}"
    for flag in ("eps", "noise"):
        value = re.search(rf", {flag} ([-+.\de]+)", made_by)
        if value:
            source += f" --{flag} {value[1]}"
    return f"rlpipe dataset collect {source} --id {dataset_id} --overwrite"


@contextlib.contextmanager
def _reading(dataset_id: str) -> Iterator[None]:
    """One-line errors for a data set whose files cannot be read (an HDF5 file cut short by a
    full disk or an interrupted copy), naming the folder and the command that rebuilds it."""
    try:
        yield
    except (OSError, ValueError, KeyError, TypeError) as err:
        folder = dataset_root() / dataset_id / "data"
        files = sorted(p.name for p in folder.glob("*.hdf5")) if folder.is_dir() else []
        where = folder / files[0] if len(files) == 1 else folder
        raise OfflineDataError(
            f"data set {dataset_id!r}: {where} cannot be read (damaged or cut short: "
            f"{' '.join(str(err).split())}); make it again with `{rebuild_command(dataset_id)}`"
        ) from None


def _open(dataset_id: str) -> Any:
    """The MinariDataset `dataset_id`, with one-line errors for a missing or unreadable one."""
    minari = _minari()
    check_id(dataset_id)
    if not (dataset_root() / dataset_id / "data").is_dir():
        raise _missing(dataset_id)
    with _reading(dataset_id):
        return minari.load_dataset(dataset_id)


def _episodes(minari_ds: Any) -> Iterator[Dict[str, Any]]:
    for ep in minari_ds.iterate_episodes():
        yield {"observations": as_obs_tree(ep.observations), "actions": ep.actions,
               "rewards": ep.rewards, "terminations": ep.terminations,
               "truncations": ep.truncations}


def load_dataset(dataset_id: str, *, seed: int = 0) -> OfflineDataset:
    """The local Minari data set `dataset_id` as an `OfflineDataset` (arrays read once; the
    peak memory is the arrays plus one episode)."""
    ds = _open(dataset_id)
    with _reading(dataset_id):
        packed = pack(_episodes(ds), int(ds.total_episodes), int(ds.total_steps),
                      ds.observation_space, ds.action_space, f"data set {dataset_id!r}")
    return OfflineDataset(packed, ds.observation_space, ds.action_space, seed=seed, id=dataset_id)


def env_name(minari_ds: Any) -> Optional[str]:
    spec = minari_ds.spec.env_spec
    return spec.id if spec is not None else None


class DatasetSpec(NamedTuple):
    """What a data set was made in: its spaces and the id of its env (None when Minari kept
    no env spec, e.g. an env made by a factory)."""

    observation_space: gym.Space
    action_space: gym.Space
    env_id: Optional[str]


def dataset_spec(dataset_id: str) -> DatasetSpec:
    """The spaces and env id of local data set `dataset_id` (reads its metadata only)."""
    ds = _open(dataset_id)
    return DatasetSpec(ds.observation_space, ds.action_space, env_name(ds))


def dataset_summary(dataset_id: str) -> Dict[str, Any]:
    """Episodes, transitions, mean/min/max return, spaces, env, algorithm and size on disk."""
    ds = _open(dataset_id)
    with _reading(dataset_id):
        returns = np.array([float(np.sum(ep.rewards)) for ep in ds.iterate_episodes()])
    meta = ds.storage.metadata
    size = meta.get("dataset_size")
    return {"id": dataset_id, "episodes": int(ds.total_episodes),
            "transitions": int(ds.total_steps),
            "mean_return": float(returns.mean()) if len(returns) else float("nan"),
            "min_return": float(returns.min()) if len(returns) else float("nan"),
            "max_return": float(returns.max()) if len(returns) else float("nan"),
            "observation_space": " ".join(str(ds.observation_space).split()),
            "action_space": " ".join(str(ds.action_space).split()),
            "env": env_name(ds), "algorithm": meta.get("algorithm_name"),
            "size_mb": float(size) if size is not None else None,
            "path": str(dataset_root() / dataset_id)}


def _as_space_obs(obs: Any, space: gym.Space) -> Any:
    """rlpipe's observation batch back into Minari's: a Tuple space's dict becomes a tuple."""
    if isinstance(space, gym.spaces.Tuple):
        return tuple(_as_space_obs(obs[str(i)], s) for i, s in enumerate(space.spaces))
    if isinstance(space, gym.spaces.Dict):
        return {k: _as_space_obs(obs[k], s) for k, s in space.spaces.items()}
    return np.asarray(obs)


def _env_spec(env: Union[str, gym.envs.registration.EnvSpec, None]) -> Optional[Any]:
    if env is None or isinstance(env, gym.envs.registration.EnvSpec):
        return env
    try:
        return gym.spec(env)
    except gym.error.Error:  # an rlpipe-registered name or a factory: no gymnasium spec
        return None


def write_dataset(dataset_id: str, episodes: Iterable[Mapping[str, Any]],
                  env_id_or_spec: Union[str, gym.envs.registration.EnvSpec, None], *,
                  algorithm_name: str, author: str = "rlpipe", author_email: str = "unknown",
                  description: Optional[str] = None, code_permalink: str = "rlpipe",
                  observation_space: Optional[gym.Space] = None,
                  action_space: Optional[gym.Space] = None,
                  overwrite: bool = False) -> Path:
    """Write `episodes` (the dicts `OfflineDataset.from_episodes` takes) as Minari data set
    `dataset_id` with `minari.create_dataset_from_buffers` (lossless: no JPEG for images); it
    loads with `minari.load_dataset` as it is. The spaces default to the env's. An existing
    id is refused unless `overwrite`. Returns the data set's folder."""
    minari = _minari()
    from minari.data_collector import EpisodeBuffer

    check_id(dataset_id)
    path = dataset_root() / dataset_id
    if path.exists():
        if not overwrite:
            raise OfflineDataError(f"data set {dataset_id!r} already exists at {path}; pass "
                                   f"--overwrite (overwrite=True) or choose another name or version")
        shutil.rmtree(path)
    spec = _env_spec(env_id_or_spec)
    if observation_space is None or action_space is None:
        if spec is None:
            raise OfflineDataError(f"write_dataset({dataset_id!r}): env {env_id_or_spec!r} has no "
                                   f"gymnasium spec; pass observation_space and action_space")
        probe = gym.make(spec)
        observation_space = observation_space or probe.observation_space
        action_space = action_space or probe.action_space
        probe.close()
    episodes = list(episodes)
    where = f"data set {dataset_id!r}"
    if not episodes:  # check everything before anything is written (as loading checks it)
        raise OfflineDataError(f"{where}: no episodes to write")
    if not isinstance(action_space, ACTION_SPACES):
        raise OfflineDataError(f"{where}: action space {action_space} is not supported; offline "
                               f"data sets take Box, Discrete, MultiDiscrete or MultiBinary actions")
    for k, episode in enumerate(episodes):
        check_episode(k, episode, where)
    buffers = [EpisodeBuffer(id=k, observations=_as_space_obs(as_obs_tree(e["observations"]),
                                                              observation_space),
                             actions=np.asarray(e["actions"]),
                             rewards=np.asarray(e["rewards"], np.float64),
                             terminations=np.asarray(e["terminations"], bool),
                             truncations=np.asarray(e["truncations"], bool))
               for k, e in enumerate(episodes)]
    with warnings.catch_warnings():  # Minari warns about every metadata field left out
        warnings.filterwarnings("ignore", message=r".*(is set to None|env_spec is None).*")
        minari.create_dataset_from_buffers(
            dataset_id, buffers, env=spec, algorithm_name=algorithm_name, author=author,
            author_email=author_email, code_permalink=code_permalink,
            description=description or f"{len(buffers)} episodes by {algorithm_name} (rlpipe)",
            observation_space=observation_space, action_space=action_space,
            jpeg_encoding=False)
    return path
