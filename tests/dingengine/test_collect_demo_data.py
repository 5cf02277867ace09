"""Port of DI-engine's `ding/example/collect_demo_data.py`, in its structure: a SAC policy made
with `enable_field=['collect']`, its collect face loaded with saved weights
(`policy.collect_mode.load_state_dict(torch.load(path))`), one collection of Pendulum steps
written by `offline_data_saver(path, data_type='hdf5')`. The config is the zoo's `pendulum-sac`
(the expert's, so that its weights fit); dizoo's `state_dict_path` and `save_path` config keys
are the script's arguments here, since rlpipe's config has no such keys."""
import logging

import h5py
import numpy as np
import pytest
import torch

from rlpipe import set_pkg_seed, task
from rlpipe.contexts import OnlineRLContext
from rlpipe.envs import EnvManager
from rlpipe.middleware import StepCollector, offline_data_saver
from rlpipe.models import ContinuousQAC
from rlpipe.policies import SACPolicy
from rlpipe.zoo import get_entry

from .test_more_ports import continuous_main

MODES = pytest.mark.parametrize("async_mode", [False, True], ids=["sync", "async"])


def collect_demo_data_main(cfg, state_dict_path, save_path, async_mode=False):
    """DI-engine's collect_demo_data.py, in its order; returns the policy."""
    logging.getLogger().setLevel(logging.INFO)
    with task.start(async_mode=async_mode, ctx=OnlineRLContext()):
        collector_env = EnvManager(cfg.env.id, n_envs=10, seed=cfg.seed)

        set_pkg_seed(cfg.seed, use_cuda=False)

        model = ContinuousQAC(collector_env.observation_space, collector_env.action_space,
                              "reparameterization", **cfg.policy.model)
        policy = SACPolicy(cfg.policy, model=model, enable_field=["collect"])
        state_dict = torch.load(state_dict_path, map_location="cpu")
        policy.collect_mode.load_state_dict(state_dict)

        task.use(StepCollector(cfg, policy.collect_mode, collector_env))
        task.use(offline_data_saver(save_path, data_type="hdf5"))
        task.run(max_step=1)
    collector_env.close()
    return policy


def demo_cfg():
    cfg = get_entry("pendulum-sac").resolve()
    cfg.policy.collect.n_sample = 200  # DI-engine's example: 1,000
    cfg.policy.collect.random_collect_size = 0  # every step acts with the loaded weights
    return cfg


def _read(path):
    with h5py.File(path, "r") as f:
        return {name: f[name][()] for name in f}


def _fresh_sac(cfg, seed):
    """An untrained SAC policy of `cfg`'s networks, seeded with `seed`, so that its weights
    differ from those of the network the script makes."""
    env = EnvManager(cfg.env.id, n_envs=1)
    policy = SACPolicy({**cfg.policy, "seed": seed}, env.observation_space, env.action_space)
    env.close()
    return policy


@MODES
def test_collect_demo_data_example_collects_with_the_loaded_weights(tmp_path, async_mode):
    cfg = demo_cfg()
    expert = _fresh_sac(cfg, seed=7)
    torch.save(expert.state_dict(), tmp_path / "expert.pt")
    policy = collect_demo_data_main(cfg, tmp_path / "expert.pt", tmp_path / "expert.hdf5",
                                    async_mode)
    data = _read(tmp_path / "expert.hdf5")
    assert len(data["action"]) == 200 and data["obs"].shape == (200, 3)
    for name, weight in expert.acting.state_dict().items():  # the collector's copy was loaded
        assert torch.equal(policy.acting.state_dict()[name], weight)
    with pytest.raises(AttributeError, match=r"has no learn_mode: add 'learn' to enable_field"):
        policy.learn_mode

    # The same collection by the expert's own collect face: the same actions, since the loaded
    # state carries its weights and the collector's noise generator too.
    with task.start(ctx=OnlineRLContext()):
        env = EnvManager(cfg.env.id, n_envs=10, seed=cfg.seed)
        task.use(StepCollector(cfg, expert.collect_mode, env))
        task.use(offline_data_saver(tmp_path / "by_expert.hdf5", data_type="hdf5"))
        task.run(max_step=1)
    env.close()
    # Up to float rounding: the async run's actions differ from the sync collection in the 7th
    # significant digit on some rows (the same rows in every run, with the same weights and
    # the same batches of 10 rows; where the last bits go is not pinned down); a collector that
    # had not loaded the weights or the noise generator would differ from the first decimal on.
    np.testing.assert_allclose(_read(tmp_path / "by_expert.hdf5")["action"], data["action"],
                               rtol=0, atol=1e-5)


@pytest.mark.slow
def test_collect_demo_data_example_records_an_expert_after_sac_trains(tmp_path):
    # The expert is trained by the sac.py port on the zoo's pendulum-sac config; its
    # demonstrations must beat those of the untrained network by a wide margin (Pendulum's
    # reward per step is between about -16 and 0; a policy that swings up and holds the
    # pendulum averages better than -2, a random one about -6; this seed: -0.7 against -6.5,
    # where 2,000 learn steps give -4.9).
    cfg = get_entry("pendulum-sac").resolve()
    cfg.run_dir = str(tmp_path / "expert")
    cfg.env.eval_n_envs = 1
    cfg.policy.eval.evaluator.update(eval_freq=1000, n_episode=1)
    cfg.max_train_iter = 4000
    trained, _ = continuous_main(cfg, SACPolicy, "reparameterization")
    torch.save(trained.state_dict(), tmp_path / "expert.pt")
    torch.save(_fresh_sac(demo_cfg(), seed=0).state_dict(), tmp_path / "untrained.pt")
    rewards = {}
    for who in ("expert", "untrained"):
        demo = demo_cfg()
        demo.policy.collect.n_sample = 2000  # a whole 200-step episode in each of the 10 envs
        collect_demo_data_main(demo, tmp_path / f"{who}.pt", tmp_path / f"{who}.hdf5")
        rewards[who] = float(_read(tmp_path / f"{who}.hdf5")["reward"].mean())
    assert rewards["untrained"] < -3.0 < rewards["expert"]
