"""PPO on Atari Pong (``atari-pong``: 84x84 grey frames, a stack of 4, Nature CNN).

Published settings (``_atari_settings.py``): rl-zoo3's run of them scores 21.0 after 10M env
steps. Stops at a mean eval return of 20.
"""
from typing import Any, Dict

from rlpipe.policies import PPOPolicy
from rlpipe.zoo._atari_settings import ppo_config
from rlpipe.pipelines.onpolicy import run_onpolicy
from rlpipe.zoo.registry import Entry


config: Dict[str, Any] = ppo_config("pong", stop_value=20)

ENTRY = Entry(name="pong-ppo", policy_cls=PPOPolicy, config=config,
              runner=run_onpolicy, requires={"ale_py": "atari"}, doc=__doc__)


if __name__ == "__main__":
    print(ENTRY.run(ENTRY.resolve()))
