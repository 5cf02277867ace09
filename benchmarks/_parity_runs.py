"""One training run of a parity task, in rlpipe or in SB3, with the same evaluation protocol.

Both sides: the same seed (network init, exploration, env seeds), one torch thread, and a greedy
evaluation at the same nominal env steps (`ParityTask.points()`), taken between two updates —
in rlpipe after the iteration that crossed the point, in SB3 at the next rollout start (after
its `train()`), and once more when training ends. Each evaluation plays `eval_episodes` episodes
in a fresh single gymnasium env reset with seeds `eval_seeds(seed, n)`, identical on both sides.
Wall time is the training loop only: `task.run()` / `model.learn()` minus the evaluations; CPU
time (`cpu_time`, this process's, so envs stepped in other processes are not in it) the same.
"""
from __future__ import annotations

import time
from typing import Any, Callable, Dict, List

import gymnasium as gym
import numpy as np
import torch

from _parity_tasks import ParityTask

FRAMEWORKS = ("rlpipe", "sb3")


def eval_seeds(seed: int, n: int) -> List[int]:
    """The env seeds of the `n` evaluation episodes of run `seed` (never a training seed)."""
    return [1_000_000 + 1000 * seed + k for k in range(n)]


class ScaledGrid(gym.ObservationWrapper):
    """A MiniGrid Dict observation whose grid of ids is scaled to [0, 1] by each id's largest
    value, as float32: the numbers rlpipe's encoder makes of the uint8 grid, handed to SB3
    (which reads a Box that is not a 0-255 image as it is)."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        grid = env.observation_space["image"]
        self._inv_high = (1.0 / np.maximum(grid.high, 1)).astype(np.float32)
        self.observation_space = gym.spaces.Dict(
            {**env.observation_space.spaces,
             "image": gym.spaces.Box(0.0, 1.0, grid.shape, np.float32)})

    def observation(self, obs: Dict[str, Any]) -> Dict[str, Any]:
        return {**obs, "image": obs["image"] * self._inv_high}


def make_env(env_id: str, framework: str = "rlpipe") -> gym.Env:
    """One env of `env_id` as `framework` trains on it: a MiniGrid id as rlpipe builds it (the
    mission text left out, the grid's true bounds), for SB3 with the grid scaled as rlpipe's
    encoder scales it (`ScaledGrid`), so both networks read the same numbers; any other id
    from gymnasium."""
    if env_id.startswith(("MiniGrid-", "BabyAI-")):
        from rlpipe.envs._minigrid import make_minigrid

        env = make_minigrid(env_id)
        return ScaledGrid(env) if framework == "sb3" else env
    return gym.make(env_id)


def batch_of_one(obs: Any) -> Any:
    """`obs` as a batch of one row (each part of a Dict observation)."""
    if isinstance(obs, dict):
        return {k: np.asarray(v)[None] for k, v in obs.items()}
    return obs[None]


class GreedyEvaluator:
    """Plays whole episodes with a greedy `act(obs) -> action` and records the curve."""

    def __init__(self, task: ParityTask, seed: int, framework: str) -> None:
        self.env = make_env(task.env_id, framework)
        self.seeds = eval_seeds(seed, task.eval_episodes)
        self.points = task.points()
        self.curve: List[List[float]] = []  # [nominal step, actual env step, mean return]
        self.seconds = 0.0
        self.cpu_seconds = 0.0  # this process's CPU time in the evaluations

    def due(self, env_step: int) -> bool:
        """Whether the next evaluation point has been reached."""
        return len(self.curve) < len(self.points) and env_step >= self.points[len(self.curve)]

    def __call__(self, act: Callable[[np.ndarray], Any], env_step: int) -> None:
        """Evaluate once and record it for every point that `env_step` has crossed."""
        start, cpu_start = time.perf_counter(), time.process_time()
        returns = []
        for s in self.seeds:
            obs, _ = self.env.reset(seed=s)
            total, done = 0.0, False
            while not done:
                obs, reward, terminated, truncated, _ = self.env.step(act(obs))
                total += float(reward)
                done = terminated or truncated
            returns.append(total)
        value = float(np.mean(returns))
        while self.due(env_step):
            self.curve.append([self.points[len(self.curve)], env_step, value])
        self.seconds += time.perf_counter() - start
        self.cpu_seconds += time.process_time() - cpu_start

    def close(self) -> None:
        self.env.close()


def run_one(framework: str, task: ParityTask, seed: int) -> Dict[str, Any]:
    """Train `task` with `framework` ("rlpipe" or "sb3") for `seed`; return the run's record."""
    if framework not in FRAMEWORKS:
        raise ValueError(f"framework {framework!r} is unknown; use one of {FRAMEWORKS}")
    torch.set_num_threads(1)
    evaluator = GreedyEvaluator(task, seed, framework)
    try:
        runner = _run_rlpipe if framework == "rlpipe" else _run_sb3
        loop_seconds, loop_cpu, env_steps = runner(task, seed, evaluator)
    finally:
        evaluator.close()
    if len(evaluator.curve) != len(task.points()):
        raise RuntimeError(f"{framework} {task.name} seed {seed}: {len(evaluator.curve)} of "
                           f"{len(task.points())} evaluations were taken (stopped at env step "
                           f"{env_steps}); the run ended before its budget {task.budget}")
    return dict(task=task.name, framework=framework, seed=seed, curve=evaluator.curve,
                final=evaluator.curve[-1][2], env_steps=env_steps,
                wall_time=loop_seconds - evaluator.seconds, eval_time=evaluator.seconds,
                cpu_time=loop_cpu - evaluator.cpu_seconds)


# --- rlpipe ---------------------------------------------------------------------------------------
def _run_rlpipe(task: ParityTask, seed: int, evaluator: GreedyEvaluator) -> tuple:
    from rlpipe.engine import task as rl_task
    from rlpipe.policies import get_policy
    from rlpipe.pipelines import offpolicy as _offpolicy, onpolicy as _onpolicy, seed_everything

    base = get_policy(task.algo)
    made: List[Any] = []

    class Recorded(base):  # type: ignore[misc,valid-type]
        """The task's policy class; remembers the instance the pipeline builds."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            made.append(self)

    pipe = _onpolicy if task.algo == "ppo" else _offpolicy
    if task.defaults:  # what `rlpipe train --algo ALGO --env ENV` trains
        from rlpipe.zoo import get_entry

        cfg = get_entry(f"{task.algo}@{task.env_id}").resolve(dict(task.rlpipe, seed=seed))
    else:
        cfg = pipe.resolve_config(base, dict(task.rlpipe, seed=seed))
    seed_everything(seed)  # run_one has set one torch thread
    build = pipe.build_onpolicy if task.algo == "ppo" else pipe.build_offpolicy
    pipeline = build(cfg, Recorded)
    eval_face = made[0].eval_mode

    def act(obs: np.ndarray) -> Any:
        return eval_face.forward(batch_of_one(obs))["action"][0]

    def parity_eval(ctx: Any) -> None:
        if evaluator.due(ctx.env_step):
            evaluator(act, ctx.env_step)

    try:
        with rl_task.start(async_mode=False, ctx=pipeline.ctx):
            pipeline.install(rl_task)
            rl_task.use(parity_eval)
            start, cpu_start = time.perf_counter(), time.process_time()
            rl_task.run()
            seconds, cpu = time.perf_counter() - start, time.process_time() - cpu_start
            env_steps = rl_task.ctx.env_step
    finally:
        pipeline.close()
    return seconds, cpu, env_steps


# --- SB3 ------------------------------------------------------------------------------------------
def _sb3_kwargs(task: ParityTask, action_dim: int) -> Dict[str, Any]:
    """SB3 constructor arguments: "lin_X" becomes a linear schedule from X to 0, and
    ("normal", std) a NormalActionNoise (in SB3's [-1, 1] action units, as rlpipe's)."""
    from stable_baselines3.common.noise import NormalActionNoise

    kwargs = dict(task.sb3)
    for key, value in kwargs.items():
        if isinstance(value, str) and value.startswith("lin_"):
            start = float(value[4:])
            kwargs[key] = lambda progress_remaining, s=start: s * progress_remaining
    noise = kwargs.pop("action_noise", None)
    if noise is not None:
        kind, std = noise
        if kind != "normal":
            raise ValueError(f"{task.name}: action noise {kind!r} is not supported; use 'normal'")
        kwargs["action_noise"] = NormalActionNoise(np.zeros(action_dim), std * np.ones(action_dim))
    return kwargs


def _run_sb3(task: ParityTask, seed: int, evaluator: GreedyEvaluator) -> tuple:
    import stable_baselines3 as sb3
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env

    algo = {"dqn": sb3.DQN, "ppo": sb3.PPO, "sac": sb3.SAC, "td3": sb3.TD3}[task.algo]
    env = make_vec_env(lambda: make_env(task.env_id, "sb3"), n_envs=task.n_envs, seed=seed)
    action_dim = int(np.prod(env.action_space.shape or (1,)))
    policy = ("MultiInputPolicy" if isinstance(env.observation_space, gym.spaces.Dict)
              else "MlpPolicy")
    model = algo(policy, env, seed=seed, device="cpu", verbose=0, **_sb3_kwargs(task, action_dim))

    def act(obs: np.ndarray) -> Any:
        return model.predict(obs, deterministic=True)[0]

    class EvalCallback(BaseCallback):
        """Evaluates between two `train()` calls, as rlpipe's probe does between iterations."""

        def _on_rollout_start(self) -> None:
            if evaluator.due(self.model.num_timesteps):
                evaluator(act, self.model.num_timesteps)

        def _on_step(self) -> bool:
            return True

    try:
        start, cpu_start = time.perf_counter(), time.process_time()
        model.learn(total_timesteps=task.budget, callback=EvalCallback())
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu_start
        if evaluator.due(model.num_timesteps):  # the final point, after the last train()
            evaluator(act, model.num_timesteps)
    finally:
        env.close()
    return seconds, cpu, model.num_timesteps
