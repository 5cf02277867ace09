"""The one acting path: choose actions for the envs' current observations, step the envs,
record the step, count env steps and episodes.

Every env loop of rlpipe runs on `Acting`: `inferencer`, `rolloutor`, `StepCollector` and
`EpisodeCollector` (collector.py; the two middleware each wrap one, each collector runs its own
loop over one), and, outside training, `evaluate_episodes`, `rlpipe dataset collect` and the
check of `rlpipe export`, which act through `Acting.play_step` (and spread their episodes with
`EpisodeQuota`). A new kind of acting (hidden state per env, an agent axis) is added here once
and all of them have it.

- `EnvCursor` — the observation each env of a manager acts from next. The pipeline owns it: a
  collector makes its own (or takes one), `inferencer`/`rolloutor` share one per env and task.
  It is the collector's part of an exact resume (`get_state`/`set_state`).
- `Acting.act` — warm-up actions sampled from the action space for the run's first
  `random_collect_size` env steps, the policy's collect face afterwards.
- `Acting.step` — one vector step: the record of it (with the true final observation of an
  episode in `next_obs`; `obs` of the result is where the env acts from next), env-step count
  (valid rows only), episode ends (`episode_info`, `trajectory_end_idx`, "episode_end" events).
  `Acting.transition` is its part without the counting: step, record, move the cursor.
- `Acting.play_step` — act and `transition` once outside a training loop (no warm-up, no
  counting, no events).
- `Acting.refresh` — the policy copies its learner's weights into its acting copy, so a learner
  running beside collection in async mode never changes weights under the actor: once per
  iteration before acting (`inferencer`, `EpisodeCollector`), or, for `StepCollector`, before its
  first collection and after each iteration (post-`yield`: every middleware of the iteration
  has finished its forward part then, so the copy never races a learner running beside the
  collector in async mode, and the next collection acts with the weights the iteration ended
  with, which is what a resume from that iteration's checkpoint restores).

Action masks (an env manager's `action_mask`, see rlpipe.envs) are added here: the cursor holds
the mask of the observations it holds, `act` hands it to the collect face as `action_mask=` (and
draws warm-up actions among the valid ones), and the step record carries `action_mask` and
`next_action_mask` (the mask of `next_obs`, for DQN's target).

Hidden state per env lives in the cursor: `make_acting` (`_make_acting`) gives a
recurrent policy (see `_hidden`) a `RecurrentActing`, which hands the collect face `state=` and `first=`, keeps the
state it returns per env (zeroed where an episode starts: after a reset, an episode end or an
env restart) and adds `first` and `state` (the state the step started from) to every record.
A feed-forward policy gets the plain `Acting`: it pays nothing for this. The agent axis
is `MultiAgentActing` (`_acting_agents`), chosen by `make_acting` for a multi-agent env manager:
the four acting middleware have it at once.
"""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Tuple

import numpy as np

from rlpipe.engine import current_task
from rlpipe.envs import mask_segments, sample_valid_actions

from .exploration import kwargs_at
from ._hidden import copy_state, initial_state, next_state, policy_name, starts, zero_rows

_MASK_FIX = ("ignore the masks (EnvManager(action_masks=False); in the zoo `--set "
             "env.action_masks=False`) or use a policy that takes them (DQN, PPO)")


def supports_masks(face: Any) -> bool:
    """Whether a policy face (or the policy behind it) takes `action_mask=`."""
    owner = getattr(face, "policy", face)
    return bool(getattr(owner, "supports_action_mask", getattr(face, "supports_action_mask",
                                                                False)))


def check_mask_support(face: Any, mask: Any) -> None:
    """Refuse a mask for a policy that would ignore it, naming the policy and the fix."""
    if mask is not None and not supports_masks(face):
        owner = getattr(face, "policy", face)
        raise ValueError(f"the env gives action masks but {type(owner).__name__} does not take "
                         f"them (it would pick invalid actions); {_MASK_FIX}")


