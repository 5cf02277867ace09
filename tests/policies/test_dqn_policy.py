"""DQNPolicy faces, exploration, acting copy, state round trips and error messages."""
import gymnasium as gym
import numpy as np
import pytest
import torch

from rlpipe.config import ConfigTypeError
from rlpipe.policies import (CollectMode, DQNPolicy, EvalMode, LearnMode, ObservationShapeError,
                             UnsupportedSpaceError)
from tests.policies.policy_test_helpers import (ACT2, VEC2, VEC4, linear_dqn, random_batch,
                                                set_linear)


def small(cfg=None, obs_space=VEC4, action_space=ACT2):
    base = {"seed": 1, "model": {"hidden": (16, 16)}, "learn": {"lr": 1e-2}}
    for key, value in (cfg or {}).items():
        base[key] = {**base.get(key, {}), **value} if isinstance(value, dict) else value
    return DQNPolicy(base, obs_space, action_space)


def test_faces_fit_the_protocols_and_default_config():
    policy = small()
    assert isinstance(policy.collect_mode, CollectMode)
    assert isinstance(policy.eval_mode, EvalMode)
    assert isinstance(policy.learn_mode, LearnMode)
    assert policy.learn_mode.cfg is policy.cfg and policy.collect_mode.policy is policy
    cfg = DQNPolicy.default_config()
    assert cfg.learn.double_q is True and cfg.learn.tau is None and cfg.device == "cpu"
    assert cfg.learn.nstep == 1 and cfg.model.dueling is False
    assert DQNPolicy.default_config() is not cfg  # fresh each call
    assert "Discrete(2)" in policy.describe_spaces() and "Box" in repr(policy)


def test_collect_and_eval_outputs():
    policy = small()
    obs = np.random.default_rng(0).normal(size=(8, 4)).astype(np.float32)
    out = policy.collect_mode.forward(obs, eps=0.3)
    assert set(out) == {"action"}
    assert out["action"].dtype == np.int64 and out["action"].shape == (8,)
    assert policy.eval_mode.forward(obs)["action"].shape == (8,)
    assert policy.collect_mode.forward(obs.astype(np.float64))["action"].shape == (8,)
    assert policy.collect_mode.forward(obs.tolist())["action"].shape == (8,)  # array-like
    with torch.no_grad():
        greedy = policy.online(torch.as_tensor(obs)).argmax(1).numpy()
    np.testing.assert_array_equal(policy.eval_mode.forward(obs)["action"], greedy)
    np.testing.assert_array_equal(policy.collect_mode.forward(obs)["action"], greedy)


def test_eps_greedy_frequencies():
    space4 = gym.spaces.Discrete(4)
    policy = linear_dqn({"seed": 3}, VEC2, space4)
    set_linear(policy.online, np.zeros((4, 2)), bias=torch.tensor([0.0, 0.0, 1.0, 0.0]))
    policy.collect_mode.refresh()
    obs = np.zeros((40_000, 2), np.float32)
    assert (policy.collect_mode.forward(obs)["action"] == 2).all()
    counts = np.bincount(policy.collect_mode.forward(obs, eps=0.4)["action"], minlength=4) / len(obs)
    # random with prob 0.4 (uniform over 4), greedy (action 2) otherwise
    np.testing.assert_allclose(counts, [0.1, 0.1, 0.7, 0.1], atol=0.01)
    counts = np.bincount(policy.collect_mode.forward(obs, eps=1.0)["action"], minlength=4) / len(obs)
    np.testing.assert_allclose(counts, [0.25] * 4, atol=0.01)
    counts = np.bincount(policy.collect_mode.forward(obs, eps=0.999)["action"], minlength=4) / len(obs)
    np.testing.assert_allclose(counts, [0.25] * 4, atol=0.01)


def test_seeded_exploration_is_reproducible():
    obs = np.zeros((64, 4), np.float32)
    a = small({"seed": 5}).collect_mode.forward(obs, eps=0.5)["action"]
    b = small({"seed": 5}).collect_mode.forward(obs, eps=0.5)["action"]
    np.testing.assert_array_equal(a, b)


