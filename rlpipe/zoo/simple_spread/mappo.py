"""MAPPO on MPE simple_spread (3 agents, discrete actions): a shared actor with an agent id
and a centralised critic on the env's global state; Yu et al. 2022's MPE settings at a
2-core budget (see _common.py). benchmarks/marl.py measures it against random and IPPO."""
from typing import Any, Dict

from rlpipe.policies import MAPPOPolicy
from rlpipe.pipelines.onpolicy import run_onpolicy
from rlpipe.zoo.registry import Entry

from ._common import REQUIRES, spread_config

config: Dict[str, Any] = spread_config()

ENTRY = Entry(name="simple-spread-mappo", policy_cls=MAPPOPolicy, config=config,
              runner=run_onpolicy, requires=REQUIRES, doc=__doc__)


if __name__ == "__main__":
    print(ENTRY.run(ENTRY.resolve()))
