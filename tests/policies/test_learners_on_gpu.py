"""Every learner makes the same learning updates on a second device as on the CPU.

Each learner (DQN, discrete CQL, R2D2, PPO, LSTM-PPO, MAPPO, IPPO, SAC, TD3, TD3+BC, CQL, IQL,
BC) is built twice from one config and seed, once with `device="cpu"` and once with the second
device, and both learn from the same fixed batches. Their learned tensors (weights, targets,
normaliser buffers, temperatures) must start equal (every policy initialises its networks on the
CPU under its seed, then moves them), live on the device asked for, and move alike: for each
tensor, max |w_second − w_cpu| <= 1e-3 · max |w_cpu − w_init| + 1e-6; the statistics
`learn_mode.forward` returns must agree to the same relative tolerance.

The second device is "cuda" (the module is skipped without a GPU); `RLPIPE_TEST_SECOND_DEVICE=cpu`
makes it the CPU, which runs the same harness here, where both policies must then agree exactly.

SAC, CQL, TD3 and TD3+BC draw their learning noise (SAC's action samples, CQL's sampled actions,
TD3's target smoothing) from `torch_rng(self.device, seed, LEARN)` (policies/_twin_critic.py): a
generator ON THE LEARNER DEVICE. On CUDA that is a Philox generator, whose numbers for the same
seed are not those of the CPU's Mersenne Twister, so these four learn from other noise on a GPU.
The exact comparison therefore gives the second policy the draws of a CPU generator in the state
of the CPU policy's (only where the numbers come from changes, not what is done with them); with
the policy's own generator the GPU updates differ for that reason alone (a strict xfail on CUDA),
and only how far they move the weights is compared. PPO, LSTM-PPO and MAPPO/IPPO keep their
learning generator (minibatch order) on the CPU whatever the device; DQN, R2D2, IQL and BC draw
nothing while learning.
"""
import math
import os
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Sequence

import gymnasium as gym
import numpy as np
import pytest
import torch

from rlpipe.policies import (BCPolicy, CQLPolicy, DiscreteCQLPolicy, DQNPolicy, IPPOPolicy,
                             IQLPolicy, MAPPOPolicy, PPOLSTMPolicy, PPOPolicy, R2D2Policy,
                             SACPolicy, TD3BCPolicy, TD3Policy)
from tests.policies.policy_test_helpers import ACT2 as DISCRETE2
from tests.policies.policy_test_helpers import VEC4, random_batch
from tests.policies.test_ppo_lstm_pinned import H as LSTM_CORE
from tests.policies.test_ppo_lstm_pinned import OBS as LSTM_OBS
from tests.policies.test_ppo_lstm_pinned import rollout as lstm_rollout
from tests.policies.test_sac import ACT2 as BOX2
from tests.policies.test_sac import OBS3, one_torch_thread, transitions  # noqa: F401 (autouse fixture)
from tests.r2d2.helpers import ACT as R2D2_ACT
from tests.r2d2.helpers import OBS as R2D2_OBS
from tests.r2d2.helpers import batch as r2d2_batch

SECOND = os.environ.get("RLPIPE_TEST_SECOND_DEVICE", "cuda")
SECOND_TYPE = torch.device(SECOND).type
ON_GPU = SECOND_TYPE != "cpu"

pytestmark = pytest.mark.skipif(SECOND_TYPE == "cuda" and not torch.cuda.is_available(),
                                reason="needs a GPU (RLPIPE_TEST_SECOND_DEVICE=cpu runs the "
                                       "comparison CPU against CPU)")

# The bar is relative, not exact: cuBLAS/cuDNN kernels round and reduce in other orders than the
# CPU's, and cuDNN computes in TF32 by default (torch.backends.cudnn.allow_tf32; a 10-bit
# mantissa, in the LSTM cores of R2D2 and LSTM-PPO here), so the devices agree to float rounding
# of the size of the step, not bit for bit. The tests run in full float32 (`full_float32`), where
# an H200 agreed with the CPU to within 1e-6 on every learned tensor; with cuDNN's TF32 the
# recurrent learners differ by about 1e-3 of how far their weights moved (R2D2: 1.04e-3), which a
# separate test holds to TF32_REL. CPU against CPU the same ops run in the same order: the bar is
# exact there.
REL, ABS = (1e-3, 1e-6) if ON_GPU else (0.0, 0.0)  # weights: |w_2 − w_cpu| <= REL·moved + ABS
STAT_REL, STAT_ABS = (1e-3, 1e-5) if ON_GPU else (0.0, 0.0)  # stats: <= STAT_REL·|s| + STAT_ABS
TF32_REL = 1e-2 if ON_GPU else 0.0  # both bars for the recurrent learners under cuDNN's TF32
STEPS = 4                    # learn calls per comparison
F32 = np.float32