def test_acting_copy_changes_only_on_refresh():
    policy = small({"learn": {"lr": 0.1}})
    obs = np.random.default_rng(1).normal(size=(32, 4)).astype(np.float32)
    with torch.no_grad():
        q_act0 = policy.acting(torch.as_tensor(obs)).clone()
    for i in range(5):
        policy.learn_mode.forward(random_batch(seed=i))
    with torch.no_grad():
        assert torch.equal(policy.acting(torch.as_tensor(obs)), q_act0)
        assert not torch.allclose(policy.online(torch.as_tensor(obs)), q_act0)
    policy.collect_mode.refresh()
    with torch.no_grad():
        assert torch.equal(policy.acting(torch.as_tensor(obs)), policy.online(torch.as_tensor(obs)))
    assert all(not p.requires_grad for p in policy.acting.parameters())
    assert all(not p.requires_grad for p in policy.target.parameters())


def test_state_dict_round_trip_identical_outputs_and_optimiser(tmp_path):
    a = small({"seed": 1, "learn": {"tau": 0.1}})
    for i in range(4):
        a.learn_mode.forward(random_batch(seed=i))
    a.collect_mode.refresh()
    a.learn_mode.forward(random_batch(seed=9))  # acting now differs from online
    path = tmp_path / "dqn.pt"
    torch.save(a.state_dict(), path)
    state = torch.load(path, weights_only=True)
    b = small({"seed": 2, "learn": {"tau": 0.1}})
    b.load_state_dict(state)
    assert b.learn_mode.train_iter == a.learn_mode.train_iter == 5
    obs = torch.randn(16, 4)
    with torch.no_grad():
        for name in ("online", "target", "acting"):
            assert torch.equal(getattr(a, name)(obs), getattr(b, name)(obs)), name
    sa, sb = a.optimizer.state_dict(), b.optimizer.state_dict()
    for k in sa["state"]:
        for field in ("exp_avg", "exp_avg_sq", "step"):
            assert torch.equal(sa["state"][k][field], sb["state"][k][field])
    # same exploration RNG, same next learn step
    obs_np = obs.numpy()
    np.testing.assert_array_equal(a.collect_mode.forward(obs_np, eps=0.5)["action"],
                                  b.collect_mode.forward(obs_np, eps=0.5)["action"])
    out_a = a.learn_mode.forward(random_batch(seed=20))
    out_b = b.learn_mode.forward(random_batch(seed=20))
    assert out_a == out_b
    for pa, pb in zip(a.online.parameters(), b.online.parameters()):
        assert torch.equal(pa, pb)


def test_state_dict_is_a_snapshot_and_load_checks_keys():
    policy = small()
    state = policy.state_dict()
    policy.learn_mode.forward(random_batch())
    assert not torch.equal(state["online"]["encoder.mlp.net.0.weight"],
                           policy.online.encoder.mlp.net[0].weight)
    with pytest.raises(KeyError, match="lacks.*'optimizer'"):
        policy.load_state_dict({k: v for k, v in state.items() if k != "optimizer"})


@pytest.mark.parametrize("space", [gym.spaces.Box(-1.0, 1.0, (2,)), gym.spaces.MultiDiscrete([2, 3]),
                                   gym.spaces.MultiBinary(3)])
def test_non_discrete_action_space_is_rejected(space):
    with pytest.raises(UnsupportedSpaceError) as info:
        small(action_space=space)
    msg = str(info.value)
    assert repr(space) in msg and "Discrete" in msg and "SAC, TD3 or PPO" in msg


def test_unsupported_observation_space_is_rejected():
    with pytest.raises(UnsupportedSpaceError, match="observation space Text\\("):
        small(obs_space=gym.spaces.Text(5))
    with pytest.raises(UnsupportedSpaceError, match="no encoder for observation space"):
        small(obs_space=gym.spaces.Box(0, 1, (84, 84)))


