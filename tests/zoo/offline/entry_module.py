"""A zoo entry that trains on a data set, as an offline entry module is written."""
from rlpipe.policies import DQNPolicy
from rlpipe.pipelines.offline import run_offline

POLICY = DQNPolicy
PIPELINE = "offline"
config = {"env": {"id": "CartPole-v1", "stop_value": None},
          "policy": {"learn": {"batch_size": 16}, "eval": {"evaluator": {"n_episode": 2}}}}


def main(cfg):
    return run_offline(cfg, POLICY)
