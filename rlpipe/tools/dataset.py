"""`rlpipe dataset collect | list | info`: make Minari data sets from a run's policy, a random
policy or a run's saved replay buffer, and show the local ones.

Data sets live under Minari's root (`MINARI_DATASETS_PATH`, default ~/.minari/datasets;
`--root` sets it for one command).
"""
from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from rlpipe.data import dataset_summary, local_datasets, write_dataset
from rlpipe.data._chains import chronological, episodes_from_rows
from rlpipe.data._minari_io import check_id
from rlpipe.data._serialize import load_state
from rlpipe.runs import BUFFER_FILE, RunDir

from ._dataset_collect import Noise, collect

__all__ = ["collect_dataset", "export_replay", "format_summary", "list_table", "newest_run"]


def format_summary(info: Dict[str, Any]) -> str:
    """The human summary of a data set (`rlpipe dataset info`)."""
    size = f"{info['size_mb']:.1f} MB" if info.get("size_mb") is not None else "?"
    return "\n".join([
        f"{info['id']}  ({info['path']}, {size})",
        f"  env          {info['env']}  (made by {info.get('algorithm')})",
        f"  episodes     {info['episodes']}",
        f"  transitions  {info['transitions']}",
        f"  return       mean {info['mean_return']:.2f}  min {info['min_return']:.2f}  "
        f"max {info['max_return']:.2f}",
        f"  observations {info['observation_space']}",
        f"  actions      {info['action_space']}"])


def list_table() -> str:
    """`rlpipe dataset list`: one line per local data set."""
    from rlpipe.data import dataset_root

    ids = local_datasets()
    if not ids:
        return (f"no data sets in {dataset_root()} (MINARI_DATASETS_PATH); make one with "
                f"`rlpipe dataset collect random --env ENV --episodes N --id NAMESPACE/NAME-v0`")
    width = max(len(i) for i in ids) + 2
    lines = [f"{'id'.ljust(width)}{'episodes':>9} {'transitions':>12} {'mean return':>12} "
             f"{'size MB':>8}  env"]
    for dataset_id in ids:
        info = dataset_summary(dataset_id)
        size = info["size_mb"] if info["size_mb"] is not None else math.nan
        lines.append(f"{dataset_id.ljust(width)}{info['episodes']:>9} {info['transitions']:>12} "
                     f"{info['mean_return']:>12.2f} {size:>8.1f}  {info['env']}")
    lines.append(f"(in {dataset_root()})")
    return "\n".join(lines)


def newest_run(algo: str, env_id: str, runs_root: str = "runs") -> str:
    """The newest run folder of `--algo ALGO --env ID` (runs/<env>-<algo>/<timestamp>/)."""
    from rlpipe.zoo.generic import run_name

    folder = Path(runs_root) / run_name(algo, env_id)
    runs = sorted(p for p in folder.glob("*") if RunDir(p).config.is_file()) \
        if folder.is_dir() else []
    if not runs:
        raise FileNotFoundError(f"no run of --algo {algo} --env {env_id} in {folder}: train one "
                                f"with `rlpipe train --algo {algo} --env {env_id}`, or pass a "
                                f"run folder")
    return str(runs[-1])


def _env_spec_of(env_id: str) -> Any:
    import gymnasium as gym

    try:
        return gym.spec(env_id)
    except gym.error.Error:
        return None


def collect_dataset(dataset_id: str, *, run_dir: Optional[str] = None,
                    env_id: Optional[str] = None, episodes: int, eps: float = 0.0,
                    noise: float = 0.0, seed: int = 0, n_envs: int = 4,
                    overwrite: bool = False, progress: bool = True) -> Dict[str, Any]:
    """Roll a run's policy (`run_dir`: its best.pt, else final.pt, as `rlpipe eval` loads it)
    or, without `run_dir`, a uniform random policy in `env_id`, into data set `dataset_id`;
    returns its summary."""
    from rlpipe.envs import EnvManager
    from .evaluate import load_run, run_env
    from rlpipe.zoo.generic import prepare_env

    check_id(dataset_id)
    if episodes <= 0:
        raise ValueError(f"--episodes must be positive, got {episodes}")
    _refuse_existing(dataset_id, overwrite)
    n_envs = max(1, min(n_envs, episodes))
    if run_dir is not None:
        entry, cfg, checkpoint, run = load_run(run_dir)
        env_id = cfg.env.id
        env = run_env(cfg, n_envs, seed)
        policy = entry.policy_cls(cfg.policy, env.observation_space, env.action_space)
        policy.load_state_dict(checkpoint["policy"])
        face, algorithm = policy.eval_mode, f"{entry.name} ({checkpoint['path']})"
    else:
        if not env_id:
            raise ValueError("`rlpipe dataset collect random` needs --env ID")
        prepare_env(env_id)
        env = EnvManager(env_id, n_envs=n_envs, seed=seed)
        face, algorithm = None, "random"
    try:
        rolled = collect(env, face, episodes, Noise(env.action_space, eps, noise, seed), progress)
        obs_space, act_space = env.observation_space, env.action_space
    finally:
        env.close()
    label = algorithm + (f", eps {eps}" if eps else "") + (f", noise {noise}" if noise else "")
    write_dataset(dataset_id, rolled, _env_spec_of(env_id), algorithm_name=label,
                  observation_space=obs_space, action_space=act_space, overwrite=overwrite,
                  description=f"{episodes} episodes of {label} in {env_id} (rlpipe dataset collect)")
    return dataset_summary(dataset_id)


