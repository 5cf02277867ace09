"""Ports of DI-engine's `dqn_nstep.py`, `dqn_per.py`, `dqn_eval.py`, `sac.py`, `td3.py` and
`cql.py`, in their structure: only the imports and the construction of the config, envs,
model, buffer and data set are rlpipe's. Tiny budgets; each runs sync and async."""
import logging
import pickle

import numpy as np
import pytest
import torch

from rlpipe import ding_init, set_pkg_seed, task
from rlpipe.contexts import OfflineRLContext, OnlineRLContext
from rlpipe.data import OfflineDataset, PrioritizedReplayBuffer, ReplayBuffer
from rlpipe.envs import EnvManager
from rlpipe.middleware import (CkptSaver, OffPolicyLearner, StepCollector, data_pusher,
                               eps_greedy_handler, final_ctx_saver, interaction_evaluator,
                               load_checkpoint, nstep_reward_enhancer, offline_data_fetcher,
                               online_logger, read_metrics, termination_checker, trainer)
from rlpipe.models import ContinuousQAC, QNetwork
from rlpipe.policies import CQLPolicy, DQNPolicy, SACPolicy, TD3Policy
from rlpipe.zoo import get_entry

from .test_example_ports import dqn_main, tiny_cfg

MODES = pytest.mark.parametrize("async_mode", [False, True], ids=["sync", "async"])


def dqn_nstep_main(cfg, async_mode=False):
    """DI-engine's dqn_nstep.py, in its order; returns the buffer."""
    logging.getLogger().setLevel(logging.INFO)
    with task.start(async_mode=async_mode, ctx=OnlineRLContext()):
        collector_env = EnvManager(cfg.env.id, n_envs=cfg.env.n_envs, seed=cfg.seed)
        evaluator_env = EnvManager(cfg.env.id, n_envs=cfg.env.eval_n_envs, seed=cfg.seed)

        set_pkg_seed(cfg.seed, use_cuda=False)

        model = QNetwork(collector_env.observation_space, collector_env.action_space.n,
                         **cfg.policy.model)
        buffer_ = ReplayBuffer(cfg.replay.capacity)
        policy = DQNPolicy(cfg.policy, model=model)

        task.use(interaction_evaluator(cfg, policy.eval_mode, evaluator_env))
        task.use(eps_greedy_handler(cfg))
        task.use(StepCollector(cfg, policy.collect_mode, collector_env))
        task.use(nstep_reward_enhancer(cfg))
        task.use(data_pusher(cfg, buffer_))
        task.use(OffPolicyLearner(cfg, policy.learn_mode, buffer_))
        task.use(CkptSaver(policy, cfg.run_dir, train_freq=100))
        task.use(final_ctx_saver(cfg.run_dir))
        task.use(termination_checker(max_env_step=cfg.max_env_step))
        task.run()
    collector_env.close()
    evaluator_env.close()
    return buffer_


def dqn_per_main(cfg, async_mode=False):
    """DI-engine's dqn_per.py, in its order; returns the buffer and train_iter."""
    logging.getLogger().setLevel(logging.INFO)
    with task.start(async_mode=async_mode, ctx=OnlineRLContext()):
        collector_env = EnvManager(cfg.env.id, n_envs=cfg.env.n_envs, seed=cfg.seed)
        evaluator_env = EnvManager(cfg.env.id, n_envs=cfg.env.eval_n_envs, seed=cfg.seed)

        set_pkg_seed(cfg.seed, use_cuda=False)

        model = QNetwork(collector_env.observation_space, collector_env.action_space.n,
                         **cfg.policy.model)
        buffer_ = PrioritizedReplayBuffer(cfg.replay.capacity, alpha=cfg.replay.alpha,
                                          beta=cfg.replay.beta)
        policy = DQNPolicy(cfg.policy, model=model)

        task.use(interaction_evaluator(cfg, policy.eval_mode, evaluator_env))
        task.use(eps_greedy_handler(cfg))
        task.use(StepCollector(cfg, policy.collect_mode, collector_env))
        task.use(data_pusher(cfg, buffer_))
        task.use(OffPolicyLearner(cfg, policy.learn_mode, buffer_))
        task.use(CkptSaver(cfg, policy, train_freq=100))
        task.use(termination_checker(max_env_step=cfg.max_env_step))
        task.run()
        train_iter = task.ctx.train_iter
    collector_env.close()
    evaluator_env.close()
    return buffer_, train_iter


