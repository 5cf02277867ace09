"""A zoo entry that trains on a data set, as an offline entry module is written."""
from rlpipe.pipelines.offline import run_offline
from rlpipe.policies import DQNPolicy
from rlpipe.zoo.registry import Entry

config = {"env": {"id": "CartPole-v1", "stop_value": None},
          "policy": {"learn": {"batch_size": 16}, "eval": {"evaluator": {"n_episode": 2}}}}

ENTRY = Entry(name="cartpole-offline-test", policy_cls=DQNPolicy, config=config,
              runner=run_offline, pipeline="offline", doc=__doc__)
