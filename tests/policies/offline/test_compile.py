"""`policy.learn.compile`: IQL, TD3+BC and CQL (and SAC and TD3) run their losses (and the backward autograd
derives from them) through torch.compile and learn what the eager policies learn, to float
tolerance; their checkpoints are the eager ones' (same keys) and move between the two."""
import gymnasium as gym
import numpy as np
import pytest
import torch

from rlpipe.policies import CQLPolicy, IQLPolicy, SACPolicy, TD3BCPolicy, TD3Policy

OBS = gym.spaces.Box(-np.inf, np.inf, (3,), np.float32)
ACT = gym.spaces.Box(-2.0, 2.0, (1,), np.float32)
CASES = {
    "iql": (IQLPolicy, {"model": {"value_hidden": (16, 16)}}),
    "td3-bc": (TD3BCPolicy, {}),
    # the Lagrange multiplier's own loss, the max backup and the cloning warm start
    "cql": (CQLPolicy, {"learn": {"lagrange_threshold": 1.0, "max_q_backup": True,
                                  "bc_steps": 2, "cql_n_actions": 3}}),
    # the online policies they build on, whose update functions they inherit in part
    "sac": (SACPolicy, {}),
    "td3": (TD3Policy, {}),
}


def make(algo, compile_, seed=0):
    cls, cfg = CASES[algo]
    model = {"actor_hidden": (16, 16), "critic_hidden": (16, 16), **cfg.get("model", {})}
    learn = {"compile": compile_, **cfg.get("learn", {})}
    return cls({**cfg, "seed": seed, "model": model, "learn": learn}, OBS, ACT)


def batches(n, rows=32):
    rng = np.random.default_rng(0)
    return [{"obs": rng.normal(size=(rows, 3)).astype(np.float32),
             "action": rng.uniform(-2, 2, (rows, 1)).astype(np.float32),
             "reward": rng.normal(size=rows).astype(np.float32),
             "next_obs": rng.normal(size=(rows, 3)).astype(np.float32),
             "terminated": np.arange(rows) % 7 == 0} for _ in range(n)]


def keys(state, path=""):
    """Every key of a nested state, as paths."""
    if isinstance(state, dict):
        return {p for k, v in state.items() for p in keys(v, f"{path}/{k}")} | {path}
    return {path}


def assert_close_states(a, b, path=""):
    if isinstance(a, dict):
        for k in a:
            assert_close_states(a[k], b[k], f"{path}/{k}")
    elif isinstance(a, torch.Tensor) and a.is_floating_point():
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5, msg=path)


@pytest.mark.slow
@pytest.mark.parametrize("algo", list(CASES))
def test_compiled_steps_match_eager_and_checkpoints_move_between_them(algo):
    eager, compiled = make(algo, False), make(algo, True)
    # a second compiled policy, other weights: it shares the compiled code, not the weights
    other_eager, other_compiled = make(algo, False, seed=2), make(algo, True, seed=2)
    data = batches(6)
    for i, batch in enumerate(data[:4]):
        if i == 3:  # an n-step batch brings its own discount
            batch = {**batch, "discount": np.full(32, 0.5, np.float32)}
        for e, c in ((eager, compiled), (other_eager, other_compiled)):
            out_eager, out_compiled = e.learn_mode.forward(batch), c.learn_mode.forward(batch)
            assert out_compiled.keys() == out_eager.keys()
            for k in out_eager:
                assert out_compiled[k] == pytest.approx(out_eager[k], rel=1e-4, abs=1e-5), (i, k)
    assert_close_states(other_compiled.state_dict(), other_eager.state_dict())
    state = compiled.state_dict()
    assert keys(state) == keys(eager.state_dict())
    assert not any("_orig_mod" in k for k in keys(state))
    assert_close_states(state, eager.state_dict())

    # a compiled run's checkpoint resumes eagerly, and an eager one's compiled
    resumed_eager, resumed_compiled = make(algo, False, seed=1), make(algo, True, seed=1)
    resumed_eager.load_state_dict(state)
    resumed_compiled.load_state_dict(eager.state_dict())
    for batch in data[4:]:
        expected = compiled.learn_mode.forward(batch)
        for out in (resumed_eager.learn_mode.forward(batch),
                    resumed_compiled.learn_mode.forward(batch)):
            assert out == pytest.approx(expected, rel=1e-4, abs=1e-5)
    assert_close_states(resumed_eager.state_dict(), compiled.state_dict())
    assert_close_states(resumed_compiled.state_dict(), compiled.state_dict())


def test_compilation_is_off_by_default_and_unavailable_is_one_clear_error(monkeypatch):
    for algo in CASES:
        cls, _ = CASES[algo]
        assert cls({}, OBS, ACT).cfg.learn.compile is False
    import torch._inductor.config

    monkeypatch.setattr(torch._inductor.config.cpp, "cxx", (None, "rlpipe-no-such-compiler"))
    for algo in CASES:
        with pytest.raises(RuntimeError) as info:
            make(algo, True)
        message = str(info.value)
        assert "rlpipe-no-such-compiler" in message and "policy.learn.compile=False" in message
        assert "\n" not in message
