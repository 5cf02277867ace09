"""The guide's table: `inference_output` is `Dict[int, Dict]`, "the dict of which the key is
env_id (int), and the value is inference result (Dict)", written by `inferencer`."""
import numpy as np

from rlpipe import task
from rlpipe.contexts import OnlineRLContext
from rlpipe.engine import contract
from rlpipe.middleware import data_pusher, eps_greedy_handler, inferencer, rolloutor


def test_inferencer_writes_one_dict_per_env_id_and_rolloutor_still_records_the_batch(dqn):
    cfg, policy, collector_env, buffer_ = dqn.cfg, dqn.policy, dqn.collector_env, dqn.buffer_
    seen = []

    @contract(reads=("inference_output", "action"))
    def check(ctx):  # what a DI-engine middleware reading the guide's type does
        for env_id, output in ctx.inference_output.items():
            assert isinstance(env_id, int) and isinstance(output, dict)
            assert output["action"] == ctx.action[env_id]
        seen.append(sorted(ctx.inference_output))

    with task.start(async_mode=False, ctx=OnlineRLContext()):
        task.use(eps_greedy_handler(cfg))
        task.use(inferencer(cfg.seed, policy.collect_mode, collector_env))
        task.use(check)
        task.use(rolloutor(policy.collect_mode, collector_env))
        task.use(data_pusher(cfg, buffer_))
        task.run(max_step=3)
        batch = task.ctx.inference_output.batch  # the policy's batched output, kept for speed
        assert batch["action"].shape == (2,)
    assert seen == [[0, 1]] * 3
    assert len(buffer_) == 6
    sample = buffer_.sample(6)
    assert set(sample) >= {"obs", "action", "reward", "next_obs"}
    assert np.isin(sample["action"], [0, 1]).all()
