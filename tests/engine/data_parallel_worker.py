"""One rank of tests/engine/test_data_parallel.py, run by torchrun:

    torchrun --standalone --nproc_per_node=2 data_parallel_worker.py OUT_DIR

Each rank builds its policies with its own seed (so its own initial weights), learns on its own
batches, and writes what it ended with (or the error it raised) to OUT_DIR/rank<r>.pt."""
import json
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch

from rlpipe import DDPContext, get_rank
from rlpipe.engine import contract_of
from rlpipe.middleware import CkptSaver, online_logger
from rlpipe.middleware.logger import OnlineLogger
from rlpipe.policies import DQNPolicy, PPOPolicy, SACPolicy

OBS = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)


def dqn_batch(seed, rows):
    rng = np.random.default_rng(seed)
    return {"obs": rng.normal(size=(rows, 4)).astype(np.float32),
            "action": rng.integers(2, size=rows),
            "reward": rng.normal(size=rows).astype(np.float32),
            "next_obs": rng.normal(size=(rows, 4)).astype(np.float32),
            "terminated": rng.random(rows) < 0.1}


def sac_batch(seed, rows):
    batch = dqn_batch(seed, rows)
    batch["action"] = np.random.default_rng(seed + 1).uniform(-1, 1, (rows, 2)).astype(np.float32)
    return batch


def ppo_batch(seed, rows, far):
    """Rows whose old log-probabilities are far from the policy's (a large approx-KL from the
    first update) or near them (log 0.5: an untrained policy's, a KL near 0)."""
    rng = np.random.default_rng(seed)
    logp = np.log(rng.uniform(0.02, 0.98, rows)) if far else np.full(rows, np.log(0.5))
    return {"obs": (rng.normal(size=(rows, 4)) * (1 + seed % 7)).astype(np.float32),
            "action": rng.integers(2, size=rows),
            "logp": logp.astype(np.float32),
            "adv": rng.normal(size=rows).astype(np.float32),
            "return": rng.normal(size=rows).astype(np.float32)}


def dqn(seed, hidden=(16, 16)):
    # a small clipping limit, so that clipping acts on every step
    return DQNPolicy({"seed": seed, "model": {"hidden": hidden},
                      "learn": {"grad_clip": 0.05, "target_update_freq": 2}},
                     OBS, gym.spaces.Discrete(2))


def learners(out):
    """DQN (three steps on this rank's own 8 rows each), SAC (two fused-Adam optimizers and
    alpha's), PPO (a running normaliser, the approx-KL stop), the run-folder writers this rank
    makes, and networks that differ across the ranks."""
    rank = get_rank()
    policy = dqn(seed=10 + rank)
    for step in range(3):
        policy.learn_mode.forward(dqn_batch(100 * step + rank, 8))
    sac = SACPolicy({"seed": 10 + rank,
                     "model": {"actor_hidden": (16, 16), "critic_hidden": (16, 16)}},
                    OBS, gym.spaces.Box(-1.0, 1.0, (2,), np.float32))
    for step in range(3):
        sac.learn_mode.forward(sac_batch(100 * step + rank, 8))
    # PPO with a running observation normaliser and the approx-KL stop: each rank's rows
    # differ, rank 0's KL is above the limit and rank 1's below it, and the ranks still end
    # equal (pooled statistics, one decision from the ranks' mean KL)
    ppo = PPOPolicy({"seed": 10 + rank, "model": {"hidden": (16, 16), "obs_norm": True},
                     "learn": {"batch_size": 16, "epoch_per_collect": 4, "target_kl": 0.02}},
                    OBS, gym.spaces.Discrete(2))
    ppo_stats = [ppo.learn_mode.forward(ppo_batch(100 * step + rank, 32, far=rank == 0))
                 for step in range(2)]
    writers = [CkptSaver(policy, f"{out}/run", train_freq=1),
               online_logger(run_dir=f"{out}/run")]
    return {"dqn": policy.online.state_dict(),
            "sac": {**{f"actor.{k}": v for k, v in sac.actor.state_dict().items()},
                    **{f"critic.{k}": v for k, v in sac.critic.state_dict().items()},
                    "log_alpha": sac.log_alpha.detach().clone()},
            "ppo": ppo.model.state_dict(), "ppo_updates": [st["n_updates"] for st in ppo_stats],
            "ppo_kl": [st["approx_kl"] for st in ppo_stats],
            "out_of_step": out_of_step(),
            # each writer's type, and whether it keeps the contract of the writer it stands for
            "writers": [(type(w).__name__, contract_of(w) == contract_of(cls))
                        for w, cls in zip(writers, (CkptSaver, OnlineLogger))]}


def out_of_step():
    """The ranks' networks differ in size: both ranks raise, after the same exchange, so they
    stay in step for what follows."""
    try:
        dqn(seed=0, hidden=(16,) if get_rank() == 0 else (32,)).learn_mode
    except RuntimeError as err:
        return {"error": str(err)}
    return {"error": None}


def native_threads():
    """The names of this process's threads (Linux), gloo's workers among them while a process
    group lives ("pt_gloo_runloop", "gloo_tcp_loop")."""
    tasks = Path("/proc/self/task")
    return sorted((t / "comm").read_text().strip() for t in tasks.iterdir()) if tasks.is_dir() else None


if __name__ == "__main__":
    out = sys.argv[1]
    # the policies' optimizers import torch._dynamo, and with it modules that would keep a
    # process group alive had they been imported while one exists
    imported_inside = "torch._dynamo" not in sys.modules
    with DDPContext(timeout_s=60):
        rank = get_rank()
        torch.save(learners(out), f"{out}/rank{rank}.pt")
    after = {"dynamo_imported_inside": imported_inside and "torch._dynamo" in sys.modules,
             "threads": native_threads()}
    Path(f"{out}/rank{rank}.after.json").write_text(json.dumps(after))