def test_mismatched_observation_shape_is_a_clear_error():
    policy = small()
    bad = np.zeros((8, 5), np.float32)
    for call in (lambda: policy.collect_mode.forward(bad),
                 lambda: policy.collect_mode.forward(bad, eps=1.0),
                 lambda: policy.collect_mode.forward(np.zeros(4, np.float32), eps=1.0),
                 lambda: policy.eval_mode.forward(bad),
                 lambda: policy.learn_mode.forward(random_batch(obs_dim=5))):
        with pytest.raises(ObservationShapeError, match=r"Box\(-inf, inf, \(4,\), float32\).*\[B, 4\]"):
            call()


def test_config_errors_and_pipeline_keys():
    with pytest.raises(ConfigTypeError, match="'policy.learn.lr'"):
        small({"learn": {"lr": "fast"}})
    with pytest.raises(ValueError, match="policy.learn.gamma must be set"):
        small({"learn": {"gamma": None}})
    # keys for the pipeline (read by middleware) are kept, not rejected
    policy = small({"collect": {"n_sample": 64}, "other": {"eps": {"start": 1.0}}})
    assert policy.cfg.collect.n_sample == 64 and policy.cfg.other.eps.start == 1.0
    assert policy.cfg.learn.gamma == 0.99


def test_device_resolution():
    assert small({"device": "auto"}).device.type == ("cuda" if torch.cuda.is_available() else "cpu")
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="CUDA is not available"):
            small({"device": "cuda"})


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_learner_on_gpu_acts_on_cpu_copy():
    policy = small({"device": "cuda"})
    assert next(policy.online.parameters()).is_cuda and not next(policy.acting.parameters()).is_cuda
    stats = policy.learn_mode.forward(random_batch())
    assert np.isfinite(stats["loss"])
    policy.collect_mode.refresh()
    obs = np.random.default_rng(0).normal(size=(8, 4)).astype(np.float32)
    np.testing.assert_array_equal(policy.collect_mode.forward(obs)["action"],
                                  policy.eval_mode.forward(obs)["action"])
    state = policy.state_dict()
    other = small({"device": "cuda"})
    other.load_state_dict(state)
    assert other.learn_mode.forward(random_batch(seed=3)) == policy.learn_mode.forward(random_batch(seed=3))


def test_image_observations_and_dueling():
    space = gym.spaces.Box(0, 255, (4, 84, 84), np.uint8)
    policy = DQNPolicy({"seed": 0, "model": {"hidden": (32,), "dueling": True}}, space,
                       gym.spaces.Discrete(6))
    rng = np.random.default_rng(0)
    obs = rng.integers(0, 256, size=(3, 4, 84, 84), dtype=np.uint8)
    assert policy.collect_mode.forward(obs, eps=0.1)["action"].shape == (3,)
    b = {"obs": obs, "action": rng.integers(6, size=3), "reward": np.ones(3, np.float32),
         "next_obs": obs[::-1].copy(), "terminated": np.zeros(3, bool), "truncated": np.zeros(3, bool)}
    assert np.isfinite(policy.learn_mode.forward(b)["loss"])


def test_learn_batch_missing_keys_is_a_clear_error():
    b = random_batch()
    del b["terminated"]
    with pytest.raises(KeyError, match=r"lacks \['terminated \(or discount\)'\]"):
        small().learn_mode.forward(b)
    del b["reward"]
    with pytest.raises(KeyError, match=r"lacks \['reward'"):
        small().learn_mode.forward(b)


def test_learn_ignores_extra_batch_keys():
    b = random_batch()
    b["index"] = np.arange(16)
    b["info"] = np.array(["x"] * 16)  # not a learn key: never converted
    assert np.isfinite(small().learn_mode.forward(b)["loss"])


def test_refresh_races_with_learning_threads():
    import threading
    policy = small()
    errors = []

    def learn():
        try:
            for i in range(100):
                policy.learn_mode.forward(random_batch(seed=i))
        except Exception as exc:  # surfaced below
            errors.append(exc)

    thread = threading.Thread(target=learn)
    thread.start()
    obs = np.zeros((8, 4), np.float32)
    while thread.is_alive():
        policy.collect_mode.refresh()
        policy.collect_mode.forward(obs, eps=0.1)
        policy.eval_mode.forward(obs)
    thread.join()
    assert not errors and policy.learn_mode.train_iter == 100
