"""Pin a policy's learn step bit for bit: run it and a frozen copy of an older update side by
side on two identically seeded policies and fixed batches, then compare every tensor."""
import numpy as np
import torch

from rlpipe.data import to_torch
from rlpipe.random_streams import LEARN, torch_rng


def assert_same_tensors(a, b, where=""):
    """Equal structure, equal dtypes, equal bits (torch.equal), equal plain values."""
    if isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for k in a:
            assert_same_tensors(a[k], b[k], f"{where}/{k}")
    elif isinstance(a, torch.Tensor):
        assert a.dtype == b.dtype and torch.equal(a, b), f"{where} differs"
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


def check_against_frozen(policy, reference, frozen_step, transitions, networks, optimizers,
                         steps=5, seed=0):
    """`steps` learn steps of `policy` and of `frozen_step(reference, rng, batch)` (rng: the
    learn stream of a policy seeded `seed`, as the policies seed their own) on the same batches
    (terminations every 7th row, an n-step "discount" column in step 3): equal statistics at
    each step, then equal weights of `networks` and equal optimiser states of `optimizers`."""
    rng = torch_rng("cpu", seed, LEARN)
    for i in range(steps):
        batch = transitions(seed=i, terminated=np.arange(32) % 7 == 0)
        if i == 3:
            batch["discount"] = np.full(32, 0.5, np.float32)
        out = policy.learn_mode.forward(batch)
        expected = frozen_step(reference, rng, batch)
        assert [out["critic_loss"], out["q_mean"], out["target_mean"]] == expected, f"step {i}"
    for name in networks:
        assert_same_tensors(getattr(policy, name).state_dict(),
                            getattr(reference, name).state_dict(), name)
    for name in optimizers:
        assert_same_tensors(getattr(policy, name).state_dict()["state"],
                            getattr(reference, name).state_dict()["state"], name)
    assert policy.learn_mode.train_iter == reference.train_iter == steps


# --- pieces of the frozen SAC and TD3 updates (main 5ba5bea), written once ---------------------

def frozen_batch(p, batch):
    """The learn batch as CPU tensors, its actions in [-1, 1], and gamma·(1 − terminated) or the
    n-step "discount" column."""
    b = to_torch({k: batch[k] for k in ("obs", "action", "reward", "next_obs", "terminated",
                                        "discount") if k in batch}, "cpu")
    discount = (b["discount"].float() if "discount" in b
                else p.cfg.learn.gamma * (1.0 - b["terminated"].float()))
    return b, p.box.to_unit(b["action"]), discount


def frozen_gradient_step(optimizer, loss, params, grad_clip):
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if grad_clip is not None:
        torch.nn.utils.clip_grad_norm_(params, grad_clip)
    optimizer.step()


def frozen_critic_step(p, b, action, y):
    """Both Q's regressed on y, one critic step; returns the statistics the policy reports."""
    q1, q2 = p.critic(b["obs"], action)
    critic_loss = torch.nn.functional.mse_loss(q1, y) + torch.nn.functional.mse_loss(q2, y)
    frozen_gradient_step(p.critic_optimizer, critic_loss, list(p.critic.parameters()),
                         p.cfg.learn.grad_clip)
    return [float(critic_loss.detach()), float(q1.detach().mean()), float(y.mean())]


def frozen_critic_grads(p, flag):
    for q in p.critic.parameters():
        q.requires_grad_(flag)
