"""MAPPO on MPE simple_spread with continuous actions (`continuous_actions=True`: each agent
pushes with a Box(0, 1, (5,)) force: no-op, left, right, down, up), a Gaussian shared actor.

The second PettingZoo task of issue 16: SISL's waterworld and multiwalker need pymunk, which
is not among rlpipe's extras; simple_spread's continuous form needs only mpe2 and shares the
reward scale, so its returns compare with the discrete entries'."""
from typing import Any, Dict

from rlpipe.policies import MAPPOPolicy
from rlpipe.zoo._onpolicy import resolve_config, run_onpolicy

from ._common import REQUIRES, spread_config

POLICY = MAPPOPolicy
config: Dict[str, Any] = spread_config(continuous=True)


def main(cfg: Any) -> Dict[str, Any]:
    return run_onpolicy(cfg, MAPPOPolicy)
