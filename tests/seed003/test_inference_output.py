"""The guide's table: `inference_output` is `Dict[int, Dict]`, "the dict of which the key is
env_id (int), and the value is inference result (Dict)", written by `inferencer`."""
import numpy as np
import torch

from rlpipe import task
from rlpipe.contexts import OnlineRLContext
from rlpipe.engine import contract
from rlpipe.middleware import (OffPolicyLearner, StepCollector, data_pusher, eps_greedy_handler,
                               inferencer, rolloutor)


def _guide_acting(dqn, check, *tail, max_step):
    """The guide's acting lines with `check` between inferencer and rolloutor; the last ctx."""
    cfg, policy, collector_env = dqn.cfg, dqn.policy, dqn.collector_env
    with task.start(async_mode=False, ctx=OnlineRLContext()):
        task.use(eps_greedy_handler(cfg))
        task.use(inferencer(cfg.seed, policy.collect_mode, collector_env))
        task.use(check)
        task.use(rolloutor(policy.collect_mode, collector_env))
        task.use(data_pusher(cfg, dqn.buffer_))
        for middleware in tail:
            task.use(middleware)
        task.run(max_step=max_step)
        return task.ctx


def test_inferencer_writes_one_dict_per_env_id_and_rolloutor_still_records_the_batch(dqn):
    buffer_ = dqn.buffer_
    seen = []

    @contract(reads=("inference_output", "action"))
    def check(ctx):  # what a DI-engine middleware reading the guide's type does
        for env_id, output in ctx.inference_output.items():
            assert isinstance(env_id, int) and isinstance(output, dict)
            assert output["action"] == ctx.action[env_id]
        seen.append(sorted(ctx.inference_output))

    ctx = _guide_acting(dqn, check, max_step=3)
    batch = ctx.inference_output.batch  # the policy's batched output, kept for speed
    assert batch["action"].shape == (2,)
    assert seen == [[0, 1]] * 3
    assert len(buffer_) == 6
    sample = buffer_.sample(6)
    assert set(sample) >= {"obs", "action", "reward", "next_obs"}
    assert np.isin(sample["action"], [0, 1]).all()


def _same_weights(a, b):
    return all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))


def test_the_guides_inferencer_acts_with_the_learners_latest_weights(dqn):
    cfg, policy, buffer_ = dqn.cfg, dqn.policy, dqn.buffer_
    cfg.policy.learn.batch_size = 4
    checks = []

    @contract(reads=("inference_output",))
    def check(ctx):  # after the inferencer: its acting copy holds the learner's weights
        checks.append((policy.learn_mode.train_iter, _same_weights(policy.acting, policy.online)))

    _guide_acting(dqn, check, OffPolicyLearner(cfg, policy.learn_mode, buffer_), max_step=5)
    assert checks[-1][0] > 0  # the learner changed the weights before the last iterations
    assert all(same for _, same in checks)


def test_the_collectors_write_the_guides_inference_output_too(dqn):
    cfg, policy, collector_env = dqn.cfg, dqn.policy, dqn.collector_env
    with task.start(async_mode=False, ctx=OnlineRLContext()):
        task.use(eps_greedy_handler(cfg))
        task.use(StepCollector(cfg, policy.collect_mode, collector_env))
        task.run(max_step=1)
        out = task.ctx.inference_output
        assert sorted(out) == [0, 1]
        assert {int(out[i]["action"]) for i in out} <= {0, 1}
        np.testing.assert_array_equal([out[i]["action"] for i in out], task.ctx.action)
