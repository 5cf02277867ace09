"""A port of DI-engine's `ding/example/r2d2.py` in its structure: n-step enhancer, then
`data_pusher(cfg, buffer_, group_by_env=True)`, then `OffPolicyLearner` on a buffer that cuts
sequences per env when it samples (`StepSequenceBuffer`). Tiny budget."""
import logging

import numpy as np
import pytest

from rlpipe import set_pkg_seed, task
from rlpipe.contexts import OnlineRLContext
from rlpipe.data import ReplayBuffer, SequenceReplayBuffer, StepSequenceBuffer
from rlpipe.envs import EnvManager
from rlpipe.middleware import (CkptSaver, OffPolicyLearner, StepCollector, data_pusher,
                               eps_greedy_handler, interaction_evaluator, nstep_reward_enhancer,
                               termination_checker)
from rlpipe.policies import R2D2Policy
from rlpipe.zoo import get_entry


def tiny_cfg(run_dir):
    cfg = get_entry("cartpole-novel-r2d2").resolve()
    cfg.run_dir = str(run_dir)
    cfg.env.n_envs, cfg.env.eval_n_envs = 3, 2
    cfg.policy.model.hidden, cfg.policy.model.core_size = (16,), 16
    cfg.policy.learn.update(batch_size=8, burn_in=2, seq_len=6, update_per_collect=2)
    cfg.policy.collect.n_sample = 48
    cfg.policy.eval.evaluator.update(eval_freq=10, n_episode=2)
    cfg.replay.capacity = 400
    return cfg


def r2d2_main(cfg, async_mode=False):
    """DI-engine's r2d2.py, in its order."""
    logging.getLogger().setLevel(logging.INFO)
    with task.start(async_mode=async_mode, ctx=OnlineRLContext()):
        collector_env = EnvManager(cfg.env.id, n_envs=cfg.env.n_envs, seed=cfg.seed)
        evaluator_env = EnvManager(cfg.env.id, n_envs=cfg.env.eval_n_envs, seed=cfg.seed)

        set_pkg_seed(cfg.seed, use_cuda=False)

        buffer_ = StepSequenceBuffer(cfg.replay.capacity, cfg.policy.learn.seq_len,
                                     cfg.policy.learn.burn_in)
        policy = R2D2Policy(cfg.policy, collector_env.observation_space, collector_env.action_space)

        task.use(interaction_evaluator(cfg, policy.eval_mode, evaluator_env))
        task.use(eps_greedy_handler(cfg))
        task.use(StepCollector(cfg, policy.collect_mode, collector_env))
        task.use(nstep_reward_enhancer(cfg))
        task.use(data_pusher(cfg, buffer_, group_by_env=True))
        task.use(OffPolicyLearner(cfg, policy.learn_mode, buffer_))
        task.use(CkptSaver(cfg, policy, train_freq=100))
        task.use(termination_checker(max_env_step=cfg.max_env_step))
        task.run()
        train_iter = task.ctx.train_iter
    collector_env.close()
    evaluator_env.close()
    return policy, buffer_, train_iter


def _check_windows(batch, burn_in):
    """Each window is one env's consecutive steps of one episode; the mask marks the rest."""
    mask = batch["mask"]
    assert mask[:, :burn_in + 1].all()  # every window has a step to learn from
    for b in range(len(mask)):
        k = int(mask[b].sum())
        assert mask[b, :k].all() and not mask[b, k:].any()  # valid steps come first
        assert (batch["env_id"][b, :k] == batch["env_id"][b, 0]).all()
        assert not batch["first"][b, 1:k].any()  # no episode starts inside the window
        ends = batch["terminated"][b, :k - 1] | batch["truncated"][b, :k - 1]
        assert not ends.any()
        # consecutive steps of one env: each step's next_obs is the next step's obs
        np.testing.assert_array_equal(batch["next_obs"][b, :k - 1], batch["obs"][b, 1:k])
        assert not batch["obs"][b, k:].any()  # padding is zeros