def dqn_eval_main(cfg, ckpt_dir, async_mode=False):
    """DI-engine's dqn_eval.py, in its order, with the trained weights loaded (the original
    evaluates the fresh network); one evaluation, then the run ends."""
    logging.getLogger().setLevel(logging.INFO)
    with task.start(async_mode=async_mode, ctx=OnlineRLContext()):
        evaluator_env = EnvManager(cfg.env.id, n_envs=cfg.env.eval_n_envs, seed=cfg.seed)

        set_pkg_seed(cfg.seed, use_cuda=False)

        model = QNetwork(evaluator_env.observation_space, evaluator_env.action_space.n,
                         **cfg.policy.model)
        policy = DQNPolicy(cfg.policy, model=model)
        policy.load_state_dict(load_checkpoint(ckpt_dir, which="final")["policy"])

        task.use(interaction_evaluator(cfg, policy.eval_mode, evaluator_env))
        task.run(max_step=1)
        value = task.ctx.eval_value
    evaluator_env.close()
    return policy, value


def continuous_main(cfg, policy_class, kind, async_mode=False):
    """DI-engine's sac.py (kind "reparameterization") and td3.py ("regression"), in their order."""
    logging.getLogger().setLevel(logging.INFO)
    ding_init(cfg)
    with task.start(async_mode=async_mode, ctx=OnlineRLContext()):
        collector_env = EnvManager(cfg.env.id, n_envs=cfg.env.n_envs, seed=cfg.seed)
        evaluator_env = EnvManager(cfg.env.id, n_envs=cfg.env.eval_n_envs, seed=cfg.seed)

        set_pkg_seed(cfg.seed, use_cuda=False)

        model = ContinuousQAC(collector_env.observation_space, collector_env.action_space, kind,
                              **cfg.policy.model)
        buffer_ = ReplayBuffer(cfg.replay.capacity)
        policy = policy_class(cfg.policy, model=model)

        task.use(interaction_evaluator(cfg, policy.eval_mode, evaluator_env))
        task.use(StepCollector(cfg, policy.collect_mode, collector_env,
                               random_collect_size=cfg.policy.collect.random_collect_size))
        task.use(data_pusher(cfg, buffer_))
        task.use(OffPolicyLearner(cfg, policy.learn_mode, buffer_))
        task.use(CkptSaver(policy, cfg.run_dir, train_freq=100))
        task.use(termination_checker(max_train_iter=cfg.max_train_iter))
        task.use(online_logger())
        task.run()
    collector_env.close()
    evaluator_env.close()
    return policy, model


@MODES
def test_nstep_dqn_example_learns_from_nstep_rows(tmp_path, async_mode):
    cfg = tiny_cfg("cartpole-dqn", tmp_path / "run")
    cfg.policy.learn.nstep = 3  # DI-engine: cfg.policy.nstep
    cfg.max_env_step = 192
    buffer_ = dqn_nstep_main(cfg, async_mode)
    discount = buffer_.sample(256)["discount"]
    gamma = cfg.policy.learn.gamma
    assert np.isclose(discount, gamma ** 3).any()  # 3-step rows; shorter only at episode ends
    allowed = np.array([0.0, gamma, gamma ** 2, gamma ** 3])
    assert np.isclose(discount[:, None], allowed[None], atol=1e-6).any(1).all()
    with open(tmp_path / "run" / "result.pkl", "rb") as f:
        result = pickle.load(f)
    assert result["env_step"] >= 192 and result["train_iter"] > 0
    assert (tmp_path / "run" / "ckpt" / "final.pt").is_file()


@MODES
def test_per_dqn_example_writes_priorities_back(tmp_path, async_mode):
    cfg = tiny_cfg("cartpole-dqn", tmp_path / "run")
    cfg.max_env_step = 192
    buffer_, train_iter = dqn_per_main(cfg, async_mode)
    priorities = buffer_.priorities()
    assert len(priorities) == 192
    assert len(np.unique(priorities)) > 1  # the learner's TD errors replaced the push priority
    assert "weight" in buffer_.sample(4)  # importance weights, which DQN applies
    assert train_iter > 0


@MODES
def test_dqn_eval_example_evaluates_a_trained_checkpoint(tmp_path, async_mode):
    cfg = tiny_cfg("cartpole-dqn", tmp_path / "train")
    cfg.max_env_step = 128
    trained = dqn_main(cfg)
    eval_cfg = tiny_cfg("cartpole-dqn", tmp_path / "eval")
    policy, value = dqn_eval_main(eval_cfg, tmp_path / "train", async_mode)
    for name, weight in trained.online.state_dict().items():
        assert torch.equal(policy.online.state_dict()[name], weight)
    assert np.isfinite(value) and value > 0


def _continuous_cfg(entry, run_dir):
    cfg = get_entry(entry).resolve()
    cfg.run_dir = str(run_dir)
    cfg.env.n_envs, cfg.env.eval_n_envs = 1, 1
    cfg.policy.model.actor_hidden = cfg.policy.model.critic_hidden = (16, 16)
    cfg.policy.collect.update(n_sample=16, random_collect_size=32)
    cfg.policy.learn.update(batch_size=16, update_per_collect=2)
    cfg.policy.eval.evaluator.update(eval_freq=1000, n_episode=1)
    cfg.max_train_iter = 8
    return cfg


