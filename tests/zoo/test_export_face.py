"""The acting face `rlpipe export` writes (tools/_export_face.py) computes what each policy's
eval face returns, for every policy family and space it supports, and the check that guards
an export (tools/_export_check.py) refuses a file that acts otherwise."""
import gymnasium as gym
import numpy as np
import pytest
import torch

from rlpipe.policies import (BCPolicy, CQLPolicy, DiscreteCQLPolicy, DQNPolicy, IQLPolicy,
                             MAPPOPolicy, PPOLSTMPolicy, PPOPolicy, R2D2Policy, RandomPolicy,
                             SACPolicy, TD3BCPolicy, TD3Policy)
from rlpipe.tools._export_check import compare, policy_obs, sample_inputs, sample_masks
from rlpipe.tools._export_face import MASK_INPUT, ExportError, acting_module, refusal

VEC = gym.spaces.Box(-2.0, 3.0, (5,), np.float32)
DICT = gym.spaces.Dict({"image": gym.spaces.Box(0, 255, (6, 6, 3), np.uint8),
                        "pos": gym.spaces.Box(-1.0, 1.0, (2,), np.float32),
                        "flag": gym.spaces.Discrete(3, start=1)})
BOX = gym.spaces.Box(np.array([-2.0, 0.0], np.float32), np.array([2.0, 5.0], np.float32))
SMALL = {"model": {"hidden": (16,)}}
TWIN = {"model": {"actor_hidden": (16,), "critic_hidden": (16,)}}


