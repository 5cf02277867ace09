"""Seed 003's offline spelling: `offline_data_fetcher(cfg, dataset)` then `trainer(cfg,
policy.learn_mode)` on an `OfflineRLContext`, with the guide's evaluator and saver lines as
they are (only the imports are rlpipe's)."""
import gymnasium as gym
import numpy as np

from rlpipe import task
from rlpipe.contexts import OfflineRLContext
from rlpipe.data import OfflineDataset
from rlpipe.middleware import CkptSaver, interaction_evaluator, offline_data_fetcher, trainer


def random_episodes(n, seed=0):
    env, rng, episodes = gym.make("CartPole-v1"), np.random.default_rng(seed), []
    for k in range(n):
        obs, _ = env.reset(seed=seed + k)
        ep = {"observations": [obs], "actions": [], "rewards": [], "terminations": [],
              "truncations": []}
        done = False
        while not done:
            action = int(rng.integers(2))
            obs, reward, terminated, truncated, _ = env.step(action)
            for key, value in (("observations", obs), ("actions", action), ("rewards", reward),
                               ("terminations", terminated), ("truncations", truncated)):
                ep[key].append(value)
            done = terminated or truncated
        episodes.append({k: np.asarray(v) for k, v in ep.items()})
    return env, episodes


def test_the_guides_offline_lines_train_in_epochs_and_save(dqn):
    cfg, policy, evaluator_env = dqn.cfg, dqn.policy, dqn.evaluator_env
    cfg.env.stop_value = None  # run the whole budget
    cfg.policy.eval.evaluator.eval_freq = 5
    env, episodes = random_episodes(4)
    dataset = OfflineDataset.from_episodes(episodes, env.observation_space, env.action_space)
    epochs = []
    with task.start(async_mode=False, ctx=OfflineRLContext()):
        task.use(interaction_evaluator(cfg, policy.eval_mode, evaluator_env))
        task.use(offline_data_fetcher(cfg, dataset))
        task.use(trainer(cfg, policy.learn_mode))
        task.use(CkptSaver(cfg, policy, train_freq=5))
        task.use(lambda ctx: epochs.append(ctx.train_epoch))
        task.run(max_step=10)
        assert task.ctx.train_iter == 10
    batch = cfg.policy.learn.batch_size
    assert epochs == [(i + 1) * batch // len(dataset) for i in range(10)]  # passes completed
    assert dataset.epoch == epochs[-1] >= 1
