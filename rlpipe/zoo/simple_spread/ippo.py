"""IPPO on MPE simple_spread: as simple-spread-mappo, but each agent's critic sees only its own
observation (de Witt et al. 2020; parameters shared, with an agent id)."""
from typing import Any, Dict

from rlpipe.policies import IPPOPolicy
from rlpipe.pipelines.onpolicy import resolve_config, run_onpolicy

from ._common import REQUIRES, spread_config

POLICY = IPPOPolicy
config: Dict[str, Any] = spread_config()


def main(cfg: Any) -> Dict[str, Any]:
    return run_onpolicy(cfg, IPPOPolicy)
