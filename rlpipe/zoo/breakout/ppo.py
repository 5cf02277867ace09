"""PPO on Atari Breakout (``atari-breakout``: 84x84 grey frames, a stack of 4, Nature CNN).

Published settings (``_atari_settings.py``): rl-zoo3's run of them scores 398 after 10M env
steps. Stops at a mean eval return of 350.
"""
from typing import Any, Dict

from rlpipe.policies import PPOPolicy
from rlpipe.zoo._atari_settings import ppo_config
from rlpipe.pipelines.onpolicy import run_onpolicy
from rlpipe.zoo.registry import Entry


config: Dict[str, Any] = ppo_config("breakout", stop_value=350)

ENTRY = Entry(name="breakout-ppo", policy_cls=PPOPolicy, config=config,
              runner=run_onpolicy, requires={"ale_py": "atari"}, doc=__doc__)


if __name__ == "__main__":
    print(ENTRY.run(ENTRY.resolve()))