class EnvCursor:
    """The observations the envs of one manager act from next; reset lazily, once.

    `seed` seeds that first reset (None: the manager's own seeding). `obs` is None until then.
    For a recurrent policy it also holds, per env, the hidden `state` to act from next and
    `first` (bool [n]: True where `obs` begins an episode); both stay None for feed-forward ones.
    For a multi-agent env manager, `agents` is `(agent_mask [n, A], global_state [n, S] or
    None)` of `obs` (None for single-agent ones).
    """

    __slots__ = ("env", "obs", "seed", "mask", "state", "first", "agents")

    def __init__(self, env: Any, seed: Optional[int] = None) -> None:
        self.env = env
        self.obs: Any = None
        self.seed = seed
        self.mask: Optional[np.ndarray] = None  # the valid actions in `obs` (None: no masks)
        self.state: Optional[Dict[str, Any]] = None  # rows where `first` is True are zeros
        self.first: Optional[np.ndarray] = None
        self.agents: Optional[Tuple[np.ndarray, Optional[np.ndarray]]] = None

    def current(self) -> Any:
        """The observations to act from now (resetting the envs on first use)."""
        if self.obs is None:
            self.obs = self.env.reset() if self.seed is None else self.env.reset(seed=self.seed)
            self.mask = getattr(self.env, "action_mask", None)
            agent_mask = getattr(self.env, "agent_mask", None)
            if agent_mask is not None:
                self.agents = (agent_mask, self.env.global_state)
            if self.state is not None:  # every env begins an episode
                self.first = np.ones(int(self.env.n_envs), dtype=np.bool_)
                self.state = zero_rows(self.state, self.first)
        return self.obs

    def get_state(self) -> Dict[str, Any]:
        """What an exact resume needs beside the env state: the observations acted from next
        (and, for a recurrent policy, the hidden state and `first` of each env)."""
        first = None if self.first is None else self.first.copy()
        return {"obs": self.obs, "mask": self.mask, "state": copy_state(self.state),
                "first": first, "agents": self.agents}

    def set_state(self, state: Mapping[str, Any]) -> None:
        """Restore `get_state()`'s dict (`{"obs": None}`: reset on next use)."""
        if "obs" not in state:
            raise KeyError(f"EnvCursor.set_state() takes get_state()'s dict {{'obs': ...}}; got "
                           f"keys {sorted(state)} (a state saved by another rlpipe version?)")
        hidden = state.get("state")  # absent in states of feed-forward runs
        if state["obs"] is not None and self.state is not None and hidden is None:
            raise ValueError("EnvCursor.set_state(): this cursor holds a recurrent policy's state "
                             "but the saved state has none (saved by a feed-forward run?); resume "
                             "with the policy the run was saved with")
        self.obs = state["obs"]
        self.mask = state.get("mask")  # absent in states of runs without masks
        self.agents = state.get("agents")  # absent in single-agent states
        if state["obs"] is None:
            self.first = None  # the next use resets the envs and zeroes the state
        elif hidden is not None:
            self.state, self.first = copy_state(hidden), np.array(state["first"], dtype=np.bool_)

    def __repr__(self) -> str:
        where = "not reset yet" if self.obs is None else "reset"
        memory = "" if self.state is None else ", with hidden state"
        return f"EnvCursor({type(self.env).__name__}, {where}{memory})"


def shared_cursor(env: Any) -> EnvCursor:
    """The cursor of `env` shared by the middleware of the current task (made on first use,
    dropped when the task stops): how `inferencer` and `rolloutor` built apart, as DI-engine
    scripts build them, act and step from the same observations."""
    return current_task().shared(("rlpipe.env_cursor", id(env)), lambda: EnvCursor(env))


def check_cursor(cursor: Optional[EnvCursor], env: Any) -> None:
    """Refuse a cursor made for another env manager than `env`."""
    if cursor is not None and cursor.env is not env:
        raise ValueError(f"the cursor {cursor!r} belongs to another env manager than {env!r}; "
                         f"make one per manager: EnvCursor(env)")


