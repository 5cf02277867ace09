"""LSTM-PPO's update pinned bit for bit: the learn call (chunks converted once per call, a
Categorical head's log-probabilities from the logits without a distribution object, the
statistics computed once per call) trains the same weights and optimiser state as the update
through the distribution object, one minibatch at a time, written out below; its statistics
agree to float precision (they are reduced in another order)."""
import gymnasium as gym
import numpy as np
import pytest
import torch

from rlpipe.middleware.onpolicy import recurrent_rollout
from rlpipe.models import obs_as_tensor
from rlpipe.policies import PPOLSTMPolicy
from rlpipe.policies._masks import masked_categorical
from rlpipe.policies._ppo_loss import ppo_terms
from rlpipe.policies.ppo import _STATS
from tests.policies.pinned_update import assert_same_tensors

T, N, H = 12, 3, 8
OBS = gym.spaces.Box(-np.inf, np.inf, (2,), np.float32)


def rollout(policy, seed, masked=False):
    """T steps of N envs with episode starts inside the chunks, non-zero recorded states and
    random actions, log-probs and values (the update only needs them recorded)."""
    rng = np.random.default_rng(seed)
    first = rng.random((T, N)) < 0.2
    first[0] = True

    def draw(space):
        if isinstance(space, gym.spaces.Dict):
            return {k: draw(v) for k, v in space.spaces.items()}
        return rng.normal(size=(T + 1, N, *space.shape)).astype(np.float32)

    def at(tree, t):
        return {k: at(v, t) for k, v in tree.items()} if isinstance(tree, dict) else tree[t]

    obs = draw(policy.obs_space)
    box = isinstance(policy.action_space, gym.spaces.Box)
    steps = []
    for t in range(T):
        state = {p: {k: (0.5 * rng.normal(size=(N, H))).astype(np.float32) for k in ("h", "c")}
                 for p in ("actor", "critic")}
        action = (rng.normal(size=(N, 1)).astype(np.float32) if box
                  else rng.integers(policy.action_space.n, size=N))
        step = dict(obs=at(obs, t), next_obs=at(obs, t + 1), action=action,
                    reward=rng.normal(size=N).astype(np.float32),
                    terminated=np.zeros(N, bool) if t == T - 1 else first[t + 1],
                    truncated=np.zeros(N, bool), first=first[t],
                    value=rng.normal(size=N).astype(np.float32),
                    logp=(rng.normal(size=N) - 1.0).astype(np.float32), state=state)
        if box:
            step["raw_action"] = action
        if masked:  # action 0 is never valid, and each row's action is
            mask = rng.random((N, policy.action_space.n)) < 0.6
            mask[:, 0] = False
            mask[np.arange(N), action] = True
            step["action_mask"] = mask
        steps.append(step)
    c = policy.cfg.learn
    return recurrent_rollout(steps, c.gamma, c.gae_lambda,
                             lambda data: rng.normal(size=(T, N)).astype(np.float32))


def frozen_learn(p, store):
    """The update through the distribution object: each epoch's minibatches drawn from the
    store's arrays and converted one by one, ppo_terms on a Categorical / Gaussian, the
    statistics per minibatch."""
    c = p.cfg.learn
    n_chunks = store.n_envs * -(-len(store) // c.chunk_len)
    n_mb = int(np.clip(round(n_chunks * c.chunk_len / c.batch_size), 1, n_chunks))
    for group in p.optimizer.param_groups:
        group["lr"] = p.current_lr()
    stats = []
    for _ in range(c.epoch_per_collect):
        rng = np.random.default_rng(int(torch.randint(2**62, (), generator=p._learn_rng)))
        epoch = []
        for mb in store.sequence_minibatches(c.chunk_len, n_mb, rng):
            b = obs_as_tensor(mb, p.device)
            dist, value, _ = p.model(b["obs"], b["state"], b["first"], final_state=False)
            if "action_mask" in b:
                dist = masked_categorical(dist, b["action_mask"])
            action = p._net_action(b["raw_action"] if "raw_action" in b else b["action"])
            old = b["value"] if c.value_clip is not None else None
            epoch.append(p._optimise(ppo_terms(c, dist, value, action, b["logp"], b["advantage"],
                                               b["return"], old, mask=b["mask"].bool())))
        stats += epoch
        if c.target_kl is not None and torch.stack(epoch)[:, 3].mean() > c.target_kl:
            break
    return dict(zip(_STATS, torch.stack(stats).mean(0).tolist())), len(stats)


DICT_OBS = gym.spaces.Dict({"a": gym.spaces.Box(-1, 1, (2,), np.float32),
                            "b": gym.spaces.Box(-1, 1, (3,), np.float32)})
CASES = {
    "discrete, one minibatch": (gym.spaces.Discrete(3), {}, False),
    "dict observation, encoder layers": (gym.spaces.Discrete(2), dict(batch_size=12, chunk_len=4),
                                         False),
    "discrete, entropy in the loss, uneven minibatches": (
        gym.spaces.Discrete(3), dict(entropy_coef=0.01, batch_size=10, chunk_len=5), False),
    "discrete, action masks, value clip": (
        gym.spaces.Discrete(4), dict(value_clip=0.2, batch_size=12, chunk_len=4), True),
    "box, target_kl": (gym.spaces.Box(-2, 2, (1,), np.float32),
                       dict(target_kl=0.001, batch_size=18, chunk_len=6), False),
}


@pytest.mark.parametrize("case", list(CASES))
def test_learn_trains_the_weights_of_the_distribution_path(case):
    space, learn, masked = CASES[case]
    dict_obs = case.startswith("dict")
    cfg = dict(seed=3, model=dict(core_size=H, hidden=(8,), encoder_layers=(6,) if dict_obs else ()),
               learn=dict(epoch_per_collect=4, **learn))
    obs_space = DICT_OBS if dict_obs else OBS
    policy, reference = PPOLSTMPolicy(cfg, obs_space, space), PPOLSTMPolicy(cfg, obs_space, space)
    for i in range(3):
        store = rollout(policy, seed=i, masked=masked)["rollout"]
        out = policy.learn_mode.forward({"rollout": store})
        expected, n_updates = frozen_learn(reference, store)
        assert out["n_updates"] == n_updates, (case, i)
        for key in _STATS:
            assert out[key] == pytest.approx(expected[key], rel=1e-5, abs=1e-6), (case, i, key)
    assert_same_tensors(policy.model.state_dict(), reference.model.state_dict(), "model")
    assert_same_tensors(policy.optimizer.state_dict()["state"],
                        reference.optimizer.state_dict()["state"], "optimizer")
    if case == "box, target_kl":  # the early stop was taken: fewer updates than epochs allow
        assert policy.train_iter < 3 * 4