@pytest.fixture(autouse=True)
def full_float32():
    """No TF32 in cuDNN (torch's default is on) nor cuBLAS (off by default): float32 throughout."""
    before = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    yield
    torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = before


@dataclass(frozen=True)
class Learner:
    """How to build one learner on a device, the batches it learns from, and its learned
    tensors."""

    build: Callable[[str], Any]                  # device → policy
    batches: Callable[[Any], List[Any]]          # policy → STEPS fixed learn batches
    modules: Sequence[str]                       # the learner's networks (not the acting copy)
    tensors: Sequence[str] = ()                  # learned tensors outside the networks
    learn_rng: str = ""                          # its learning generator: "" none, "cpu", "device"
    draws_on_device: bool = False                # learn draws noise from that device generator


def learned(policy, learner: Learner) -> Dict[str, torch.Tensor]:
    """Every floating tensor the learner trains or moves (parameters, targets, buffers)."""
    out = {f"{name}.{key}": value.detach()
           for name in learner.modules
           for key, value in getattr(policy, name).state_dict().items()
           if value.is_floating_point()}
    out.update({name: getattr(policy, name).detach() for name in learner.tensors})
    return out


# --- the learners ----------------------------------------------------------------------------

def _dqn(cls, weighted):
    def build(device):
        return cls({"seed": 1, "device": device, "model": {"hidden": (32, 32)},
                    "learn": {"lr": 1e-2, "tau": 0.1}}, VEC4, DISCRETE2)

    def batches(policy):
        out = [random_batch(n=32, seed=i) for i in range(STEPS)]
        if weighted:  # prioritised replay: importance weights in, priorities out
            for i, b in enumerate(out):
                b["weight"] = np.random.default_rng(50 + i).uniform(0.5, 1.0, 32).astype(F32)
        return out

    return Learner(build, batches, ("online", "target"))


def _r2d2(device):
    return R2D2Policy({"seed": 0, "device": device, "model": {"hidden": (32,), "core_size": 32},
                       "learn": {"lr": 1e-3, "batch_size": 4, "burn_in": 3, "seq_len": 5,
                                 "stride": 5, "nstep": 2, "gamma": 0.9, "tau": 0.1}},
                      R2D2_OBS, R2D2_ACT)


def _ppo(action_space):
    def build(device):
        return PPOPolicy({"seed": 0, "device": device,
                          "model": {"hidden": (32, 32), "obs_norm": True},
                          "learn": {"lr": 1e-3, "epoch_per_collect": 2, "batch_size": 16,
                                    "value_clip": 0.2, "entropy_coef": 0.01}},
                         VEC4, action_space)

    def batch(seed, n=48):
        rng = np.random.default_rng(seed)
        if isinstance(action_space, gym.spaces.Discrete):
            action, logp = rng.integers(action_space.n, size=n), -math.log(action_space.n)
        else:
            dim = action_space.shape[0]
            action = rng.normal(size=(n, dim)).astype(F32)
            logp = -0.5 * dim * (1.0 + math.log(2 * math.pi))
        return {"obs": rng.normal(size=(n, 4)).astype(F32), "action": action,
                "logp": (logp + 0.3 * rng.normal(size=n)).astype(F32),
                "adv": rng.normal(size=n).astype(F32), "return": rng.normal(size=n).astype(F32),
                "value": rng.normal(size=n).astype(F32)}

    return Learner(build, lambda policy: [batch(i) for i in range(STEPS)], ("model",),
                   learn_rng="cpu")


def _ppo_lstm(action_space):
    def build(device):
        return PPOLSTMPolicy({"seed": 3, "device": device,
                              "model": {"core_size": LSTM_CORE, "hidden": (32,), "obs_norm": True},
                              "learn": {"lr": 1e-3, "epoch_per_collect": 2, "batch_size": 12,
                                        "chunk_len": 4, "entropy_coef": 0.01,
                                        "value_clip": 0.2}},
                             LSTM_OBS, action_space)

    return Learner(build, lambda policy: [{"rollout": lstm_rollout(policy, seed=i)["rollout"]}
                                          for i in range(STEPS)], ("model",), learn_rng="cpu")


