"""Port of DI-engine's `ding/example/complex_observation.py`: its env (a Tuple of a Dict of
scalars, a sequence, an image and a vector), its encoder, and its `pipeline(input_cfg, seed,
max_train_iter, max_env_step)`.

DI-engine's `pipeline()` drives its serial workers by hand (`BaseLearner`,
`create_serial_collector`, `InteractionSerialEvaluator`, `BaseSerialCommander`); rlpipe has no
such workers, and the port's loop is the middleware that do each of its steps, in its order:
evaluate when due and stop at `stop_value` (`interaction_evaluator`), collect `n_sample` steps
(`StepCollector`), learn from them (`gae_estimator`, `multistep_trainer`), save a checkpoint
every 100 iterations (`CkptSaver`, the learner's `save_ckpt_after_iter=100` hook), stop at the
budgets (`termination_checker`) and write `result.pkl` (`final_ctx_saver`); `online_logger`
writes what its `tb_logger` did.

- The env is the example's `MyEnv` as a gymnasium env, `k1`/`k2` scalar Boxes (shape ()), which
  the encoder stacks into [B, 2] for `Linear(2, 16)`.
- The encoder gets the batch as a tuple of the Tuple space's parts (`GivenEncoder`). It is the
  example's but for `reshape` where the example calls `view` on the permuted conv output (a
  RuntimeError for a non-contiguous tensor). Its `TransformerEncoderLayer` is not
  `batch_first`, as in the example, so it attends across the rows of a batch.
- `VAC(encoder=encoder, **cfg.policy.model)` becomes `ActorCritic(..., hidden=(3314,),
  share_encoder=True, encoder=encoder)` (DI-engine's head layer of `actor_head_hidden_size`;
  the tests narrow it, see `env_cfg`).
"""
import pickle

import gymnasium as gym
import numpy as np
import pytest
import torch
import torch.nn as nn
from gymnasium import spaces

from rlpipe import ding_init, set_pkg_seed, task
from rlpipe.contexts import OnlineRLContext
from rlpipe.envs import EnvManager, register_env
from rlpipe.middleware import (CkptSaver, StepCollector, final_ctx_saver, gae_estimator,
                               interaction_evaluator, multistep_trainer, online_logger,
                               read_metrics, termination_checker)
from rlpipe.models import ActorCritic
from rlpipe.policies import PPOPolicy
from rlpipe.zoo import get_entry

MODES = pytest.mark.parametrize("async_mode", [False, True], ids=["sync", "async"])

# the example's my_env_ppo_config, under rlpipe's keys
my_env_ppo_config = dict(
    env=dict(n_envs=4, eval_n_envs=4, stop_value=195),
    policy=dict(
        model=dict(hidden=(3314,), share_encoder=True),
        learn=dict(epoch_per_collect=2, batch_size=64, lr=0.001, value_coef=0.5,
                   entropy_coef=0.01, clip_ratio=0.2, gamma=0.9, gae_lambda=0.95),
        collect=dict(n_sample=256),
        eval=dict(evaluator=dict(eval_freq=100, n_episode=4)),
    ),
)


class MyEnv(gym.Env):
    """The example's env: random observations, a random reward in [0, 1), and an episode that
    ends at each step with probability 0.3."""

    def __init__(self, seq_len=5, feature_dim=10, chart_seq_len=10):
        super().__init__()
        self.action_space = spaces.Discrete(2)
        self.observation_space = spaces.Tuple((
            spaces.Dict({
                'k1': spaces.Box(low=0, high=np.inf, shape=(), dtype=np.float32),
                'k2': spaces.Box(low=-1, high=1, shape=(), dtype=np.float32),
            }),
            spaces.Box(low=-np.inf, high=np.inf, shape=(seq_len, feature_dim), dtype=np.float32),
            spaces.Box(low=0, high=255, shape=(chart_seq_len, chart_seq_len, 3), dtype=np.uint8),
            spaces.Box(low=0, high=np.array([np.inf, 3], dtype=np.float32), shape=(2, ),
                       dtype=np.float32),
        ))

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        if seed is not None:
            self.observation_space.seed(seed)
        self.obs = self.observation_space.sample()
        return self.obs, {}

    def step(self, action):
        reward = self.reward(action)
        terminated, truncated = self.ends()
        self.obs = self.observation_space.sample()
        return self.obs, reward, terminated, truncated, {}

    def reward(self, action):
        return float(self.np_random.uniform(0.0, 1.0))

    def ends(self):
        return bool(self.np_random.uniform(0.0, 1.0) > 0.7), False


class CuedEnv(MyEnv):
    """MyEnv with something to learn: reward 1 when the action is the cue in the last part (1
    when its second component exceeds 1.5, else 0), episodes of 8 steps. The sequence and the
    image are blank, so that the cue is not lost among their features of noise. An episode's
    return counts the right actions: 8 at best, about 4 for a policy blind to the cue."""

    def reset(self, *, seed=None, options=None):
        self.t = 0
        super().reset(seed=seed, options=options)
        return self.blank(), {}

    def step(self, action):
        _, reward, terminated, truncated, info = super().step(action)
        return self.blank(), reward, terminated, truncated, info

    def blank(self):
        self.obs[1][:] = 0
        self.obs[2][:] = 0
        return self.obs

    def reward(self, action):
        return float(int(action) == int(self.obs[3][1] > 1.5))

    def ends(self):
        self.t += 1
        return False, self.t >= 8


