"""PPO on Atari Pong (``atari-pong``: 84x84 grey frames, a stack of 4, Nature CNN).

Published settings (``_atari_settings.py``): rl-zoo3's run of them scores 21.0 after 10M env
steps. Stops at a mean eval return of 20.
"""
from typing import Any, Dict

from rlpipe.policies import PPOPolicy
from rlpipe.zoo._atari_settings import ppo_config
from rlpipe.pipelines.onpolicy import resolve_config, run_onpolicy

POLICY = PPOPolicy
REQUIRES = {"ale_py": "atari"}

config: Dict[str, Any] = ppo_config("pong", stop_value=20)


def main(cfg: Any) -> Dict[str, Any]:
    return run_onpolicy(cfg, PPOPolicy)


if __name__ == "__main__":
    print(main(resolve_config(PPOPolicy, config)))