class Acting:
    """One policy acting in one env manager through one cursor (see the module docstring)."""

    def __init__(self, policy: Any, env: Any, cursor: Optional[EnvCursor] = None,
                 random_collect_size: int = 0) -> None:
        check_cursor(cursor, env)
        self.policy = policy
        self.env = env
        self.cursor = cursor if cursor is not None else EnvCursor(env)
        self.n_envs = int(env.n_envs)
        self.random_collect_size = int(random_collect_size)
        self.refreshed = False
        self._refreshed_in: Optional[int] = None

    def refresh(self) -> None:
        """Copy the learner's weights into the policy's acting copy (none: nothing to do)."""
        refresh = getattr(self.policy, "refresh", None)
        if refresh is not None:
            refresh()
        self.refreshed = True

    def refresh_once_in(self, iteration: int) -> None:
        """`refresh()` unless it was already done in this iteration (`ctx.total_step`): before
        the first action of each iteration, however often the iteration acts."""
        if self._refreshed_in != iteration:
            self._refreshed_in = iteration
            self.refresh()

    def act(self, env_step: int, collect_kwargs: Mapping[str, Any]) -> Tuple[Any, Dict[str, Any]]:
        """(obs, what the policy returned for it, with "action"); random actions during warm-up
        (`env_step` below `random_collect_size`). `collect_kwargs` values that are `PerEnvStep`
        (e.g. ε with `other.eps.per_env_step`) are evaluated at `env_step`."""
        obs = self.cursor.current()
        mask = self.cursor.mask
        if env_step < self.random_collect_size:
            return obs, {"action": self.random_actions(mask)}
        collect_kwargs = kwargs_at(collect_kwargs, env_step)
        if mask is None:
            return obs, self.policy.forward(obs, **collect_kwargs)
        check_mask_support(self.policy, mask)
        return obs, self.policy.forward(obs, **collect_kwargs, action_mask=mask)

    def random_actions(self, mask: Optional[np.ndarray]) -> np.ndarray:
        """One warm-up action per env, uniform over the action space (over the valid actions
        of each component where the env gives masks)."""
        space = self.env.action_space
        if mask is not None:
            drawn = sample_valid_actions(space.np_random, mask, mask_segments(space))
            return (drawn + space.start).astype(space.dtype, copy=False)
        return np.stack([space.sample() for _ in range(self.n_envs)])

    def step(self, ctx: Any, obs: Any, action: Any, output: Mapping[str, Any],
             steps: List[Dict[str, Any]]) -> int:
        """Step the envs with `action`, append the step's record to `steps`, move the cursor and
        count on `ctx`; returns the number of valid rows (env steps taken)."""
        record, result = self.transition(obs, action, output)
        steps.append(record)
        valid = int(np.count_nonzero(result.valid))
        ctx.env_step += valid
        if result.episodes:
            _count_episodes(ctx, result.episodes, len(steps))
        return valid

    def transition(self, obs: Any, action: Any, output: Mapping[str, Any]
                   ) -> Tuple[Dict[str, Any], Any]:
        """Step the envs with `action` and move the cursor to where they act from next; returns
        (the step's record, the env manager's step result). Nothing is counted."""
        mask = self.cursor.mask
        result = self.env.step(action)
        record = step_record(obs, action, output, result)
        if mask is not None:
            record["action_mask"] = mask
            record["next_action_mask"] = result.next_action_mask
        self.cursor.obs = result.obs
        self.cursor.mask = getattr(result, "action_mask", None)
        return record, result

    def play_step(self) -> Tuple[Dict[str, Any], Any]:
        """One vector step outside a training loop (evaluation, data set collection, the export
        check): the policy acts (no warm-up, no collect kwargs), the envs step; returns
        `transition`'s (record, step result). Nothing is counted and no event is emitted, so
        it needs no task and leaves a run's counters alone."""
        obs, output = self.act(self.random_collect_size, {})
        return self.transition(obs, output["action"], output)