class Encoder(nn.Module):
    """The example's encoder: features 32 + 5·10 + 10·10·32 + 32 = 3314."""

    def __init__(self, feature_dim, seq_len, chart_seq_len):
        super(Encoder, self).__init__()
        self.fc_net = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 32), nn.ReLU())
        self.transformer_net = nn.TransformerEncoderLayer(d_model=feature_dim, nhead=2)
        self.conv_net = nn.Sequential(
            nn.Conv2d(3, 16, kernel_size=3, padding=1), nn.ReLU(),
            nn.Conv2d(16, 32, kernel_size=3, padding=1), nn.ReLU())
        self.fc_net_2 = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 32), nn.ReLU())

    def forward(self, inputs):
        dict_input, transformer_input, conv_input, fc_input = inputs

        B = fc_input.shape[0]

        dict_output = self.fc_net(torch.stack([dict_input['k1'], dict_input['k2']], dim=1))
        transformer_output = self.transformer_net(transformer_input)
        conv_output = self.conv_net(conv_input.permute(0, 3, 1, 2)).permute(0, 2, 3, 1)
        fc_output = self.fc_net_2(fc_input)

        return torch.cat([dict_output.view(B, -1), transformer_output.reshape(B, -1),
                          conv_output.reshape(B, -1), fc_output.view(B, -1)], dim=1)


def pipeline(cfg, seed=0, max_train_iter=int(1e10), max_env_step=int(1e10), async_mode=False):
    """The example's pipeline(), its workers' loop as middleware; returns the policy."""
    cfg.seed = seed
    ding_init(cfg)
    with task.start(async_mode=async_mode, ctx=OnlineRLContext()):
        collector_env = EnvManager(cfg.env.id, n_envs=cfg.env.n_envs, seed=cfg.seed)
        evaluator_env = EnvManager(cfg.env.id, n_envs=cfg.env.eval_n_envs, seed=cfg.seed)

        set_pkg_seed(cfg.seed, use_cuda=False)

        encoder = Encoder(seq_len=5, feature_dim=10, chart_seq_len=10)

        model = ActorCritic(collector_env.observation_space, collector_env.action_space,
                            hidden=cfg.policy.model.hidden,
                            share_encoder=cfg.policy.model.share_encoder, encoder=encoder)

        policy = PPOPolicy(cfg.policy, model=model)

        task.use(interaction_evaluator(cfg, policy.eval_mode, evaluator_env))
        task.use(StepCollector(cfg, policy.collect_mode, collector_env))
        task.use(gae_estimator(cfg, policy.collect_mode))
        task.use(multistep_trainer(policy.learn_mode, log_freq=50))
        task.use(CkptSaver(policy, cfg.run_dir, train_freq=100))
        task.use(online_logger())
        task.use(termination_checker(max_env_step=max_env_step, max_train_iter=max_train_iter))
        task.use(final_ctx_saver(cfg.run_dir))
        task.run()
    collector_env.close()
    evaluator_env.close()
    return policy


def env_cfg(env_class, run_dir):
    """The example's config on `env_class`, registered as an rlpipe env. The layer after the
    encoder is 64 wide: DI-engine's 3314-wide one (11 million weights) would make each test
    minutes long on a CPU."""
    name = f"ding-{env_class.__name__.lower()}-tuple"
    register_env(name, env_class, overwrite=True)
    cfg = get_entry(f"ppo@{name}").resolve(my_env_ppo_config)
    cfg.run_dir = str(run_dir)
    cfg.policy.model.hidden = (64,)
    return cfg


@MODES
def test_pipeline_trains_its_own_encoder_on_tuple_observations(tmp_path, async_mode):
    cfg = env_cfg(MyEnv, tmp_path / "run")
    policy = pipeline(cfg, seed=0, max_env_step=512, async_mode=async_mode)
    assert policy.model.actor_encoder.in_dim == 3314  # the example's feature count
    assert isinstance(policy.obs_space, gym.spaces.Tuple)
    with open(tmp_path / "run" / "result.pkl", "rb") as f:
        result = pickle.load(f)
    assert result["env_step"] == 512 and result["train_iter"] == policy_updates(cfg, 512)
    assert np.isfinite(result["last_eval_value"])  # the untrained policy's evaluation
    assert (tmp_path / "run" / "ckpt" / "final.pt").is_file()


def policy_updates(cfg, env_steps):
    """Minibatch steps of `env_steps` collected rows: epochs × rows / batch size."""
    learn = cfg.policy.learn
    return learn.epoch_per_collect * env_steps // learn.batch_size


def test_pipeline_stops_at_max_train_iter(tmp_path):
    cfg = env_cfg(MyEnv, tmp_path / "run")
    pipeline(cfg, seed=1, max_train_iter=1)
    with open(tmp_path / "run" / "result.pkl", "rb") as f:
        result = pickle.load(f)
    assert result["env_step"] == cfg.policy.collect.n_sample  # one collection, one update round
    assert result["train_iter"] == policy_updates(cfg, cfg.policy.collect.n_sample)
    assert read_metrics(cfg.run_dir)[-1]["env_step"] == cfg.policy.collect.n_sample


@pytest.mark.slow
def test_pipeline_learns_a_cue_through_its_encoder(tmp_path):
    # Evaluated every 8 rollouts (64 updates): seed 0 scored 4.5 untrained and 7.25 to 8.0 in
    # every evaluation from 5,888 env steps to 12,032 (evaluated every 2 rollouts).
    cfg = env_cfg(CuedEnv, tmp_path / "run")
    cfg.policy.eval.evaluator.update(eval_freq=64, n_episode=8)
    pipeline(cfg, seed=0, max_env_step=10240)
    evals = [r["eval/return_mean"] for r in read_metrics(cfg.run_dir) if "eval/return_mean" in r]
    assert len(evals) == 5 and evals[0] < 6 and evals[-1] > 7, evals
