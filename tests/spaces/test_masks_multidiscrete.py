"""MultiDiscrete action masks (sb3-contrib's MaskablePPO layout): a flat mask of sum(nvec) values,
one segment per component, or a tuple of per-component masks; masked log-probabilities and
entropy by hand, random masked acting, PPO training, and the all-false segment error."""
import math

import gymnasium as gym
import numpy as np
import pytest
import torch
from easydict import EasyDict

from rlpipe.contexts import OnlineRLContext
from rlpipe.engine import Task
from rlpipe.envs import EnvManager
from rlpipe.middleware import StepCollector, gae_estimator, multistep_trainer
from rlpipe.models.distributions import MultiCategorical
from rlpipe.policies import PPOPolicy
from rlpipe.policies._masks import as_mask, masked_categorical

NVEC = (3, 4)


class PickEnv(gym.Env):
    """Two components: a row (3 values) and a column (4 values). The valid values move with the
    step count; an invalid component value ends the episode with reward −1, a valid action gives
    +0.1. `tuple_mask`: the info mask is a tuple of per-component masks instead of a flat one."""

    def __init__(self, tuple_mask=False, empty_at=None):
        self.observation_space = gym.spaces.Box(0, 1, (7,), np.float32)
        self.action_space = gym.spaces.MultiDiscrete(NVEC)
        self.tuple_mask, self.empty_at = tuple_mask, empty_at
        self._t = 0

    def _masks(self):
        rows = np.array([(self._t + i) % 3 != 0 for i in range(3)])
        cols = np.array([(self._t + j) % 2 == 0 for j in range(4)])
        if self.empty_at is not None and self._t == self.empty_at:
            cols[:] = False
        return rows, cols

    def _out(self):
        rows, cols = self._masks()
        obs = np.concatenate([rows, cols]).astype(np.float32)
        mask = (rows, cols) if self.tuple_mask else np.concatenate([rows, cols])
        return obs, {"action_mask": mask}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._t = 0
        return self._out()

    def step(self, action):
        rows, cols = self._masks()
        valid = bool(rows[action[0]] and cols[action[1]])
        self._t += 1
        obs, info = self._out()
        return obs, (0.1 if valid else -1.0), not valid, self._t >= 20, info


def hand(logits, mask, value):
    """log p(value) and entropy of a softmax over the valid logits only."""
    valid = [l for l, m in zip(logits, mask) if m]
    log_z = math.log(sum(math.exp(l) for l in valid))
    probs = [math.exp(l - log_z) for l in valid]
    return logits[value] - log_z, -sum(p * math.log(p) for p in probs)


def test_masked_multicategorical_log_prob_and_entropy_by_hand():
    row, col = [0.5, -1.0, 2.0], [1.0, 0.0, 3.0, -2.0]
    row_mask, col_mask = [True, True, False], [False, True, True, True]
    dist = MultiCategorical(torch.tensor([row + col]), list(NVEC))
    masked = masked_categorical(dist, torch.tensor([row_mask + col_mask]))
    (lp_r, h_r), (lp_c, h_c) = hand(row, row_mask, 1), hand(col, col_mask, 2)
    assert masked.log_prob(torch.tensor([[1, 2]])).item() == pytest.approx(lp_r + lp_c, rel=1e-6)
    assert masked.entropy().item() == pytest.approx(h_r + h_c, rel=1e-6)
    assert masked.parts[0].probs[0, 2].item() == 0.0 and masked.parts[1].probs[0, 0].item() == 0.0
    assert masked.mode.tolist() == [[0, 2]]  # row 2 (logit 2.0) is masked out
    # a tuple of per-component masks is the same mask
    flat = as_mask(np.array([row_mask + col_mask]), 1, 7, "test", NVEC)
    joined = as_mask((np.array([row_mask]), np.array([col_mask])), 1, 7, "test", NVEC)
    np.testing.assert_array_equal(flat, joined)


def test_an_all_false_segment_is_refused_naming_the_component():
    mask = np.ones((2, 7), bool)
    mask[1, 3:] = False
    with pytest.raises(ValueError, match=r"row 1 allows no action for action component 1"):
        as_mask(mask, 2, 7, "PPO collect", NVEC)
    env = EnvManager(lambda: PickEnv(empty_at=0), n_envs=2, seed=0, mode="sync")
    with pytest.raises(ValueError, match=r"sub-env 0, manager step 0: the action mask allows no "
                                         r"action for action component 1"):
        env.reset()
    env.close()


@pytest.mark.parametrize("tuple_mask", [False, True])
def test_random_masked_actions_are_never_invalid_over_10k_steps(tuple_mask):
    env = EnvManager(lambda: PickEnv(tuple_mask=tuple_mask), n_envs=4, seed=0, mode="sync")
    cfg = EasyDict(policy=dict(collect=dict(n_sample=10_000, random_collect_size=10**9)))
    ctx = OnlineRLContext()
    next(StepCollector(cfg, None, env)(ctx))
    steps = ctx.trajectories
    taken = np.stack([s["action"] for s in steps])            # [T, envs, 2]
    masks = np.stack([s["action_mask"] for s in steps])       # [T, envs, 7]
    assert ctx.env_step >= 10_000 and taken.shape[-1] == 2 and masks.shape[-1] == 7
    assert np.take_along_axis(masks[..., :3], taken[..., :1], axis=2).all()
    assert np.take_along_axis(masks[..., 3:], taken[..., 1:], axis=2).all()
    assert min(s["reward"].min() for s in steps) > 0  # never the −1 of an invalid value
    assert len({tuple(a) for a in taken.reshape(-1, 2).tolist()}) == 12  # each valid at times
    env.close()


@pytest.fixture
def one_torch_thread():
    """Tiny nets: one thread (several oversubscribe a loaded 2-core machine 10×)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_ppo_trains_on_a_masked_multidiscrete_env_and_acts_validly(one_torch_thread):
    cfg = EasyDict(policy=dict(collect=dict(n_sample=128),
                               learn=dict(gamma=0.9, gae_lambda=0.95, epoch_per_collect=2,
                                          batch_size=64, entropy_coef=0.01)))
    env = EnvManager(PickEnv, n_envs=4, seed=0, mode="sync")
    policy = PPOPolicy({"seed": 0, "learn": dict(cfg.policy.learn)}, env.observation_space,
                       env.action_space)
    task = Task()
    with task.start(ctx=OnlineRLContext()):
        task.use(StepCollector(cfg, policy.collect_mode, env))
        task.use(gae_estimator(cfg, policy.collect_mode))
        task.use(multistep_trainer(cfg, policy.learn_mode))
        task.use(lambda ctx: rewards.extend(s["reward"] for s in ctx.trajectories))
        rewards = []
        task.run(max_step=4)
        assert policy.train_iter > 0 and np.isfinite(task.ctx.train_output["entropy"])
    assert min(r.min() for r in rewards) > 0  # PPO never took an invalid component value
    with EnvManager(PickEnv, n_envs=4, seed=1, mode="sync") as env:
        obs = env.reset()
        action = policy.eval_mode.forward(obs, action_mask=env.action_mask)["action"]
        mask = env.action_mask
    assert mask[np.arange(4), action[:, 0]].all() and mask[np.arange(4), 3 + action[:, 1]].all()
