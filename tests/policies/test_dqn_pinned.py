"""Pin DQN's learn step bit for bit: the policy and a frozen copy of an earlier, plainer version
of its update (main f2ee855: every statistic its own tensor op, the loss always an elementwise
mean) run side by side on two identically seeded policies and the same batches, in each
setting that takes its own branch; statistics, priorities, weights and optimiser states must be
equal in every bit."""
import gymnasium as gym
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from rlpipe.data import to_torch
from rlpipe.policies import DiscreteCQLPolicy, DQNPolicy
from tests.policies.pinned_update import assert_same_tensors

OBS = gym.spaces.Box(-np.inf, np.inf, (4,), np.float32)
KEYS = ("obs", "action", "reward", "next_obs", "terminated", "discount", "weight",
        "action_mask", "next_action_mask")


def frozen_step(p, batch):
    """The DQN update as main f2ee855 wrote it, on policy `p`; returns its statistics."""
    c = p.cfg.learn
    b = to_torch({k: batch[k] for k in KEYS if k in batch}, "cpu")
    action = b["action"].long().reshape(-1, 1) - p.action_offset
    with torch.no_grad():
        next_q_target = p.target(b["next_obs"])
        chooser = p.online(b["next_obs"]) if c.double_q else next_q_target
        if "next_action_mask" in b:
            chooser = chooser.masked_fill(~b["next_action_mask"].bool(), float("-inf"))
        next_value = next_q_target.gather(1, chooser.argmax(dim=1, keepdim=True)).squeeze(1)
        discount = (b["discount"].float() if "discount" in b
                    else c.gamma * (1.0 - b["terminated"].float()))
        td_target = b["reward"].float() + discount * next_value
    q_all = p.online(b["obs"])
    q = q_all.gather(1, action).squeeze(1)
    loss_fn = F.smooth_l1_loss if c.huber else F.mse_loss
    elementwise = loss_fn(q, td_target, reduction="none")
    weight = b.get("weight")
    loss = (elementwise * weight.float()).mean() if weight is not None else elementwise.mean()
    extra_loss, extra_stats = p._regulariser(b, q_all, q)
    if extra_loss is not None:
        loss = loss + extra_loss
    p.optimizer.zero_grad(set_to_none=True)
    loss.backward()
    grad_norm = torch.nn.utils.clip_grad_norm_(
        p._params, float("inf") if c.grad_clip is None else c.grad_clip)
    p.optimizer.step()
    p.train_iter += 1
    with torch.no_grad():
        if c.tau is not None:
            for t, s in zip(p.target.parameters(), p.online.parameters()):
                t.lerp_(s, c.tau)
        elif p.train_iter % c.target_update_freq == 0:
            for t, s in zip(p.target.parameters(), p.online.parameters()):
                t.copy_(s)
    td_error = (q - td_target).detach()
    values = torch.stack([loss.detach(), q.detach().mean(), td_target.mean(),
                          td_error.abs().mean(), grad_norm.detach().float()]).tolist()
    names = ("loss", "q_mean", "target_mean", "td_abs_mean", "grad_norm")
    if extra_stats:
        values += torch.stack([v.detach().float() for v in extra_stats.values()]).tolist()
        names += tuple(extra_stats)
    stats = dict(zip(names, values))
    if weight is not None:
        stats["priority"] = td_error.abs().cpu().numpy()
    return stats


def make_batch(step, rows, n_actions, start, extra):
    """Random transitions (terminations every 5th row) with the optional columns in `extra`:
    weight, discount, masks (at least one valid action per row)."""
    rng = np.random.default_rng(step)
    batch = {"obs": rng.normal(size=(rows, 4)).astype(np.float32),
             "action": rng.integers(n_actions, size=rows) + start,
             "reward": rng.normal(size=rows).astype(np.float32),
             "next_obs": rng.normal(size=(rows, 4)).astype(np.float32),
             "terminated": np.arange(rows) % 5 == 0, "truncated": np.zeros(rows, bool)}
    if "weight" in extra:
        batch["weight"] = rng.uniform(0.1, 1.0, rows).astype(np.float32)
    if "discount" in extra:
        batch["discount"] = np.where(batch["terminated"], 0.0, 0.99 ** 3).astype(np.float32)
    for name in ("action_mask", "next_action_mask"):
        if name in extra:
            mask = rng.random((rows, n_actions)) < 0.6
            mask[np.arange(rows), batch["action"] - start] = True
            batch[name] = mask
    return batch


SETTINGS = {  # name: (policy class, config, action space, batch columns, rows)
    "default": (DQNPolicy, {}, gym.spaces.Discrete(2), (), 64),
    "odd-batch": (DQNPolicy, {}, gym.spaces.Discrete(2), (), 37),
    "per-weights": (DQNPolicy, {}, gym.spaces.Discrete(3), ("weight",), 37),
    "nstep": (DQNPolicy, {"learn": {"nstep": 3}}, gym.spaces.Discrete(2), ("discount",), 37),
    "mse": (DQNPolicy, {"learn": {"huber": False}}, gym.spaces.Discrete(2), (), 37),
    "mse-weights": (DQNPolicy, {"learn": {"huber": False}}, gym.spaces.Discrete(2), ("weight",), 37),
    "vanilla-polyak": (DQNPolicy, {"learn": {"double_q": False, "tau": 0.05}},
                       gym.spaces.Discrete(2), (), 37),
    "no-clip-dueling": (DQNPolicy, {"learn": {"grad_clip": None}, "model": {"dueling": True}},
                        gym.spaces.Discrete(3), (), 37),
    "masked-offset": (DQNPolicy, {}, gym.spaces.Discrete(4, start=-2), ("next_action_mask",), 37),
    "discrete-cql": (DiscreteCQLPolicy, {}, gym.spaces.Discrete(3),
                     ("action_mask", "next_action_mask", "weight"), 37),
}


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_learn_step_matches_the_frozen_update_bit_for_bit(name):
    cls, cfg, action_space, extra, rows = SETTINGS[name]
    cfg = {"seed": 3, **cfg, "model": {"hidden": (16, 16), **cfg.get("model", {})},
           "learn": {"lr": 1e-2, "target_update_freq": 3, **cfg.get("learn", {})}}
    policy, reference = cls(cfg, OBS, action_space), cls(cfg, OBS, action_space)
    n, start = int(action_space.n), int(action_space.start)
    for step in range(7):  # past two hard target copies (every 3 steps)
        batch = make_batch(step, rows, n, start, extra)
        out, expected = policy.learn_mode.forward(batch), frozen_step(reference, batch)
        assert list(out) == list(expected), f"step {step}: statistic names"
        for key, value in expected.items():
            if key == "priority":
                assert out[key].dtype == value.dtype and np.array_equal(out[key], value), step
            else:
                assert type(out[key]) is float and out[key] == value, f"step {step}: {key}"
    for net in ("online", "target"):
        assert_same_tensors(getattr(policy, net).state_dict(),
                            getattr(reference, net).state_dict(), net)
    assert_same_tensors(policy.optimizer.state_dict()["state"],
                        reference.optimizer.state_dict()["state"], "optimizer")
    assert policy.learn_mode.train_iter == reference.train_iter == 7
