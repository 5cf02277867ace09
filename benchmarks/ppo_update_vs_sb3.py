"""rlpipe's PPO update beside SB3's on one identical rollout, from identical weights.

For a PPO parity task (`ppo-lunarlander-1m`, `ppo-doorkey-100k`, ...), SB3 builds its model at
the task's settings and collects rollouts with it. Before each of SB3's updates, rlpipe's
`PPOPolicy` (built from the task's rlpipe config) is given SB3's current weights and optimizer
state, and the same rollout: the rows flattened as SB3 flattens them, rlpipe's own GAE
(`compute_gae`) over the rollout's rewards, values and episode ends, and SB3's minibatch order.
Both then train, and the script prints:

- the largest difference between the two networks' outputs before training (the weights are
  mapped right when it is at float rounding);
- the largest difference between rlpipe's advantages and returns and SB3's;
- after the update, the largest difference in every parameter, relative to how far SB3's
  update moved it (a ratio of about 0 says the two updates are the same step).

  python benchmarks/ppo_update_vs_sb3.py --task ppo-doorkey-100k --updates 3
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Any, Dict, List, Tuple

import gymnasium as gym
import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _parity_runs import make_env  # noqa: E402
from _parity_tasks import TASKS  # noqa: E402

# SB3's ActorCriticPolicy parameter name -> rlpipe's ActorCritic's (separate actor and critic
# MLPs of two layers: Linear at 0 and 2, the activation at 1 and 3)
NAMES = {
    "mlp_extractor.policy_net.0": "actor_encoder.mlp.net.0",
    "mlp_extractor.policy_net.2": "actor_encoder.mlp.net.2",
    "mlp_extractor.value_net.0": "critic_encoder.mlp.net.0",
    "mlp_extractor.value_net.2": "critic_encoder.mlp.net.2",
    "action_net": "action_head",
    "value_net": "value_head",
}


def rlpipe_name(sb3_name: str) -> str:
    stem, leaf = sb3_name.rsplit(".", 1)
    if stem not in NAMES:
        raise KeyError(f"no rlpipe parameter for SB3's {sb3_name}")
    return f"{NAMES[stem]}.{leaf}"


def build(task_name: str, seed: int) -> Tuple[Any, Any, Any]:
    """(SB3 PPO, rlpipe PPOPolicy, the grid's scale or None) at the task's settings."""
    import stable_baselines3 as sb3
    from stable_baselines3.common.env_util import make_vec_env

    from rlpipe.pipelines import onpolicy
    from rlpipe.policies import PPOPolicy

    task = TASKS[task_name]
    env = make_vec_env(lambda: make_env(task.env_id, "sb3"), n_envs=task.n_envs, seed=seed)
    dict_obs = isinstance(env.observation_space, gym.spaces.Dict)
    model = sb3.PPO("MultiInputPolicy" if dict_obs else "MlpPolicy", env, seed=seed,
                    device="cpu", verbose=0, **task.sb3)
    cfg = onpolicy.resolve_config(PPOPolicy, dict(task.rlpipe, seed=seed))
    ours_env = make_env(task.env_id, "rlpipe")
    ours = PPOPolicy(cfg.policy, ours_env.observation_space, ours_env.action_space)
    scale = None
    if dict_obs:  # SB3 reads the grid scaled (ScaledGrid); rlpipe the ids, scaled inside
        high = ours_env.observation_space["image"].high
        scale = np.maximum(high, 1).astype(np.float32)
    ours_env.close()
    return model, ours, scale


def copy_weights(model: Any, ours: Any) -> None:
    """SB3's current weights and Adam state into rlpipe's learner (and its acting copy)."""
    theirs = dict(model.policy.named_parameters())
    mine = dict(ours.model.named_parameters())
    with torch.no_grad():
        for name, p in theirs.items():
            mine[rlpipe_name(name)].copy_(p)
    state = model.policy.optimizer.state_dict()
    order = [rlpipe_name(n) for n in theirs]
    index = {n: i for i, n in enumerate(mine)}
    ours_state = ours.optimizer.state_dict()
    # the two optimizers hold the same tensors under the index of each one's parameter order
    ours_state["state"] = {index[order[i]]: {k: v.clone() for k, v in s.items()}
                           for i, s in state["state"].items()}
    ours.optimizer.load_state_dict(ours_state)
    ours._refresh()


def flat(x: np.ndarray) -> np.ndarray:
    """[T, N, ...] -> [N·T, ...], env-major, as SB3's RolloutBuffer.swap_and_flatten."""
    return x.swapaxes(0, 1).reshape(x.shape[0] * x.shape[1], *x.shape[2:])


def rollout_batch(model: Any, scale: Any) -> Dict[str, Any]:
    """SB3's last rollout as rlpipe's learn batch, rows in SB3's order; the advantages by
    rlpipe's compute_gae (bootstrapped as SB3 bootstraps: a truncated step's reward already
    holds γ·V(final obs))."""
    from rlpipe.data._gae import compute_gae

    buf = model.rollout_buffer
    obs = buf.observations
    if isinstance(obs, dict):
        obs = {k: flat(v) for k, v in obs.items()}
        obs["image"] = np.rint(obs["image"] * scale).astype(np.uint8)
        obs["direction"] = obs["direction"].reshape(-1).astype(np.int64)
    else:
        obs = flat(obs)
    # episode_starts[t] says step t began an episode: step t-1 ended one
    ends = np.zeros_like(buf.episode_starts, dtype=bool)
    ends[:-1] = buf.episode_starts[1:] > 0.5
    ends[-1] = model._last_episode_starts > 0.5
    next_values = np.zeros_like(buf.values)
    next_values[:-1] = buf.values[1:]
    with torch.no_grad():
        next_values[-1] = model.policy.predict_values(
            model.policy.obs_to_tensor(model._last_obs)[0]).numpy().reshape(-1)
    adv, ret = compute_gae(buf.rewards, buf.values, next_values, ends,
                           np.zeros_like(ends), model.gamma, model.gae_lambda)
    return {"obs": obs, "action": flat(buf.actions).reshape(len(adv.reshape(-1)), -1).squeeze(-1),
            "logp": flat(buf.log_probs), "value": flat(buf.values), "adv": flat(adv),
            "return": flat(ret), "sb3_adv": flat(buf.advantages), "sb3_ret": flat(buf.returns)}


def outputs_gap(model: Any, ours: Any, batch: Dict[str, Any]) -> float:
    """The largest |difference| of log π(a|s) and V(s) between the two networks."""
    from rlpipe.models import obs_as_tensor

    buf = model.rollout_buffer
    with torch.no_grad():
        sb3_obs = {k: torch.as_tensor(flat(v)) for k, v in buf.observations.items()} \
            if isinstance(buf.observations, dict) else torch.as_tensor(flat(buf.observations))
        actions = torch.as_tensor(batch["action"])
        values, logp, _ = model.policy.evaluate_actions(sb3_obs, actions)
        dist, v = ours.model(obs_as_tensor(batch["obs"], ours.device))
        mine = dist.log_prob(actions.long())
    return max(float((values.reshape(-1) - v).abs().max()), float((logp - mine).abs().max()))


def permutations(seed: int, n: int, epochs: int) -> List[np.ndarray]:
    """The row orders SB3's RolloutBuffer.get draws in `epochs` epochs after np.random.seed."""
    np.random.seed(seed)
    return [np.random.permutation(n) for _ in range(epochs)]


def compare(task_name: str, seed: int, updates: int) -> List[Dict[str, Any]]:
    """For each of `updates` rollouts: the gaps (see the module docstring), both sides'
    statistics, and per SB3 parameter (how far SB3's update moved it, rlpipe − SB3 after it)."""
    from stable_baselines3.common.callbacks import BaseCallback  # noqa: F401 (needs SB3)

    model, ours, scale = build(task_name, seed)
    _, callback = model._setup_learn(10**9, callback=None)
    callback.on_training_start(locals(), globals())
    results = []
    for update in range(updates):
        model.collect_rollouts(model.env, callback, model.rollout_buffer, model.n_steps)
        copy_weights(model, ours)
        batch = rollout_batch(model, scale)
        n = len(batch["adv"])
        result: Dict[str, Any] = dict(
            rows=n, outputs_gap=outputs_gap(model, ours, batch),
            adv_gap=float(np.abs(batch["adv"] - batch["sb3_adv"]).max()),
            ret_gap=float(np.abs(batch["return"] - batch["sb3_ret"]).max()),
            adv_max=float(np.abs(batch["sb3_adv"]).max()))
        order_seed = 1000 + update
        orders = iter(permutations(order_seed, n, model.n_epochs))
        before = {name: p.detach().clone() for name, p in model.policy.named_parameters()}
        np.random.seed(order_seed)
        model.train()
        randperm = torch.randperm  # rlpipe draws its epochs' row orders with torch.randperm
        torch.randperm = lambda size, generator=None: torch.as_tensor(next(orders))
        try:
            result["rlpipe"] = ours.learn_mode.forward(
                {k: v for k, v in batch.items() if not k.startswith("sb3_")})
        finally:
            torch.randperm = randperm
        logged = model.logger.name_to_value
        result["sb3"] = dict(policy_loss=logged["train/policy_gradient_loss"],
                             value_loss=logged["train/value_loss"],
                             clip_frac=logged["train/clip_fraction"],
                             n_updates=len(range(0, n, model.batch_size)) * model.n_epochs)
        mine = dict(ours.model.named_parameters())
        result["params"] = {
            name: (float((p.detach() - before[name]).abs().max()),
                   float((mine[rlpipe_name(name)].detach() - p.detach()).abs().max()))
            for name, p in model.policy.named_parameters()}
        results.append(result)
    model.env.close()
    return results


def report(results: List[Dict[str, Any]]) -> None:
    for update, r in enumerate(results):
        print(f"update {update}: {r['rows']} rows; outputs before training differ by "
              f"{r['outputs_gap']:.2e}; advantages by {r['adv_gap']:.2e}, returns by "
              f"{r['ret_gap']:.2e} (|adv| up to {r['adv_max']:.3g})")
        ours, theirs = r["rlpipe"], r["sb3"]
        # SB3 logs the value loss as the mean squared error; rlpipe's is half of it
        print(f"  rlpipe: policy_loss {ours['policy_loss']:.5f}  value_loss ×2 "
              f"{2 * ours['value_loss']:.5f}  clip_frac {ours['clip_frac']:.4f}  "
              f"updates {ours['n_updates']}")
        print(f"  SB3:    policy_loss {theirs['policy_loss']:.5f}  value_loss    "
              f"{theirs['value_loss']:.5f}  clip_frac {theirs['clip_frac']:.4f}  "
              f"updates {theirs['n_updates']}")
        for name, (moved, diff) in r["params"].items():
            print(f"  {name:34s} SB3 moved it {moved:.3e}; rlpipe − SB3 {diff:.3e} "
                  f"({diff / max(moved, 1e-12):.1e} of the move)")


def main(argv: List[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--task", default="ppo-doorkey-100k")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--updates", type=int, default=2, help="rollouts compared")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    report(compare(args.task, args.seed, args.updates))


if __name__ == "__main__":
    main()
