"""MAPPO on MPE simple_spread (3 agents, discrete actions): a shared actor with an agent id
and a centralised critic on the env's global state; Yu et al. 2022's MPE settings at a
2-core budget (see _common.py). benchmarks/marl.py measures it against random and IPPO."""
from typing import Any, Dict

from rlpipe.policies import MAPPOPolicy
from rlpipe.pipelines.onpolicy import resolve_config, run_onpolicy

from ._common import REQUIRES, spread_config

POLICY = MAPPOPolicy
config: Dict[str, Any] = spread_config()


def main(cfg: Any) -> Dict[str, Any]:
    return run_onpolicy(cfg, MAPPOPolicy)
