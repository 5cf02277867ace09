"""`rlpipe eval`: load a run's checkpoint and measure its return."""
from __future__ import annotations

import logging
import pathlib
from typing import Any, Dict, Tuple

import numpy as np

from rlpipe.envs import EnvManager
from rlpipe.middleware import evaluate_episodes, load_checkpoint
from rlpipe.runs import BEST_CHECKPOINT, FINAL_CHECKPOINT, CheckpointError, RunDir

from rlpipe.pipelines.offpolicy import eval_env_kwargs, mask_settings
from rlpipe.pipelines.base import make_policy
from rlpipe.zoo.registry import get_entry

log = logging.getLogger(__name__)


def _run_dir_of(target: str) -> pathlib.Path:
    path = pathlib.Path(target)
    if not path.exists():
        raise FileNotFoundError(f"{target!r} does not exist: pass a run folder "
                                f"(runs/<entry>/<timestamp>/) or a checkpoint file in it")
    if path.is_file():  # <run>/ckpt/<file>.pt
        run = RunDir.of_checkpoint(path)
        if not run.config.is_file():
            raise FileNotFoundError(
                f"{target}: a checkpoint outside its run folder (no {run.config} above it), so "
                f"its zoo entry and config are unknown; pass the run folder it came from, or "
                f"copy the whole run folder (config.json and ckpt/)")
        return run.root
    return path


def _load(target: str, run: RunDir) -> Dict[str, Any]:
    """The checkpoint to evaluate: the given .pt; for a run folder its best.pt, else (or when
    best.pt is refused) final.pt, else the newest checkpoint that verifies — saying which."""
    if pathlib.Path(target).is_file():
        return load_checkpoint(target)
    refused = []
    for name in (BEST_CHECKPOINT, FINAL_CHECKPOINT):
        if run.checkpoint(name).is_file():
            try:
                checkpoint = load_checkpoint(run.checkpoint(name))
            except (CheckpointError, RuntimeError) as err:
                refused.append(str(err).splitlines()[0])
                continue
            break
    else:
        checkpoint = load_checkpoint(run.root, which="latest")
    for reason in refused:
        log.warning("eval: %s; evaluating %s instead", reason, checkpoint["path"])
    return checkpoint


def load_run(target: str) -> Tuple[Any, Any, Dict[str, Any], RunDir]:
    """(zoo entry, resolved config, checkpoint, run folder) of a run folder or checkpoint, the
    checkpoint chosen as `rlpipe eval` chooses it (best.pt, else final.pt, else the newest that
    verifies; or the given .pt file)."""
    run = RunDir(_run_dir_of(target))
    name, plain_cfg = run.read_config()
    try:
        entry = get_entry(name)
        cfg = entry.resolve(plain_cfg)
    except (KeyError, ValueError, TypeError) as err:
        message = err.args[0] if isinstance(err, KeyError) and err.args else err
        raise ValueError(f"{run.config}: {message}") from err
    return entry, cfg, _load(target, run), run


def run_env(cfg: Any, n_envs: int, seed: int, policy_cls: Any = None) -> Any:
    """An env manager for a run's env, as its config makes it (kwargs, mode, action masks);
    for a multi-agent `policy_cls`, the manager its pipeline trains on."""
    if getattr(policy_cls, "multi_agent", False):
        from rlpipe.pipelines.onpolicy import multi_agent_manager

        return multi_agent_manager()(cfg.env.id, n_envs=n_envs, seed=seed, mode=cfg.env.mode,
                                      env_kwargs=eval_env_kwargs(cfg.env))
    return EnvManager(cfg.env.id, n_envs=n_envs, seed=seed, mode=cfg.env.mode,
                      env_kwargs=eval_env_kwargs(cfg.env), **mask_settings(cfg.env))


def evaluate_run(target: str, episodes: int = 10, seed: int = 12345) -> Dict[str, Any]:
    """Mean and std of the return of `episodes` evaluation episodes with a run's `best.pt` (the
    weights of its best evaluation; if it is missing or refused, final.pt, else its newest
    checkpoint that verifies), or with the given .pt file. `train_iter` and `env_step` are the
    checkpoint's: the updates and env steps its weights were trained with. (log.txt's line of
    the evaluation that wrote best.pt names the same train_iter; its env step is that of the
    iteration's metrics row, which also counts the collection after the evaluation.)"""
    entry, cfg, checkpoint, run = load_run(target)
    env = run_env(cfg, min(episodes, cfg.env.eval_n_envs), seed, entry.policy_cls)
    try:
        policy = make_policy(cfg, entry.policy_cls, env)
        policy.load_state_dict(checkpoint["policy"])
        returns = np.array([r["return"] for r in evaluate_episodes(policy.eval_mode, env, episodes)])
    finally:
        env.close()
    return {"entry": entry.name, "run_dir": str(run.root), "episodes": episodes,
            "mean_return": float(returns.mean()), "std_return": float(returns.std()),
            "checkpoint": str(checkpoint.get("path")),
            "train_iter": checkpoint.get("meta", {}).get("train_iter"),
            "env_step": checkpoint.get("meta", {}).get("env_step")}
