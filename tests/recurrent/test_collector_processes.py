"""--collectors with a recurrent policy: each collector process keeps its own hidden states,
zeroes them where an episode starts and carries them otherwise, also from one batch it sends to
the next (the learner sees that in the records' `state` and `first`)."""
import numpy as np
import pytest

from rlpipe.engine import parallel

from . import collector_mains

LENGTH = 4  # RememberFirst's episode length in the main: episodes start every 4 vector steps


def test_each_collector_process_resets_its_states_at_episode_starts_and_carries_them_otherwise():
    n_envs, steps_per_batch = 2, 3  # 3 steps per batch: episodes cross batch boundaries
    rollouts = parallel.launch(collector_mains.counting_collectors, collectors=2, backend="local",
                               args=(8, n_envs, n_envs * steps_per_batch), start_method="fork")
    assert len(rollouts) == 8
    carried = 0
    for steps in rollouts:
        assert len(steps) == steps_per_batch
        first = np.stack([s["first"] for s in steps])                       # [T, N]
        count = np.stack([s["state"]["count"][:, 0] for s in steps])         # [T, N]
        cue = np.stack([s["state"]["memory"]["first_obs"][:, 0] for s in steps])
        obs = np.stack([s["obs"][:, 0] for s in steps])
        for env in range(n_envs):
            starts = np.flatnonzero(first[:, env])
            # steps since the episode began: 0 at a start, else one more than the step before;
            # before this batch's first start, the count the previous batch left (carried)
            begin = starts[0] if len(starts) else steps_per_batch
            before = LENGTH - begin
            for t in range(steps_per_batch):
                since = t - starts[starts <= t][-1] if (starts <= t).any() else before + t
                assert count[t, env] == since, (t, env, count[:, env], first[:, env])
                if first[t, env]:
                    assert cue[t, env] == 0.0  # zeroed before the policy saw it
                else:
                    assert cue[t, env] in (-1.0, 1.0)  # the episode's cue, remembered
            carried += int(not first[0, env])
            # the cue seen at a start is the one carried on through that episode
            for t in starts:
                later = np.arange(t + 1, min(t + LENGTH, steps_per_batch))
                assert (cue[later, env] == obs[t, env]).all()
        # the policy names the remembered cue: every episode end it reaches pays 1
        reward = np.stack([s["reward"] for s in steps])
        ends = np.stack([s["terminated"] for s in steps])
        assert (reward[ends] == 1.0).all()
    assert carried > 0  # some batches began mid-episode, with a carried state


def _collected(policy, env, n_sample):
    from rlpipe.contexts import OnlineRLContext
    from rlpipe.engine import Task
    from rlpipe.middleware import StepCollector

    cfg = {"policy": {"collect": {"n_sample": n_sample, "random_collect_size": 0}}}
    task = Task()
    with task.start(ctx=OnlineRLContext()):
        task.use(StepCollector(cfg, policy.collect_mode, env))
        task.run(max_step=1)
        return task.ctx.trajectories


@pytest.mark.parametrize("name", ["ppo", "ppo-lstm"])
def test_a_learner_that_collects_nothing_bootstraps_with_its_own_newest_critic(name):
    """The learner of a distributed on-policy run never acts, so nothing refreshes its acting
    copy but gae_estimator itself: its values must come from the learner's trained network,
    not from the acting copy's initial weights."""
    import torch

    from rlpipe.contexts import OnlineRLContext
    from rlpipe.envs import EnvManager
    from rlpipe.middleware import gae_estimator
    from rlpipe.policies import get_policy

    env = EnvManager("rlpipe/CartPoleNoVel-v1", n_envs=2, seed=0, mode="sync")
    cls = get_policy(name)
    learner = cls({"seed": 0}, env.observation_space, env.action_space)
    steps = _collected(learner, env, 16)
    steps[-1]["truncated"] = np.ones(2, bool)  # feed-forward PPO bootstraps from V(next_obs) here
    env.close()
    with torch.no_grad():  # the learner trains: its network moves, its acting copy does not
        for p in learner.model.parameters():
            p.add_(0.05 * torch.randn_like(p))
    reference = cls({"seed": 0}, env.observation_space, env.action_space)
    reference.model.load_state_dict(learner.model.state_dict())
    reference.collect_mode.refresh()
    cfg = {"policy": {"learn": dict(learner.cfg.learn)}}

    def estimate(policy):
        ctx = OnlineRLContext()
        ctx.trajectories = steps
        gae_estimator(cfg, policy.collect_mode)(ctx)
        data = ctx.train_data
        return data["rollout"].data["advantage"] if "rollout" in data else data["adv"]

    np.testing.assert_allclose(estimate(learner), estimate(reference), rtol=1e-5, atol=1e-6)


def test_a_collector_process_gives_the_learner_the_batches_one_process_builds():
    """#15: the same LSTM-PPO run (seeds, weights) in one process and with one collector
    process: every GAE batch the learner trains on is the same, field by field (actions and
    log-probs from the weights the learner trained last, recorded states and `first` flags,
    values, bootstrap values, advantages, returns). Before the fix, the collector acted ahead
    on old weights and the learner bootstrapped with its initial critic."""
    iterations, seed = 4, 3
    alone = collector_mains.lstm_ppo_batches(iterations, seed)
    # spawn: a child forked from a process whose torch thread pool has run can hang in torch
    distributed = parallel.launch(collector_mains.lstm_ppo_batches, collectors=1, backend="local",
                                  args=(iterations, seed), start_method="spawn")
    assert len(alone) == len(distributed) == iterations
    for i, (one, two) in enumerate(zip(alone, distributed)):
        assert sorted(one) == sorted(two), i
        for key in sorted(one):
            _assert_tree_close(one[key], two[key], f"batch {i}, {key}")


def _assert_tree_close(a, b, where):
    if isinstance(a, dict):
        assert sorted(a) == sorted(b), where
        for k in a:
            _assert_tree_close(a[k], b[k], f"{where}.{k}")
        return
    np.testing.assert_allclose(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64),
                               rtol=1e-5, atol=1e-5, err_msg=where)


def test_recurrent_gae_takes_values_and_bootstraps_from_the_same_critic():
    """A rollout acted with older weights (one of several collector processes): its recorded
    values are replaced by the learner's critic's, the one GAE bootstraps with."""
    import torch

    from rlpipe.contexts import OnlineRLContext
    from rlpipe.envs import EnvManager
    from rlpipe.middleware import gae_estimator
    from rlpipe.policies import get_policy

    env = EnvManager("rlpipe/CartPoleNoVel-v1", n_envs=2, seed=0, mode="sync")
    learner = get_policy("ppo-lstm")({"seed": 0}, env.observation_space, env.action_space)
    steps = _collected(learner, env, 16)  # recorded with the initial critic
    env.close()
    with torch.no_grad():
        for p in learner.model.parameters():
            p.add_(0.05 * torch.randn_like(p))
    ctx = OnlineRLContext()
    ctx.trajectories = steps
    gae_estimator({"policy": {"learn": dict(learner.cfg.learn)}}, learner.collect_mode)(ctx)
    store = ctx.train_data["rollout"]
    recorded = np.stack([s["value"] for s in steps])
    newest = learner.collect_mode.rollout_values(store.data)
    assert not np.allclose(recorded, newest, atol=1e-3)
    np.testing.assert_allclose(store.data["value"], newest, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(store.data["return"] - store.data["advantage"], newest,
                               rtol=1e-5, atol=1e-5)