MA_OBS = gym.spaces.Box(-np.inf, np.inf, (4,), F32)
MA_STATE = gym.spaces.Box(-np.inf, np.inf, (6,), F32)


def _mappo(cls):
    def build(device):
        return cls({"seed": 0, "device": device, "model": {"hidden": (32, 32)},
                    "learn": {"epoch_per_collect": 2, "n_minibatches": 2}},
                   MA_OBS, gym.spaces.Discrete(3), n_agents=2, state_space=MA_STATE)

    def batch(seed, n=24):
        rng = np.random.default_rng(seed)
        present = rng.random((n, 2)) < 0.8
        present[:, 0] = True  # agent 1 is absent from some rows
        return {"obs": rng.normal(size=(n, 2, 4)).astype(F32),
                "action": rng.integers(3, size=(n, 2)),
                "logp": (-math.log(3) + 0.3 * rng.normal(size=(n, 2))).astype(F32),
                "adv": rng.normal(size=(n, 2)).astype(F32),
                "return": rng.normal(size=(n, 2)).astype(F32),
                "value": rng.normal(size=(n, 2)).astype(F32),
                "agent_mask": present, "global_state": rng.normal(size=(n, 6)).astype(F32)}

    return Learner(build, lambda policy: [batch(i) for i in range(STEPS)], ("model",),
                   learn_rng="cpu")


def _box_batches(policy):
    """TD transitions (terminations every 7th row); the third brings an n-step discount."""
    out = [transitions(seed=i, terminated=np.arange(32) % 7 == 0) for i in range(STEPS)]
    out[2]["discount"] = np.full(32, 0.5, F32)
    return out


def _continuous(cls, modules, tensors=(), draws=False, model=None, learn=None, after=None):
    def build(device):
        policy = cls({"seed": 0, "device": device,
                      "model": {"actor_hidden": (32, 32), "critic_hidden": (32, 32),
                                **(model or {})},
                      "learn": {"actor_lr": 1e-3, "critic_lr": 1e-3, "tau": 0.1,
                                **(learn or {})}}, OBS3, BOX2)
        if after is not None:
            after(policy)
        return policy

    return Learner(build, _box_batches, modules, tensors, "device", draws)


def _normalised(policy):
    policy.set_obs_normalizer([0.25, -0.5, 1.0], [0.5, 2.0, 1.5])


def _bc(action_space, loss="mse"):
    def build(device):
        return BCPolicy({"seed": 0, "device": device, "model": {"hidden": (32, 32)},
                         "learn": {"lr": 1e-3, "loss": loss}}, OBS3, action_space)

    def batch(seed, n=32):
        rng = np.random.default_rng(seed)
        if isinstance(action_space, gym.spaces.Discrete):
            action = action_space.start + rng.integers(action_space.n, size=n)
        else:
            action = rng.uniform(action_space.low, action_space.high,
                                 (n, action_space.shape[0])).astype(F32)
        return {"obs": rng.normal(size=(n, 3)).astype(F32), "action": action}

    return Learner(build, lambda policy: [batch(i) for i in range(STEPS)], ("net",))


SAC_NETS = ("actor", "critic", "critic_target")
TD3_NETS = ("actor", "actor_target", "critic", "critic_target")
IQL_NETS = ("actor", "critic", "critic_target", "value")

