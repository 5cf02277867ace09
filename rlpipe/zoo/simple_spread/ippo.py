"""IPPO on MPE simple_spread: as simple-spread-mappo, but each agent's critic sees only its own
observation (de Witt et al. 2020; parameters shared, with an agent id)."""
from typing import Any, Dict

from rlpipe.policies import IPPOPolicy
from rlpipe.pipelines.onpolicy import run_onpolicy
from rlpipe.zoo.registry import Entry

from ._common import REQUIRES, spread_config

config: Dict[str, Any] = spread_config()

ENTRY = Entry(name="simple-spread-ippo", policy_cls=IPPOPolicy, config=config,
              runner=run_onpolicy, requires=REQUIRES, doc=__doc__)


if __name__ == "__main__":
    print(ENTRY.run(ENTRY.resolve()))
