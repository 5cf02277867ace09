"""SAC on MuJoCo HalfCheetah-v5 (needs the [mujoco] extra; stop at a mean eval return of 8000).

The settings of `hopper-sac` (one copy: its config with this env), which are rl-zoo3's for
HalfCheetah too (``hyperparams/sac.yml``; Haarnoja et al. 2018): [256, 256], Adam 3e-4, batch
256, γ 0.99, τ 0.005, automatic α, a 1M-transition replay, 10k uniformly random warm-up steps,
one update per env step. rl-zoo3's run scores 9,535 after 1M env steps (HalfCheetah-v3).
"""
import copy
from typing import Any, Dict

from rlpipe.policies import SACPolicy
from rlpipe.pipelines.offpolicy import run_offpolicy
from rlpipe.zoo.hopper import sac as hopper_sac
from rlpipe.zoo.registry import Entry


config: Dict[str, Any] = copy.deepcopy(hopper_sac.config)
config["env"].update(id="HalfCheetah-v5", stop_value=8000)

ENTRY = Entry(name="halfcheetah-sac", policy_cls=SACPolicy, config=config,
              runner=run_offpolicy, requires=hopper_sac.ENTRY.requires, doc=__doc__)


if __name__ == "__main__":
    print(ENTRY.run(ENTRY.resolve()))