LEARNERS: Dict[str, Learner] = {
    "dqn": _dqn(DQNPolicy, weighted=True),
    "discrete-cql": _dqn(DiscreteCQLPolicy, weighted=False),
    "r2d2": Learner(_r2d2, lambda policy: [r2d2_batch(policy, valid=[8, 6, 8, 7], seed=i)
                                           for i in range(STEPS)], ("online", "target")),
    "ppo-discrete": _ppo(gym.spaces.Discrete(3)),
    "ppo-box": _ppo(gym.spaces.Box(-1.0, 1.0, (2,), F32)),
    "ppo-lstm-discrete": _ppo_lstm(gym.spaces.Discrete(3)),
    "ppo-lstm-box": _ppo_lstm(gym.spaces.Box(-2.0, 2.0, (1,), F32)),
    "mappo": _mappo(MAPPOPolicy),
    "ippo": _mappo(IPPOPolicy),
    "sac": _continuous(SACPolicy, SAC_NETS, ("log_alpha",), draws=True,
                       learn={"alpha_lr": 1e-3}),
    "td3": _continuous(TD3Policy, TD3_NETS, draws=True, learn={"policy_delay": 2}),
    "td3-bc": _continuous(TD3BCPolicy, TD3_NETS, draws=True, learn={"policy_delay": 2},
                          after=_normalised),
    # the Lagrange multiplier's own loss, the max backup and the cloning warm start
    "cql": _continuous(CQLPolicy, SAC_NETS, ("log_alpha", "log_alpha_prime"), draws=True,
                       learn={"alpha_lr": 1e-3, "lagrange_threshold": 1.0, "max_q_backup": True,
                              "bc_steps": 2, "cql_n_actions": 3}),
    "iql-gaussian": _continuous(IQLPolicy, IQL_NETS, model={"value_hidden": (32, 32)},
                                learn={"value_lr": 1e-3, "actor_lr_cosine_steps": 10}),
    "iql-deterministic": _continuous(IQLPolicy, IQL_NETS,
                                     model={"actor": "deterministic", "value_hidden": (32, 32)},
                                     learn={"value_lr": 1e-3}),
    "bc-discrete": _bc(gym.spaces.Discrete(3, start=1)),
    "bc-mse": _bc(BOX2),
    "bc-gaussian": _bc(BOX2, loss="gaussian"),
}
DRAWING = [name for name, learner in LEARNERS.items() if learner.draws_on_device]
RECURRENT = ["r2d2", "ppo-lstm-discrete", "ppo-lstm-box"]  # cuDNN LSTM cores on a GPU


# --- running and comparing -------------------------------------------------------------------

_FACTORIES = ("rand", "randn", "randint", "randperm")


def _draws_from(twin: torch.Generator, generator: torch.Generator, count: List[int]):
    """Wrap torch's random factories: a draw from `generator` (the policy's learning generator
    on the second device) is made from `twin` (a CPU generator) instead and moved to that
    device; every other draw is torch's own."""
    def wrap(factory):
        def draw(*args, **kwargs):
            if kwargs.get("generator") is not generator:
                return factory(*args, **kwargs)
            count[0] += 1
            kwargs.update(generator=twin, device="cpu")
            return factory(*args, **kwargs).to(generator.device)
        return draw
    return {name: wrap(getattr(torch, name)) for name in _FACTORIES}


def train_both(name, monkeypatch, same_draws=True):
    """Build `name` on the CPU and on the second device, check both start from the same weights
    and that the second one's learned tensors live on its device, run STEPS learn calls on each
    with the same batches. With `same_draws`, a learner that draws its learning noise on its
    device gets the CPU policy's draws. Returns (initial, CPU and second learned tensors, the
    two lists of statistics)."""
    learner = LEARNERS[name]
    cpu, second = learner.build("cpu"), learner.build(SECOND)
    init = {k: v.clone() for k, v in learned(cpu, learner).items()}
    start = learned(second, learner)
    assert start.keys() == init.keys()
    for key, value in start.items():
        assert value.device.type == SECOND_TYPE, f"{name}: {key} is on {value.device}"
        assert torch.equal(value.cpu(), init[key]), f"{name}: {key} is initialised differently"
    # where each learner's learning draws come from (the module docstring)
    if learner.learn_rng:
        expected = SECOND_TYPE if learner.learn_rng == "device" else learner.learn_rng
        assert second._learn_rng.device.type == expected
    else:
        assert not hasattr(second, "_learn_rng")

    count = [0]
    replace = {}
    if same_draws and learner.learn_rng == "device":
        twin = torch.Generator().set_state(cpu._learn_rng.get_state())
        replace = _draws_from(twin, second._learn_rng, count)
    cpu_stats, second_stats = [], []
    for cpu_batch, second_batch in zip(learner.batches(cpu), learner.batches(second)):
        cpu_stats.append(cpu.learn_mode.forward(cpu_batch))
        with monkeypatch.context() as patch:
            for attr, fn in replace.items():
                patch.setattr(torch, attr, fn)
            second_stats.append(second.learn_mode.forward(second_batch))
    if replace:  # IQL holds such a generator (for acting's sake) but learns without draws
        assert (count[0] > 0) == learner.draws_on_device, (name, count[0])
    after = learned(second, learner)
    assert all(value.device.type == SECOND_TYPE for value in after.values())
    return init, learned(cpu, learner), after, cpu_stats, second_stats


