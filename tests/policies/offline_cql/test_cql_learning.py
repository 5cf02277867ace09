"""Learning checks (slow): discrete CQL trained offline on scripted-expert CartPole data, then
evaluated greedily; and the point of CQL, that offline DQN (CartPole) and SAC (Pendulum)
overestimate Q on the data's states while CQL does not.

Each check runs `learn_mode.forward(buffer.sample(B))` in a loop on a fixed data set
(tests/offline/experts.py) and evaluates `eval_mode` with `mean_return`. The returns are printed
(`pytest -s`) so a run can report them; `python -m tests.policies.offline_cql.test_cql_learning`
prints them for three seeds with the wall time.
"""
import sys
import time

import gymnasium as gym
import numpy as np
import pytest
import torch

from rlpipe.policies import CQLPolicy, DiscreteCQLPolicy, DQNPolicy, SACPolicy
from tests.offline.experts import cartpole_expert, mean_return, pendulum_expert, rollout_buffer

pytestmark = pytest.mark.slow
GAMMA = 0.99


@pytest.fixture(autouse=True)
def one_thread():
    """Small networks: one thread is faster than several on a shared CPU."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def greedy(policy):
    return lambda obs: policy.eval_mode.forward(obs[None])["action"][0]


def train(policy, buffer, steps, batch_size=256):
    for _ in range(steps):
        policy.learn_mode.forward(buffer.sample(batch_size))
    return policy


def cartpole_cql(seed):
    """Discrete CQL on 10k CartPole transitions of the expert with ε = 0.3: its greedy return."""
    buffer = rollout_buffer("CartPole-v1", cartpole_expert, 10_000, noise=0.3, seed=seed)
    env = gym.make("CartPole-v1")
    policy = DiscreteCQLPolicy({"seed": seed, "model": {"hidden": (64, 64)},
                                "learn": {"target_update_freq": 200}},
                               env.observation_space, env.action_space)
    return mean_return("CartPole-v1", greedy(train(policy, buffer, 1500)), episodes=5)


def pendulum_q(policy_cls, seed, steps=2000):
    """Mean Q1(s, a_data) over 10k Pendulum transitions of the expert with Gaussian noise 0.3
    after `steps` offline updates of `policy_cls` (SAC or CQL), the data's mean Monte-Carlo
    return, and the policy's return. Smaller networks and faster rates than the paper's, to fit
    the budget."""
    buffer = rollout_buffer("Pendulum-v1", pendulum_expert, 10_000, noise=0.3, seed=seed)
    data = buffer.state_dict()["data"]
    env = gym.make("Pendulum-v1")
    learn = dict(PENDULUM_LEARN, **({"cql_n_actions": 2} if policy_cls is CQLPolicy else {}))
    policy = policy_cls({"seed": seed, "model": {"actor_hidden": (64, 64),
                                                 "critic_hidden": (64, 64)}, "learn": learn},
                        env.observation_space, env.action_space)
    train(policy, buffer, steps)
    with torch.no_grad():
        q = policy.critic.q1(torch.as_tensor(data["obs"]),
                             policy.box.to_unit(torch.as_tensor(data["action"])))
    ret = mean_return("Pendulum-v1", greedy(policy), episodes=5)
    return q.mean().item(), float(discounted_returns(data).mean()), ret


PENDULUM_LEARN = {"actor_lr": 1e-3, "critic_lr": 1e-3, "alpha_lr": 1e-3, "init_alpha": 0.1,
                  "tau": 0.05, "gamma": GAMMA}


def discounted_returns(data):
    """The Monte-Carlo discounted return of each stored transition (rows in rollout order;
    an episode's cut at a time limit or at the end of the data counts nothing beyond it)."""
    returns, g = np.zeros(len(data["reward"])), 0.0
    for i in reversed(range(len(returns))):
        ends = data["terminated"][i] or data["truncated"][i] or i == len(returns) - 1
        g = data["reward"][i] + (0.0 if ends else GAMMA * g)
        returns[i] = g
    return returns


def dataset_q(policy_cls, seed, steps=1500):
    """Mean Q(s, a_data) over a small CartPole data set (2000 transitions, ε = 0.3) after
    `steps` offline updates of `policy_cls`, the data's mean Monte-Carlo return, and the
    policy's greedy return."""
    buffer = rollout_buffer("CartPole-v1", cartpole_expert, 2000, noise=0.3, seed=seed)
    data = buffer.state_dict()["data"]
    env = gym.make("CartPole-v1")
    policy = policy_cls({"seed": seed, "model": {"hidden": (64, 64)},
                         "learn": {"gamma": GAMMA, "target_update_freq": 10}},
                        env.observation_space, env.action_space)
    train(policy, buffer, steps)
    with torch.no_grad():
        q = policy.online(torch.as_tensor(data["obs"]))
    q_data = q.gather(1, torch.as_tensor(data["action"]).long()[:, None]).mean().item()
    ret = mean_return("CartPole-v1", greedy(policy), episodes=5)
    return q_data, float(discounted_returns(data).mean()), ret


def test_discrete_cql_reaches_400_on_cartpole_expert_data():
    ret = cartpole_cql(seed=0)
    print(f"discrete CQL on CartPole (ε = 0.3 expert data): return {ret:.1f}")
    assert ret >= 400


def test_offline_dqn_overestimates_q_and_cql_does_not():
    dqn_q, mc, dqn_ret = dataset_q(DQNPolicy, seed=0)
    cql_q, _, cql_ret = dataset_q(DiscreteCQLPolicy, seed=0)
    print(f"mean Monte-Carlo return {mc:.1f}; DQN: mean Q {dqn_q:.1f}, return {dqn_ret:.1f}; "
          f"CQL: mean Q {cql_q:.1f}, return {cql_ret:.1f}")
    assert dqn_q > 10 * mc  # extrapolated Q of unseen actions feeds its own max: it diverges
    assert 0.5 * mc < cql_q < 1.5 * mc  # the conservative term holds Q near the data's value


if __name__ == "__main__":  # per-seed returns and wall time, for reports
    torch.set_num_threads(1)
    for name, fn in (("cartpole discrete-cql", cartpole_cql),
                     ("cartpole (Q, MC, return): dqn", lambda s: dataset_q(DQNPolicy, s)),
                     ("cartpole (Q, MC, return): discrete-cql",
                      lambda s: dataset_q(DiscreteCQLPolicy, s)),
                     ("pendulum (Q, MC, return): sac", lambda s: pendulum_q(SACPolicy, s)),
                     ("pendulum (Q, MC, return): cql", lambda s: pendulum_q(CQLPolicy, s))):
        for seed in (0, 1, 2):
            start = time.perf_counter()
            print(f"{name} seed {seed}: {fn(seed)}  ({time.perf_counter() - start:.1f} s)",
                  flush=True, file=sys.stdout)


def test_offline_sac_overestimates_q_on_pendulum_and_cql_does_not():
    sac_q, mc, sac_ret = pendulum_q(SACPolicy, seed=0)
    cql_q, _, cql_ret = pendulum_q(CQLPolicy, seed=0)
    print(f"Pendulum: mean Monte-Carlo return {mc:.1f}; SAC: mean Q {sac_q:.1f}, return "
          f"{sac_ret:.1f}; CQL: mean Q {cql_q:.1f}, return {cql_ret:.1f}")
    assert sac_q > 0.0  # every reward is <= 0: a positive value is pure extrapolation error
    assert 2.0 * mc < cql_q < 0.0
