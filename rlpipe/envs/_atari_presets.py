"""The one place that says how Atari frames are preprocessed, for both backends of the
``atari-*`` short names: EnvPool (``_envpool.py``, mode "envpool" or "auto" where it is
installed) and ale-py (``_atari.py`` and ``_atari_lives.py``, every other mode).

The DQN paper's (Mnih et al. 2015) 4-frame skip, 84x84 grey, a stack of 4, up to 30 no-op
starts, episodes cut at 27,000 steps (108k frames), no sticky actions (EnvPool's default;
gymnasium's ALE v5 ids use 0.25 unless told otherwise). In games whose actions include FIRE
(Breakout), FIRE is pressed after each reset and each lost life, so that a policy that never
presses it (an untrained greedy one) still sees its game end.

"eval": real rewards and whole games. "train" adds the papers' training-only tricks: rewards
clipped to their sign, and a lost life ending the transition (``terminated``) without resetting
the game. In both, the episode reports (``StepResult.episodes``) are those of the real game:
its score summed over all lives, reported when the game is over or cut.

What the backends still do differently: EnvPool takes the max over the last two frames of each
skip and resizes with OpenCV's area filter, its no-op starts count frames (and it plays them
after each lost life too), and with "train" its frame stack runs on across a lost life; ale-py
returns the last frame, which rlpipe averages over 2x2 blocks (no OpenCV needed), its no-op
starts count agent steps of 4 frames (at game starts only), and with "train" the stack restarts
(the frame after FIRE repeated) at each life, as SB3's frame stack does.
"""
from __future__ import annotations

from typing import Any

ATARI_COMMON: dict[str, Any] = dict(
    frame_skip=4, img_height=84, img_width=84, gray_scale=True, stack_num=4, noop_max=30,
    max_episode_steps=27_000, repeat_action_probability=0.0, use_fire_reset=True,
)
ATARI_PRESETS: dict[str, dict[str, Any]] = {
    "eval": {**ATARI_COMMON, "reward_clip": False, "episodic_life": False},
    "train": {**ATARI_COMMON, "reward_clip": True, "episodic_life": True},
}
PRESET_KEY = "atari_preset"  # env_kwargs key choosing a preset


def preset(name: str, where: str) -> dict[str, Any]:
    """The preset called `name`; an unknown one is a ValueError naming `where` it was asked."""
    if name not in ATARI_PRESETS:
        raise ValueError(f"{where}: env_kwargs[{PRESET_KEY!r}] must be one of "
                         f"{sorted(ATARI_PRESETS)}, got {name!r}")
    return ATARI_PRESETS[name]
