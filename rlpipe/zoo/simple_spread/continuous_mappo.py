"""MAPPO on MPE simple_spread with continuous actions (`continuous_actions=True`: each agent
pushes with a Box(0, 1, (5,)) force: no-op, left, right, down, up), a Gaussian shared actor.

Continuous actions on the task of the discrete entries: it needs only mpe2 and shares their
reward scale, so its returns compare with theirs. The continuous task with agents that leave
early is `multiwalker-mappo` (SISL, Box2D)."""
from typing import Any, Dict

from rlpipe.policies import MAPPOPolicy
from rlpipe.pipelines.onpolicy import resolve_config, run_onpolicy

from ._common import REQUIRES, spread_config

POLICY = MAPPOPolicy
config: Dict[str, Any] = spread_config(continuous=True)


def main(cfg: Any) -> Dict[str, Any]:
    return run_onpolicy(cfg, MAPPOPolicy)