def _shake(policy, seed=0):
    """Noise on every weight, so that a fresh network's actions vary with the observation."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for net in vars(policy).values():
            if isinstance(net, torch.nn.Module):
                for p in net.parameters():
                    p.add_(torch.randn(p.shape, generator=gen) * 0.2)


def _module_actions(policy, with_mask, n=300, seed=3):
    module, specs = acting_module(policy, with_mask)
    inputs = sample_inputs(policy.obs_space, specs, n, seed)
    if with_mask:
        from rlpipe.mask_layout import mask_segments

        inputs[MASK_INPUT] = sample_masks(mask_segments(policy.action_space), n, seed)
    names = [s.name for s in specs] + ([MASK_INPUT] if with_mask else [])
    run = lambda x: module(*(torch.as_tensor(x[k]) for k in names)).numpy()  # noqa: E731
    return run, inputs, specs


CASES = [
    (DQNPolicy, VEC, gym.spaces.Discrete(4, start=2), SMALL, True),
    (DQNPolicy, DICT, gym.spaces.Discrete(3), SMALL, False),
    (DiscreteCQLPolicy, VEC, gym.spaces.Discrete(3), SMALL, False),
    (PPOPolicy, VEC, gym.spaces.Discrete(5), SMALL, True),
    (PPOPolicy, DICT, gym.spaces.MultiDiscrete([3, 4], start=[1, 0]), SMALL, True),
    (PPOPolicy, VEC, gym.spaces.MultiBinary(3), SMALL, False),
    (PPOPolicy, DICT, BOX, SMALL, False),
    (PPOPolicy, VEC, BOX, {"model": {"hidden": (16,), "obs_norm": True}}, False),
    (SACPolicy, DICT, BOX, TWIN, False),
    (TD3Policy, VEC, BOX, TWIN, False),
    (CQLPolicy, VEC, BOX, TWIN, False),
    (IQLPolicy, VEC, BOX, TWIN, False),
    (TD3BCPolicy, VEC, BOX, TWIN, False),
    (BCPolicy, VEC, gym.spaces.Discrete(3, start=-1), SMALL, False),
    (BCPolicy, DICT, BOX, SMALL, False),
    (BCPolicy, VEC, BOX, {"model": {"hidden": (16,)}, "learn": {"loss": "gaussian"}}, False),
]


@pytest.mark.parametrize("cls,obs_space,action_space,cfg,with_mask", CASES,
                         ids=lambda v: getattr(v, "__name__", None) or type(v).__name__)
def test_the_acting_face_acts_as_the_eval_face(cls, obs_space, action_space, cfg, with_mask):
    policy = cls({**cfg, "seed": 1}, obs_space, action_space)
    _shake(policy, seed=1)
    if isinstance(policy, TD3BCPolicy):  # the data set's statistics are part of the face
        policy.set_obs_normalizer(np.linspace(-1, 1, 5), np.linspace(0.5, 2, 5))
    if isinstance(policy, PPOPolicy) and policy.model.obs_norm is not None:
        policy.model.obs_norm.update(torch.randn(64, 5) * 3 + 1)
    run, inputs, specs = _module_actions(policy, with_mask)
    discrete = not isinstance(action_space, gym.spaces.Box)
    worst = compare(policy, run, inputs, specs, discrete, 1e-6, "sampled observations")
    assert worst <= 1e-6
    actions = run(inputs)
    kwargs = {"action_mask": inputs[MASK_INPUT]} if with_mask else {}
    assert actions.dtype == policy.eval_mode.forward(policy_obs(inputs, specs), **kwargs)[
        "action"].dtype
    if discrete:  # the check means something: the actions vary with the observation
        assert len(np.unique(actions.reshape(len(actions), -1), axis=0)) > 1
    else:
        assert (actions >= BOX.low).all() and (actions <= BOX.high).all()


def test_masked_actions_are_never_chosen():
    policy = DQNPolicy({**SMALL, "seed": 1}, VEC, gym.spaces.Discrete(4))
    run, inputs, _ = _module_actions(policy, True, n=500)
    one = np.zeros((500, 4), bool)
    one[np.arange(500), np.arange(500) % 4] = True  # exactly one valid action per row
    inputs[MASK_INPUT] = one
    assert (run(inputs) == np.arange(500) % 4).all()


def test_a_file_that_acts_otherwise_is_refused_naming_the_max_difference():
    policy = TD3Policy({**TWIN, "seed": 0}, VEC, BOX)
    run, inputs, specs = _module_actions(policy, False)
    off = lambda x: run(x) + np.float32(3e-4)  # noqa: E731
    with pytest.raises(ExportError, match=r"max difference 0\.0003"):
        compare(policy, off, inputs, specs, False, 1e-5, "sampled observations")
    dqn = DQNPolicy({**SMALL, "seed": 0}, VEC, gym.spaces.Discrete(4))
    run, inputs, specs = _module_actions(dqn, False)
    flipped = lambda x: (run(x) + 1) % 4  # noqa: E731
    with pytest.raises(ExportError, match="300 of 300 discrete actions differ"):
        compare(dqn, flipped, inputs, specs, True, 0.0, "sampled observations")


@pytest.mark.parametrize("cls,what", [(PPOLSTMPolicy, "recurrent"), (R2D2Policy, "recurrent"),
                                      (MAPPOPolicy, "multi-agent"),
                                      (RandomPolicy, "no deterministic acting face")])
def test_recurrent_multi_agent_and_unknown_policies_are_refused_in_one_line(cls, what):
    reason = refusal(cls)
    assert what in reason and "\n" not in reason


def test_a_mask_input_for_a_policy_without_masks_is_refused():
    policy = SACPolicy({**TWIN, "seed": 0}, VEC, BOX)
    with pytest.raises(ExportError, match="does not act on action masks"):
        acting_module(policy, True)


def test_a_mask_in_the_observation_is_the_mask_input_not_an_observation_input():
    space = gym.spaces.Dict({"action_mask": gym.spaces.MultiBinary(4),
                             "pos": gym.spaces.Box(-1.0, 1.0, (2,), np.float32),
                             "inner": gym.spaces.Dict({"v": gym.spaces.Discrete(3)})})
    policy = PPOPolicy({**SMALL, "seed": 1}, space, gym.spaces.Discrete(4))
    _shake(policy, seed=1)
    run, inputs, specs = _module_actions(policy, True)
    assert [s.name for s in specs] == ["inner/v", "pos"]
    assert compare(policy, run, inputs, specs, True, 0.0, "sampled observations") == 0.0