@pytest.mark.parametrize("async_mode", [False, True])
def test_r2d2_example_runs_and_its_windows_stay_in_one_env_and_episode(tmp_path, async_mode):
    cfg = tiny_cfg(tmp_path / "run")
    cfg.max_env_step = 480
    policy, buffer_, train_iter = r2d2_main(cfg, async_mode)
    assert train_iter > 0
    assert (tmp_path / "run" / "ckpt" / "final.pt").is_file()
    assert buffer_.steps == 400  # full: the oldest steps were overwritten
    for _ in range(5):
        _check_windows(buffer_.sample(64), cfg.policy.learn.burn_in)


def _rows(n_envs, steps, episode):
    """Rows as data_pusher(group_by_env=True) pushes them: step-major, episodes of `episode`
    steps, obs counting each env's steps (env e's obs is 1000 e + t)."""
    out = []
    for t in range(steps):
        env = np.arange(n_envs)
        obs = (1000 * env + t).astype(np.float32)[:, None]
        out.append(dict(obs=obs, next_obs=obs + 1, action=np.zeros(n_envs, np.int64),
                        reward=np.ones(n_envs, np.float32),
                        terminated=np.full(n_envs, t % episode == episode - 1),
                        truncated=np.zeros(n_envs, bool), first=np.full(n_envs, t % episode == 0),
                        state={"h": obs.repeat(2, 1)}, env_id=env))
    return {k: np.concatenate([r[k] for r in out]) if k != "state" else
            {"h": np.concatenate([r["state"]["h"] for r in out])} for k in out[0]}


def test_windows_are_cut_per_env_and_the_oldest_steps_are_overwritten():
    buf = StepSequenceBuffer(24, seq_len=3, burn_in=1, seed=0)
    rows = _rows(n_envs=2, steps=16, episode=5)  # 32 rows into 24 slots
    for part in (slice(0, 16), slice(16, 32)):  # steps 0..7, then 8..15
        buf.push({k: ({"h": v["h"][part]} if k == "state" else v[part]) for k, v in rows.items()})
    assert buf.steps == 24
    batch = buf.sample(200)
    _check_windows(batch, 1)
    starts = batch["obs"][:, 0, 0]
    np.testing.assert_array_equal(batch["state"]["h"][:, 0], starts)  # the start's own state
    # episode ends at t = 4, 9, 14: a window from t = 13 holds 13, 14 and stops
    lengths = batch["mask"].sum(1)
    np.testing.assert_array_equal(lengths[starts % 1000 == 13], 2)
    # steps 0..3 of each env were overwritten; 4, 9 and 14 end episodes and 15 is alone in
    # its episode so far: from those, a window would hold nothing after burn-in
    assert set(starts % 1000) == {5, 6, 7, 8, 10, 11, 12, 13}


def test_pushes_that_cannot_be_cut_into_sequences_are_refused():
    buf = StepSequenceBuffer(24, seq_len=3, burn_in=1)
    rows = _rows(2, 4, 5)
    with pytest.raises(KeyError, match=r"lack 'env_id'.*group_by_env=True"):
        buf.push({k: v for k, v in rows.items() if k != "env_id"})
    with pytest.raises(KeyError, match="lack 'state'.*recurrent policy"):
        buf.push({k: v for k, v in rows.items() if k != "state"})
    with pytest.raises(ValueError, match="no window can be cut yet"):
        buf.sample(4)
    # the buffer of sequences cut at the collector names this one for step rows
    with pytest.raises(KeyError, match=r"lack 'mask'.*group_by_env=True\) into a StepSequenceBuffer"):
        SequenceReplayBuffer(24, seq_len=3, burn_in=1).push(rows)


def test_the_learner_refuses_a_recurrent_policy_on_a_buffer_of_transitions(dqn):
    cfg = tiny_cfg("unused")
    policy = R2D2Policy(cfg.policy, dqn.collector_env.observation_space, dqn.collector_env.action_space)
    with pytest.raises(TypeError, match="R2D2Policy learns on sequences.*StepSequenceBuffer"):
        OffPolicyLearner(cfg, policy.learn_mode, ReplayBuffer(100))
