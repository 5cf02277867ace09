"""The end-of-run handshake between the learner and the evaluator process, with the learner's
two publications of its last iteration forced into the order that once hid the final mark.

In async mode the learner's `PublishWeights` (every `publish_every` iterations) and the
final-evaluation request (which publishes the final weights) run in two threads of the last
iteration. The hub keeps only the newest version of the weights, so if the periodic one
reaches the hub after the final one while unmarked, an evaluator that polls after both never
learns that the weights are final: it waits for newer weights that never come, and the
learner waits for an evaluation that never comes (until FINAL_EVAL_TIMEOUT_S).
"""
import threading

import pytest
from easydict import EasyDict

from rlpipe.contexts import OnlineRLContext
from rlpipe.engine import parallel
from rlpipe.envs import EnvManager
from rlpipe.middleware.exchange import WEIGHTS, Exchange
from rlpipe.policies import DQNPolicy


class HeldLink:
    """The learner's link, whose unmarked publications wait (up to `hold` s) until a final
    one has reached the hub: the interleaving of the race, forced."""

    def __init__(self, link, hold):
        self._link = link
        self.hold = hold
        self.unmarked_waiting = threading.Event()
        self.final_in_hub = threading.Event()

    def __getattr__(self, name):
        return getattr(self._link, name)

    def publish(self, name, value, info=None):
        if (info or {}).get("final"):
            version = self._link.publish(name, value, info)
            self.final_in_hub.set()
            return version
        self.unmarked_waiting.set()
        self.final_in_hub.wait(self.hold)
        return self._link.publish(name, value, info)


@pytest.fixture
def links():
    learner, _, evaluator, close = parallel.local_links(collectors=1, evaluator=True)
    yield learner, evaluator
    close()


def _policy(seed):
    cfg = EasyDict(policy=dict(model=dict(hidden=(8,)), learn=dict(update_per_collect=4)))
    env = EnvManager("CartPole-v1", n_envs=1, seed=seed)
    env.close()
    return cfg, DQNPolicy({**cfg.policy, "seed": seed}, env.observation_space, env.action_space)


def test_a_periodic_publication_racing_the_final_one_cannot_hide_the_final_mark(links):
    learner, evaluator = links
    cfg, trained = _policy(0)
    held = HeldLink(learner, hold=0.5)
    exchange = Exchange(cfg, trained, held)
    ctx = OnlineRLContext()
    ctx.train_iter, ctx.env_step = 8, 256  # publish_every is 4: the periodic one is due
    periodic = threading.Thread(target=exchange.send, args=(ctx,))  # the scheduler's thread
    periodic.start()
    assert held.unmarked_waiting.wait(5), "PublishWeights did not publish at train_iter 8"
    exchange.send.publish(ctx, final=True)  # what the final-evaluation request does meanwhile
    periodic.join(5)
    assert not periodic.is_alive()

    # the evaluator process polls only now, after both publications
    _, evaluating = _policy(9)
    evaluator_side = Exchange(cfg, evaluating, evaluator)
    update = evaluator.poll(WEIGHTS)
    assert update.info == {"train_iter": 8, "env_step": 256, "env_episode": 0, "final": True}
    eval_ctx = OnlineRLContext()
    evaluator_side.receive(eval_ctx)
    assert evaluator_side.receive.s.final and eval_ctx.train_iter == 8

