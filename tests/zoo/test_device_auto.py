"""device="auto" in the Atari and MuJoCo entries: the learner on CUDA where there is one, the
acting copy and the weights shipped to collectors on the CPU (here: everything on the CPU)."""
import gymnasium as gym
import numpy as np
import pytest
import torch

from rlpipe.middleware.exchange import module_weights
from rlpipe.zoo import get_entry

FRAMES = gym.spaces.Box(0, 255, (4, 84, 84), np.uint8)
HOPPER_OBS = gym.spaces.Box(-np.inf, np.inf, (11,), np.float64)
HOPPER_ACT = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
SPACES = {
    "pong-dqn": (FRAMES, gym.spaces.Discrete(6)),
    "breakout-dqn": (FRAMES, gym.spaces.Discrete(4)),
    "pong-ppo": (FRAMES, gym.spaces.Discrete(6)),
    "breakout-ppo": (FRAMES, gym.spaces.Discrete(4)),
    "hopper-sac": (HOPPER_OBS, HOPPER_ACT),
    "halfcheetah-sac": (HOPPER_OBS, HOPPER_ACT),
    "hopper-td3": (HOPPER_OBS, HOPPER_ACT),
    "halfcheetah-ppo": (HOPPER_OBS, HOPPER_ACT),
}
EXPECTED = "cuda" if torch.cuda.is_available() else "cpu"


@pytest.mark.parametrize("name", sorted(SPACES))
def test_auto_learner_device_and_cpu_acting_copies(name):
    entry = get_entry(name)
    cfg = entry.resolve()
    assert cfg.policy.device == "auto" and cfg.env.get("mode", "auto") == "auto"
    obs_space, action_space = SPACES[name]
    policy = entry.policy_cls(cfg.policy, obs_space, action_space)
    assert policy.device.type == EXPECTED
    learner = next(p for m in vars(policy).values() if isinstance(m, torch.nn.Module)
                   and m is not policy.acting for p in m.parameters())
    assert learner.device.type == EXPECTED
    policy.collect_mode.refresh()  # copies the learner's weights into the acting copy
    assert all(p.device.type == "cpu" for p in policy.acting.parameters())
    shipped = module_weights(policy)
    assert shipped and all(t.device.type == "cpu" for state in shipped.values()
                           for t in state.values())
    # the acting copy acts on CPU observations without a device error
    obs = np.stack([obs_space.sample() for _ in range(2)]).astype(obs_space.dtype)
    action = policy.collect_mode.forward(obs)["action"]
    assert len(action) == 2 and all(action_space.contains(np.asarray(a, action_space.dtype))
                                    for a in action)
