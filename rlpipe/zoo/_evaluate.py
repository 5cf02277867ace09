"""`rlpipe eval`: load a run's checkpoint and measure its return."""
from __future__ import annotations

import pathlib
from typing import Any, Dict

import numpy as np

from rlpipe.envs import EnvManager
from rlpipe.middleware import evaluate_episodes, load_checkpoint

from ._registry import get_entry
from ._run import read_config


def _run_dir_of(target: str) -> pathlib.Path:
    path = pathlib.Path(target)
    if not path.exists():
        raise FileNotFoundError(f"{target!r} does not exist: pass a run folder "
                                f"(runs/<entry>/<timestamp>/) or a checkpoint file in it")
    if path.is_file():  # <run>/ckpt/<file>.pt
        return path.parent.parent
    return path


def evaluate_run(target: str, episodes: int = 10, seed: int = 12345) -> Dict[str, Any]:
    """Mean and std of the return of `episodes` evaluation episodes with a run's `best.pt` (the
    weights of its best evaluation; else its newest checkpoint), or with the given .pt file."""
    run_dir = _run_dir_of(target)
    name, plain_cfg = read_config(str(run_dir))
    entry = get_entry(name)
    cfg = entry.resolve(plain_cfg)
    best = run_dir / "ckpt" / "best.pt"
    which = "best" if pathlib.Path(target).is_dir() and best.is_file() else "latest"
    checkpoint = load_checkpoint(target, which=which)
    env = EnvManager(cfg.env.id, n_envs=min(episodes, cfg.env.eval_n_envs), seed=seed,
                     mode=cfg.env.mode, env_kwargs=dict(cfg.env.env_kwargs) or None)
    try:
        policy = entry.policy_cls(cfg.policy, env.observation_space, env.action_space)
        policy.load_state_dict(checkpoint["policy"])
        returns = np.array([r["return"] for r in evaluate_episodes(policy.eval_mode, env, episodes)])
    finally:
        env.close()
    return {"entry": name, "run_dir": str(run_dir), "episodes": episodes,
            "mean_return": float(returns.mean()), "std_return": float(returns.std()),
            "checkpoint": str(checkpoint.get("path")),
            "env_step": checkpoint.get("meta", {}).get("env_step")}
