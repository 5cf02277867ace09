"""MAPPO on MPE simple_spread with continuous actions (`continuous_actions=True`: each agent
pushes with a Box(0, 1, (5,)) force: no-op, left, right, down, up), a Gaussian shared actor.

Continuous actions on the task of the discrete entries: it needs only mpe2 and shares their
reward scale, so its returns compare with theirs. The continuous task with agents that leave
early is `multiwalker-mappo` (SISL, Box2D)."""
from typing import Any, Dict

from rlpipe.policies import MAPPOPolicy
from rlpipe.pipelines.onpolicy import run_onpolicy
from rlpipe.zoo.registry import Entry

from ._common import REQUIRES, spread_config

config: Dict[str, Any] = spread_config(continuous=True)

ENTRY = Entry(name="simple-spread-continuous-mappo", policy_cls=MAPPOPolicy, config=config,
              runner=run_onpolicy, requires=REQUIRES, doc=__doc__)


if __name__ == "__main__":
    print(ENTRY.run(ENTRY.resolve()))