def _refuse_existing(dataset_id: str, overwrite: bool) -> None:
    from rlpipe.data import dataset_root

    path = dataset_root() / dataset_id
    if path.exists() and not overwrite:
        raise ValueError(f"data set {dataset_id!r} already exists at {path}; pass --overwrite "
                         f"or choose another name or version")


def _replay_state(run_dir: str) -> Tuple[Dict[str, Any], str]:
    """(the replay buffer's state, the checkpoint it came with) of a run's newest end-of-
    iteration checkpoint whose files verify against their manifest."""
    from rlpipe.middleware import load_checkpoint
    from rlpipe.middleware.ckpt import load_verified

    # trust: nothing here is unpickled (weights_only .pt, buffer.npz without pickle); the
    # files are still checked against their manifest's hashes
    checkpoint = load_checkpoint(run_dir, which="resumable", trust=True)
    resume = checkpoint.get("resume") or {}
    if not resume.get("buffer"):
        raise ValueError(f"{checkpoint['path']} saved no replay buffer (replay.save_buffer was "
                         f"off, or the run is on-policy); train with --set replay.save_buffer=true")
    _, verified = load_verified(checkpoint["path"], trust=True)
    path = verified.checked_path(f"{resume['state_dir']}/{BUFFER_FILE}")
    return load_state(str(path)), str(checkpoint["path"])


def export_replay(run_dir: str, dataset_id: str, overwrite: bool = False) -> Dict[str, Any]:
    """`--from-replay RUN_DIR`: the run's saved replay buffer as data set `dataset_id`, its rows
    chained back into episodes (see rlpipe.data._chains); returns the summary with
    `fragments`, the chains cut short (ended as truncated)."""
    from .evaluate import _run_dir_of, run_env
    from rlpipe.zoo.registry import get_entry

    check_id(dataset_id)
    _refuse_existing(dataset_id, overwrite)
    run = RunDir(_run_dir_of(run_dir))
    name, plain = run.read_config()
    cfg = get_entry(name).resolve(plain)
    state, ckpt_path = _replay_state(str(run.root))
    episodes, fragments = episodes_from_rows(state["data"], chronological(state),
                                             f"replay buffer of {ckpt_path}")
    env = run_env(cfg, 1, 0)
    obs_space, act_space = env.observation_space, env.action_space
    env.close()
    write_dataset(dataset_id, episodes, _env_spec_of(cfg.env.id),
                  algorithm_name=f"{name} replay buffer ({ckpt_path})",
                  observation_space=obs_space, action_space=act_space, overwrite=overwrite,
                  description=f"the replay buffer of {run.root} ({fragments} fragments cut short, "
                              f"ended as truncated)")
    return {**dataset_summary(dataset_id), "fragments": fragments}


def set_root(root: Optional[str]) -> None:
    """`--root DIR`: this command's Minari root (MINARI_DATASETS_PATH)."""
    if root:
        os.environ["MINARI_DATASETS_PATH"] = str(Path(root).absolute())


def run_command(args: Any) -> List[str]:
    """The lines `rlpipe dataset ...` prints."""
    set_root(getattr(args, "root", None))
    if args.dataset_command == "list":
        return [list_table()]
    if args.dataset_command == "info":
        return [format_summary(dataset_summary(args.id))]
    source = args.source
    if args.from_replay:
        if source is not None or args.algo or args.env:
            raise ValueError("--from-replay RUN_DIR exports a run's buffer: drop the other "
                             "source (RUN_DIR, random, --algo/--env)")
        info = export_replay(args.from_replay, args.id, overwrite=args.overwrite)
        return [format_summary(info), f"  fragments    {info['fragments']} chains cut short "
                                      f"(ended as truncated)"]
    if source == "random":
        run_dir = None
    elif source is not None:
        run_dir = source
    elif args.algo and args.env:
        run_dir = newest_run(args.algo, args.env, args.runs_root)
    else:
        raise ValueError("name what to roll: a run folder, `random --env ID`, --algo ALGO "
                         "--env ID (its newest run), or --from-replay RUN_DIR")
    if run_dir is not None and args.env and source is not None:
        raise ValueError(f"--env goes with `random` or --algo; the run {run_dir} has its own env")
    info = collect_dataset(args.id, run_dir=run_dir, env_id=args.env, episodes=args.episodes,
                           eps=args.eps, noise=args.noise, seed=args.seed, n_envs=args.n_envs,
                           overwrite=args.overwrite, progress=not args.no_progress)
    return [format_summary(info)]
