"""offline_data_fetcher: its contract and refusals."""
import gymnasium as gym
import pytest
from easydict import EasyDict

from rlpipe.contexts import OfflineRLContext
from rlpipe.data import OfflineDataset, ReplayBuffer
from rlpipe.engine import contract_of
from rlpipe.middleware import offline_data_fetcher

from .episodes import play


def _cfg(batch_size):
    return EasyDict({"policy": {"learn": {"batch_size": batch_size}}})


def test_writes_a_batch_and_the_epoch_each_call():
    env = gym.make("CartPole-v1")
    ds = OfflineDataset.from_episodes(play("CartPole-v1", 2), env.observation_space, env.action_space)
    fetch = offline_data_fetcher(_cfg(len(ds) - 1), ds)
    declared = contract_of(fetch)
    assert declared.writes == {"train_data", "train_epoch"} and not declared.reads
    ctx = OfflineRLContext()
    fetch(ctx)
    assert len(ctx.train_data["reward"]) == len(ds) - 1 and ctx.train_epoch == 0
    fetch(ctx)
    assert ctx.train_epoch == 1


def test_refuses_what_is_not_a_data_set_and_too_small_a_one():
    with pytest.raises(TypeError, match="OfflineDataset"):
        offline_data_fetcher(_cfg(4), ReplayBuffer(10))
    env = gym.make("CartPole-v1")
    ds = OfflineDataset.from_episodes(play("CartPole-v1", 1), env.observation_space, env.action_space)
    with pytest.raises(ValueError, match="fewer than policy.learn.batch_size"):
        offline_data_fetcher(_cfg(10_000), ds)