def assert_moved_alike(name, init, cpu, second, rel=None):
    rel = REL if rel is None else rel
    moved_any = False
    for key, w_cpu in cpu.items():
        w_cpu = w_cpu.double()
        moved = (w_cpu - init[key].double()).abs().max().item()
        diff = (second[key].cpu().double() - w_cpu).abs().max().item()
        moved_any = moved_any or moved > 0
        assert diff <= rel * moved + ABS, (f"{name}: {key} differs by {diff:.3g} between the "
                                           f"devices; the CPU moved it by up to {moved:.3g}")
    assert moved_any, f"{name}: learning moved no weight"


def _close(a, b, rel, abs_):
    return abs(a - b) <= rel * abs(a) + abs_


def assert_same_stats(name, cpu_stats, second_stats, rel=None):
    rel = STAT_REL if rel is None else rel
    for step, (a, b) in enumerate(zip(cpu_stats, second_stats)):
        assert a.keys() == b.keys(), (name, step)
        for key, x in a.items():
            y = b[key]
            where = f"{name}, step {step}, {key}: {x!r} on the CPU, {y!r} on {SECOND}"
            if isinstance(x, float):
                assert isinstance(y, float) and math.isfinite(y), where
                assert _close(x, y, rel, STAT_ABS), where
            elif isinstance(x, (bool, int, np.integer)):
                assert x == y, where
            else:  # priorities per row (DQN) or per step (R2D2)
                x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
                assert x.shape == y.shape, where
                assert np.all(np.abs(x - y) <= rel * np.abs(x) + STAT_ABS), where


# --- the tests -------------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(LEARNERS))
def test_learn_steps_on_the_second_device_match_the_cpu(name, monkeypatch):
    init, cpu, second, cpu_stats, second_stats = train_both(name, monkeypatch)
    assert_moved_alike(name, init, cpu, second)
    assert_same_stats(name, cpu_stats, second_stats)


@pytest.mark.parametrize("name", RECURRENT)
def test_with_cudnn_tf32_the_recurrent_learners_match_the_cpu_to_its_precision(name,
                                                                               monkeypatch):
    torch.backends.cudnn.allow_tf32 = True  # torch's default (full_float32 restores it after)
    init, cpu, second, cpu_stats, second_stats = train_both(name, monkeypatch)
    assert_moved_alike(name, init, cpu, second, rel=TF32_REL)
    assert_same_stats(name, cpu_stats, second_stats, rel=TF32_REL)


@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.xfail(
    ON_GPU, strict=True,
    reason="the learning noise comes from torch_rng(self.device, seed, LEARN), a generator on "
           "the learner device: on CUDA a Philox generator, whose draws differ from the CPU "
           "generator's for the same seed")) for name in DRAWING])
def test_with_its_own_generator_a_noisy_learner_matches_the_cpu_only_on_the_cpu(name,
                                                                                monkeypatch):
    init, cpu, second, cpu_stats, second_stats = train_both(name, monkeypatch, same_draws=False)
    assert_moved_alike(name, init, cpu, second)
    assert_same_stats(name, cpu_stats, second_stats)


@pytest.mark.parametrize("name", DRAWING)
def test_with_its_own_generator_a_noisy_learner_moves_each_network_as_far(name, monkeypatch):
    # Other noise, other updates (above); but Adam's steps are as large, so each network moves
    # about as far from its initial weights on either device, and every statistic is finite.
    init, cpu, second, _, second_stats = train_both(name, monkeypatch, same_draws=False)
    for network in LEARNERS[name].modules + tuple(LEARNERS[name].tensors):
        keys = [k for k in cpu if k == network or k.startswith(network + ".")]

        def distance(weights):
            return math.sqrt(sum(float(((weights[k].cpu().double() - init[k].double()) ** 2)
                                       .sum()) for k in keys))

        d_cpu, d_second = distance(cpu), distance(second)
        assert d_cpu > 0 and 0.75 <= d_second / d_cpu <= 1.25, (name, network, d_cpu, d_second)
    assert all(math.isfinite(v) for stats in second_stats for v in stats.values()
               if isinstance(v, float))