@MODES
@pytest.mark.parametrize("entry, policy_class, kind", [
    ("pendulum-sac", SACPolicy, "reparameterization"), ("pendulum-td3", TD3Policy, "regression")])
def test_sac_and_td3_examples_train_one_continuous_qac(tmp_path, async_mode, entry, policy_class,
                                                       kind):
    cfg = _continuous_cfg(entry, tmp_path / "run")
    policy, model = continuous_main(cfg, policy_class, kind, async_mode)
    assert policy.actor is model.actor and policy.critic is model.critic
    rows = read_metrics(cfg.run_dir)
    assert rows[-1]["train_iter"] >= 8
    assert np.isfinite([r["train/critic_loss"] for r in rows if "train/critic_loss" in r]).all()
    assert (tmp_path / "run" / "ckpt" / "final.pt").is_file()


def test_continuous_qac_is_refused_in_one_line_where_it_does_not_fit():
    import gymnasium as gym

    obs = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
    with pytest.raises(ValueError, match="choose 'reparameterization'"):
        ContinuousQAC(obs, gym.spaces.Box(-1.0, 1.0, (1,), np.float32), kind="stochastic")
    with pytest.raises(ValueError, match="action_space must be a 1-D Box"):
        ContinuousQAC(obs, gym.spaces.Discrete(2))
    regression = ContinuousQAC(obs, gym.spaces.Box(-1.0, 1.0, (1,), np.float32), "regression")
    with pytest.raises(TypeError, match="needs .actor, a SquashedGaussianActor"):
        SACPolicy(None, model=regression)
    with pytest.raises(TypeError, match=r"needs \(cfg, obs_space, action_space\) or"):
        TD3Policy(None)


def random_pendulum_dataset(n_episodes, seed=0):
    """Random-action Pendulum episodes of 50 steps as an OfflineDataset (the stand-in for
    DI-engine's `create_dataset(cfg)`, which reads a data set that the config names)."""
    import gymnasium as gym

    env, rng, episodes = gym.make("Pendulum-v1", max_episode_steps=50), np.random.default_rng(seed), []
    for k in range(n_episodes):
        obs, _ = env.reset(seed=seed + k)
        ep = {"observations": [obs], "actions": [], "rewards": [], "terminations": [],
              "truncations": []}
        done = False
        while not done:
            action = rng.uniform(-2.0, 2.0, (1,)).astype(np.float32)
            obs, reward, terminated, truncated, _ = env.step(action)
            for key, value in (("observations", obs), ("actions", action), ("rewards", reward),
                               ("terminations", terminated), ("truncations", truncated)):
                ep[key].append(value)
            done = terminated or truncated
        episodes.append({key: np.asarray(v) for key, v in ep.items()})
    return OfflineDataset.from_episodes(episodes, env.observation_space, env.action_space)


def cql_main(cfg, dataset, async_mode=False):
    """DI-engine's cql.py, in its order."""
    logging.getLogger().setLevel(logging.INFO)
    with task.start(async_mode=async_mode, ctx=OfflineRLContext()):
        evaluator_env = EnvManager(cfg.env.id, n_envs=cfg.env.eval_n_envs, seed=cfg.seed)

        set_pkg_seed(cfg.seed, use_cuda=False)

        model = ContinuousQAC(dataset.observation_space, dataset.action_space,
                              "reparameterization", **cfg.policy.model)
        policy = CQLPolicy(cfg.policy, model=model)

        task.use(interaction_evaluator(cfg, policy.eval_mode, evaluator_env))
        task.use(offline_data_fetcher(cfg, dataset))
        task.use(trainer(cfg, policy.learn_mode))
        task.use(CkptSaver(cfg, policy, train_freq=100))
        task.run(max_step=cfg.max_train_iter)
        train_iter = task.ctx.train_iter
    evaluator_env.close()
    return policy, model, train_iter


@MODES
def test_cql_example_trains_one_continuous_qac_offline(tmp_path, async_mode):
    cfg = get_entry("pendulum-cql").resolve()
    cfg.run_dir = str(tmp_path / "run")
    cfg.env.eval_n_envs = 1
    cfg.policy.model.actor_hidden = cfg.policy.model.critic_hidden = (16, 16)
    cfg.policy.learn.batch_size = 32
    cfg.policy.eval.evaluator.update(eval_freq=1000, n_episode=1)
    cfg.max_train_iter = 6
    policy, model, train_iter = cql_main(cfg, random_pendulum_dataset(2), async_mode)
    assert train_iter == 6 and policy.critic is model.critic
    assert (tmp_path / "run" / "ckpt" / "final.pt").is_file()