class RecurrentActing(Acting):
    """`Acting` for a recurrent policy: the cursor holds one hidden state per env.

    `act` calls the collect face `forward(obs, state=, first=)`; also during warm-up, where the
    random action replaces the policy's but its state is kept, so the state stays the policy's
    summary of the episode so far (what a learner recomputes from the stored sequences), not a
    zero in the middle of an episode. `step` records `first` and `state` (the state the step
    started from), then moves the cursor to the returned state, zeroed where the next
    observation begins an episode (`_hidden.starts`).
    """

    def __init__(self, policy: Any, env: Any, cursor: Optional[EnvCursor] = None,
                 random_collect_size: int = 0) -> None:
        super().__init__(policy, env, cursor, random_collect_size)
        cursor = self.cursor
        if cursor.state is None:
            if cursor.obs is not None:
                raise ValueError(f"{cursor!r} was already acted from by a feed-forward policy, so "
                                 f"where its episodes began is unknown; give the recurrent "
                                 f"{policy_name(policy)} its own cursor: EnvCursor(env)")
            cursor.state = initial_state(policy, self.n_envs)
        self._checked = False  # the layout of the policy's returned state (on the first step)

    def act(self, env_step: int, collect_kwargs: Mapping[str, Any]) -> Tuple[Any, Dict[str, Any]]:
        cursor = self.cursor
        obs = cursor.current()
        mask = cursor.mask
        kwargs = dict(kwargs_at(collect_kwargs, env_step))
        if mask is not None:
            check_mask_support(self.policy, mask)
            kwargs["action_mask"] = mask
        output = self.policy.forward(obs, state=cursor.state, first=cursor.first, **kwargs)
        if env_step < self.random_collect_size:
            output = {"action": self.random_actions(mask), "state": output.get("state")}
        return obs, output

    def transition(self, obs: Any, action: Any, output: Mapping[str, Any]
                   ) -> Tuple[Dict[str, Any], Any]:
        cursor = self.cursor
        state, first = cursor.state, cursor.first
        after = next_state(self.policy, output, self.n_envs, check=not self._checked)
        self._checked = True
        record, result = super().transition(obs, action, output)
        record["first"] = first
        record["state"] = state
        cursor.first = starts(record["terminated"], record["truncated"], record["valid"])
        cursor.state = zero_rows(after, cursor.first)
        return record, result


class EpisodeQuota:
    """How many whole episodes each env of a manager still owes: `n_episodes` spread evenly
    over `n_envs` envs (the first `n_episodes % n_envs` envs one more), so that short
    episodes, which end more often, are not over-represented."""

    def __init__(self, n_envs: int, n_episodes: int) -> None:
        self.quota = np.full(int(n_envs), int(n_episodes) // int(n_envs))
        self.quota[: int(n_episodes) % int(n_envs)] += 1
        self.done = np.zeros(int(n_envs), dtype=int)

    def open(self) -> bool:
        """Whether some env still owes an episode."""
        return bool((self.done < self.quota).any())

    def take(self, env_id: int) -> bool:
        """Count an episode env `env_id` finished; False (not counted) past its quota."""
        if self.done[env_id] >= self.quota[env_id]:
            return False
        self.done[env_id] += 1
        return True


def step_record(obs: Any, action: Any, output: Mapping[str, Any], result: Any) -> Dict[str, Any]:
    """One step over all envs: obs, action, reward, next_obs, terminated, truncated, valid, and
    what the policy returned beside the action."""
    record = {
        "obs": obs,
        "action": action,
        "reward": result.reward,
        "next_obs": result.next_obs,
        "terminated": result.terminated,
        "truncated": result.truncated,
        "valid": result.valid,
    }
    for key, value in output.items():
        if key != "action":
            record[key] = value
    return record


def _count_episodes(ctx: Any, episodes: List[Any], n_steps_done: int) -> None:
    ctx.episode_info = (ctx.episode_info or []) + list(episodes)
    ctx.trajectory_end_idx = (ctx.trajectory_end_idx or []) + [n_steps_done] * len(episodes)
    ctx.env_episode += len(episodes)
    task = current_task()
    for episode in episodes:
        task.emit("episode_end", episode)
