"""replay.frames: the off-policy pipeline picks FrameReplayBuffer for uint8 frame stacks (issue #18)."""
import gymnasium as gym
import numpy as np
import pytest

from rlpipe.data import FrameReplayBuffer, PrioritizedFrameReplayBuffer, ReplayBuffer
from rlpipe.policies import DQNPolicy
from rlpipe.pipelines.offpolicy import make_buffer, resolve_config

FRAMES = gym.spaces.Box(0, 255, (4, 84, 84), np.uint8)
VECTOR = gym.spaces.Box(-1, 1, (4,), np.float32)


@pytest.mark.parametrize("frames, space, kind", [
    (None, FRAMES, FrameReplayBuffer), (None, VECTOR, ReplayBuffer),
    (False, FRAMES, ReplayBuffer), (True, FRAMES, FrameReplayBuffer),
    (None, gym.spaces.Box(0, 255, (84, 84, 4), np.uint8), FrameReplayBuffer),
    (None, gym.spaces.Box(0, 1, (4, 84, 84), np.float32), ReplayBuffer),
])
def test_make_buffer_picks_frames_for_uint8_stacks(frames, space, kind):
    cfg = resolve_config(DQNPolicy, {}, {"replay": {"frames": frames}})
    assert type(make_buffer(cfg, space)) is kind


def test_prioritized_frames_and_refusal():
    cfg = resolve_config(DQNPolicy, {}, {"replay": {"frames": True, "prioritized": True}})
    assert type(make_buffer(cfg, FRAMES)) is PrioritizedFrameReplayBuffer
    with pytest.raises(ValueError, match="replay.frames=True"):
        make_buffer(cfg, VECTOR)
