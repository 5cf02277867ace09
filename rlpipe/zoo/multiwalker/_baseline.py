"""The random baseline of the multiwalker entries: a team return measured as `rlpipe eval`
measures a run (the same env settings, eval seeds and episode spread), so the two compare."""
from __future__ import annotations

from typing import Any, Dict

import numpy as np

from rlpipe.middleware import evaluate_episodes
from rlpipe.pipelines.offpolicy import eval_env_kwargs
from rlpipe.pipelines.onpolicy import multi_agent_manager

__all__ = ["UniformActions", "random_team_return"]


class UniformActions:
    """An eval face that draws each walker's torques uniformly in the action box."""

    def __init__(self, env: Any, seed: int) -> None:
        self.space = env.action_space
        self.rng = np.random.default_rng(seed)

    def forward(self, obs: Any, **_: Any) -> Dict[str, np.ndarray]:
        shape = np.shape(obs)[:2] + self.space.shape  # [n_envs, n_agents, 4]
        action = self.rng.uniform(self.space.low, self.space.high, shape)
        return {"action": action.astype(self.space.dtype)}


def random_team_return(cfg: Any, episodes: int, seed: int = 12345) -> Dict[str, float]:
    """Mean and std of the team return of uniform random torques over `episodes` episodes of
    `cfg`'s env, on the envs `rlpipe eval --seed seed` would build for the same count."""
    # The manager `rlpipe eval` makes for a multi-agent run (rlpipe.tools.evaluate.run_env),
    # from the pipelines' pieces that run_env uses: the zoo may not import the tools above it.
    env = multi_agent_manager()(cfg.env.id, n_envs=min(episodes, cfg.env.eval_n_envs),
                                seed=seed, mode=cfg.env.mode, env_kwargs=eval_env_kwargs(cfg.env))
    try:
        records = evaluate_episodes(UniformActions(env, seed), env, episodes)
    finally:
        env.close()
    returns = np.array([r["return"] for r in records])
    return {"mean_return": float(returns.mean()), "std_return": float(returns.std()),
            "episodes": episodes}
