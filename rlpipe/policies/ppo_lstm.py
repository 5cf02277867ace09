"""LSTM-PPO: PPO's clipped objective (ppo.py, _ppo_loss.py) with a recurrent actor-critic
(models/recurrent_actor_critic.py), for partially observed tasks.

collect (acting copy), per vector step, from each env's state s_t (zeroed where `first`):
  (π(·|o_t, s_t), V(o_t, s_t), s_{t+1}) = net.step(o_t, s_t, first_t);  a ~ π,  logp = log π(a)
  the step records s_t (acting path); the face returns "state" = s_{t+1}.
bootstrap (gae_estimator, before learning): V(next_o_t | s_{t+1}) for every row, from the critic
  core re-run over the rollout from its recorded start state with the recorded `first` flags
  (`next_values`): the rollout's last step and truncated episodes bootstrap with the state the
  episode carried, as PPO does with V(next_obs).
learn, per rollout (GAE over the time-ordered rollout, as PPO): `epoch_per_collect` passes; each
  cuts every env's time line into chunks of `chunk_len` steps (truncated BPTT), shuffles whole
  chunks into minibatches of about `batch_size` steps, re-runs the network over each chunk from
  its recorded start state (resetting where `first` is True inside it) and takes PPO's loss over
  the chunk's real steps (padding and invalid rows masked out of every mean). The chunks are
  cut and converted to tensors once per learn call; a Categorical head's log π comes from its
  logits without a distribution object, normalised as torch's Categorical normalises them, so
  the update trains the same weights as through the object (a test pins it); the statistics
  are computed once per call (per epoch with target_kl).
Before any update the re-run reproduces the collected log-probs exactly (tests check it).
"""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, NamedTuple

import numpy as np
import torch
from torch import nn

from rlpipe.data import RolloutStorage
from rlpipe.data_parallel import mean_across_ranks
from rlpipe.models import batch_rows, obs_as_tensor
from rlpipe.models.distributions import categorical_log_prob
from rlpipe.models.recurrent_actor_critic import RecurrentActorCritic
from rlpipe.schema import count, extend, key

from ._masks import masked_categorical, masked_logits, policy_mask
from ._ppo_loss import clipped_terms, mean_over, ratio_stats
from .ppo import _ACTIVATIONS, _STATS, PPOPolicy, _PPOCollectFace

__all__ = ["PPOLSTMPolicy"]


class _LSTMCollectFace(_PPOCollectFace):
    """PPO's collect face plus `next_values(rollout)` and `rollout_values(rollout)`
    (gae_estimator's recurrent bootstrap and values, from one critic)."""

    __slots__ = ("next_values", "rollout_values")

    def __init__(self, policy: "PPOLSTMPolicy") -> None:
        super().__init__(policy)
        self.next_values = policy.next_values
        self.rollout_values = policy.rollout_values


class PPOLSTMPolicy(PPOPolicy):
    """PPO with an LSTM (or GRU) actor-critic; see the module docstring."""

    recurrent = True
    space_hint = "LSTM-PPO acts in Discrete(n), 1-D MultiDiscrete, 1-D MultiBinary or 1-D Box spaces."

    @classmethod
    def config_keys(cls) -> Dict[str, Any]:
        return extend(PPOPolicy.config_keys(), dict(
            model=dict(
                hidden=key((64,), "MLP layers after the core (actor and critic each)"),
                activation="relu",
                share_encoder=key(False, "True: one encoder and one core for actor and critic"),
                encoder_layers=key((), "encoder layer widths before the core ((): vectors as they "
                                   "are)"),
                core_size=key(64, "LSTM/GRU hidden size", count(1, "core width")),
                core_kind=key("lstm", '"lstm" or "gru"'),
            ),
            learn=dict(
                batch_size=key(256, "steps per minibatch (whole chunks of chunk_len steps)"),
                chunk_len=key(32, "steps per sequence of truncated BPTT",
                              count(1, "steps per BPTT chunk")),
            ),
        ))

    def __init__(self, cfg: Mapping | None, obs_space: Any, action_space: Any) -> None:
        super().__init__(cfg, obs_space, action_space)
        self._collect_face = _LSTMCollectFace(self)

    def _build_model(self) -> nn.Module:
        m = self.cfg.model
        return RecurrentActorCritic(
            self.obs_space, self.action_space, encoder_hidden=m.encoder_layers,
            core_hidden=m.core_size, kind=m.core_kind, head_hidden=m.hidden,
            activation=_ACTIVATIONS[m.activation], shared_core=m.share_encoder,
            init_log_std=m.init_log_std, obs_norm=m.obs_norm, encoders=m.encoders)

    def _check_cfg(self) -> None:
        super()._check_cfg()
        m, learn = self.cfg.model, self.cfg.learn
        if m.core_kind not in ("lstm", "gru"):
            raise ValueError(f"policy.model.core_kind must be 'lstm' or 'gru', got {m.core_kind!r}.")
        for key, value in (("model.core_size", m.core_size), ("learn.chunk_len", learn.chunk_len)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"policy.{key} must be an int >= 1, got {value!r}.")

    def initial_state(self, n: int) -> Dict[str, Any]:
        """Zeros per core: {"actor": {"h": [n, H], "c": [n, H]}, "critic": {...}}."""
        return _to_numpy(self.acting.initial_state(n, torch.device("cpu")))

    # --- acting ----------------------------------------------------------------------------------
    def _forward_collect(self, obs: Any, state: Any = None, first: Any = None,
                         action_mask: Any = None) -> Dict[str, Any]:
        rows = batch_rows(obs)
        state, first = self._inputs(state, first, rows, "collect", self.collect_device)
        mask = policy_mask(self.action_space, action_mask, rows, "LSTM-PPO collect",
                           self.collect_device)
        with torch.inference_mode():
            dist, value, after = self.acting.step(obs_as_tensor(obs, self.collect_device),
                                                  state, first)
            raw, logp = self._sample(masked_categorical(dist, mask))
        out = self._collect_output(raw.cpu().numpy(), logp, value)
        out["state"] = _to_numpy(after)
        return out

    def _forward_eval(self, obs: Any, state: Any = None, first: Any = None,
                      action_mask: Any = None) -> Dict[str, Any]:
        rows = batch_rows(obs)
        state, first = self._inputs(state, first, rows, "eval", self.device)
        mask = policy_mask(self.action_space, action_mask, rows, "LSTM-PPO eval", self.device)
        with self._lock, torch.inference_mode():
            dist, _, after = self.model.step(obs_as_tensor(obs, self.device), state, first)
            action = _mode(masked_categorical(dist, mask)).cpu().numpy()
        return {"action": self._greedy_action(action), "state": _to_numpy(after)}

    def _inputs(self, state: Any, first: Any, rows: int, face: str, device: torch.device) -> Any:
        if state is None or first is None:
            raise TypeError(f"PPOLSTMPolicy's {face} face is recurrent: call forward(obs, state="
                            f"state, first=first) with state from initial_state({rows}) or the "
                            f"previous step's 'state', and first a bool array [{rows}]")
        return (_to_torch_state(state, device),
                torch.as_tensor(np.asarray(first, dtype=bool), device=device))

    def value(self, obs: Any) -> np.ndarray:
        raise TypeError("PPOLSTMPolicy has no value(obs): its critic needs the hidden state. "
                        "gae_estimator bootstraps a recurrent policy with collect_mode."
                        "next_values(rollout) instead")

    def next_values(self, rollout: Mapping[str, Any]) -> np.ndarray:
        """V(next_obs[t] | state after step t), float32 [T, N], for a time-ordered rollout
        (nested arrays [T, N, ...]: obs, next_obs, first, and state, of which row 0 is used)."""
        missing = [k for k in ("obs", "next_obs", "first", "state") if k not in rollout]
        if missing:
            raise KeyError(f"PPOLSTMPolicy.next_values: the rollout lacks {missing}; it must come "
                           f"from the recurrent acting path (records carry first and state)")
        T, N = np.shape(rollout["first"])[:2]
        dev = self.collect_device
        with self._lock, torch.inference_mode():
            obs = _swap(obs_as_tensor(rollout["obs"], dev))
            first = torch.as_tensor(np.asarray(rollout["first"], bool), device=dev).T
            state0 = _to_torch_state(_row(rollout["state"], 0), dev)
            after = self.acting.critic_states(obs, state0, first)  # each [N, T, H]
            nxt = _merge_rows(_swap(obs_as_tensor(rollout["next_obs"], dev)))
            values = self.acting.value_from(nxt, {k: v.reshape(N * T, -1) for k, v in after.items()})
        return values.reshape(N, T).T.cpu().numpy().astype(np.float32)

    def rollout_values(self, rollout: Mapping[str, Any]) -> np.ndarray:
        """V(obs[t] | state before step t), float32 [T, N], re-run with the acting copy from the
        rollout's recorded start state: the values a collector recorded, but from the critic
        that `next_values` bootstraps with (they differ when the rollout was acted with older
        weights, e.g. by one of several collector processes)."""
        dev = self.collect_device
        with self._lock, torch.inference_mode():
            obs = _swap(obs_as_tensor(rollout["obs"], dev))
            first = torch.as_tensor(np.asarray(rollout["first"], bool), device=dev).T
            _, values, _ = self.acting(obs, _to_torch_state(_row(rollout["state"], 0), dev), first,
                                       final_state=False)
        return values.T.cpu().numpy().astype(np.float32)

    # --- learning ---------------------------------------------------------------------------------
    def _forward_learn(self, batch: Mapping[str, Any]) -> Dict[str, Any]:
        store = batch.get("rollout") if isinstance(batch, Mapping) else None
        if not isinstance(store, RolloutStorage):
            raise KeyError("LSTM-PPO learns from {'rollout': RolloutStorage} (time-ordered, GAE "
                           f"computed), as gae_estimator gives a recurrent policy; got keys "
                           f"{sorted(batch) if isinstance(batch, Mapping) else type(batch).__name__}")
        c = self.cfg.learn
        n_chunks = store.n_envs * -(-len(store) // c.chunk_len)
        n_mb = int(np.clip(round(n_chunks * c.chunk_len / c.batch_size), 1, n_chunks))
        lr = self.current_lr()
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        chunks = self._learn_chunks(store)
        steps: List[_ChunkStep] = []
        stats = []
        for _ in range(c.epoch_per_collect):
            rng = np.random.default_rng(int(torch.randint(2**62, (), generator=self._learn_rng)))
            steps += [self._update_chunks(mb) for mb in
                      store.sequence_minibatches(c.chunk_len, n_mb, rng, chunks=chunks)]
            if c.target_kl is not None:  # the epoch's approx-KL decides whether to go on
                stats.append(self._chunk_stats(steps))
                steps = []
                # in a data-parallel run the ranks' mean KL decides, so they all stop alike
                if mean_across_ranks(stats[-1][:, 3].mean(), "PPO's approx-KL") > c.target_kl:
                    break
        if steps:
            stats.append(self._chunk_stats(steps))
        data = store.data
        valid = np.asarray(data["valid"], bool) if "valid" in data else np.ones(
            np.shape(data["first"]), bool)
        self.learned_env_steps += int(valid.sum())
        if self.model.obs_norm is not None:  # the next rollout is collected with the new stats
            with self._lock:
                self.model.obs_norm.update(torch.as_tensor(np.asarray(data["obs"])[valid]))
        stats_t = torch.cat(stats)
        out: Dict[str, Any] = dict(zip(_STATS, stats_t.mean(0).tolist()))
        out.update(lr=lr, n_updates=int(stats_t.shape[0]))
        return out

    def _learn_chunks(self, store: RolloutStorage) -> Dict[str, Any]:
        """The rollout's chunks as tensors on the learning device, made once per learn call for
        all its epochs: only the keys the update reads, the action in network units."""
        c = self.cfg.learn
        chunks = store.sequence_chunks(c.chunk_len)
        keys = ["obs", "state", "first", "mask", "logp", "advantage", "return"]
        keys += [k for k in ("value", "action_mask")
                 if k in chunks and (k != "value" or c.value_clip is not None)]
        out = obs_as_tensor({k: chunks[k] for k in keys}, self.device)
        out["action"] = self._net_action(obs_as_tensor(
            chunks["raw_action" if "raw_action" in chunks else "action"], self.device))
        return out

    def _update_chunks(self, b: Dict[str, Any]) -> "_ChunkStep":
        """One step on a minibatch of chunks [B, L, ...] from their recorded start states. A
        Categorical head's log-probabilities come from the logits with no distribution object;
        the entropy joins the graph only when it has a weight in the loss, and the statistics
        are left to `_chunk_stats`."""
        c = self.cfg.learn
        if self.discrete:
            logits, value = self.model.outputs(b["obs"], b["state"], b["first"])
            log_pi = _normalised(logits)
            if "action_mask" in b:  # the same masked π that acted: in log π(a|s) and the entropy
                log_pi = _normalised(masked_logits(log_pi, b["action_mask"].bool()))
            new_logp = categorical_log_prob(log_pi, b["action"])
            entropy = _entropy(log_pi) if c.entropy_coef else None
        else:
            dist, value, _ = self.model(b["obs"], b["state"], b["first"], final_state=False)
            if "action_mask" in b:
                dist = masked_categorical(dist, b["action_mask"])
            new_logp, entropy = dist.log_prob(b["action"]), dist.entropy()
        old = b["value"] if c.value_clip is not None else None
        terms = clipped_terms(c, new_logp, entropy, value, b["logp"], b["advantage"], b["return"],
                              old, mask=b["mask"], stats=False)
        grad_norm = self._step(terms.loss)
        return _ChunkStep(torch.stack([terms.policy_loss, terms.value_loss, grad_norm]).detach(),
                          terms.log_ratio, log_pi.detach() if entropy is None else entropy.detach(),
                          b["mask"])

    def _chunk_stats(self, steps: List["_ChunkStep"]) -> torch.Tensor:
        """The statistics of _STATS, one row per minibatch step [k, 6]: the losses and grad norms
        as the steps recorded them; entropy, approx-KL and clip fraction as means over each
        minibatch's real steps, computed here for all the steps at once when their minibatches
        are of one shape."""
        losses = torch.stack([s.losses for s in steps])
        if len({s.mask.shape for s in steps}) == 1:
            k = len(steps)
            weight = torch.stack([s.mask for s in steps]).reshape(k, -1).float()
            log_ratio = torch.stack([s.log_ratio for s in steps]).reshape(k, -1)
            entropy = torch.stack([s.entropy for s in steps])
            if entropy.dim() == log_ratio.dim() + 2:  # log-probabilities [k, B, L, n]
                entropy = _entropy(entropy)
            denom = weight.sum(1).clamp(min=1.0)
            ent = (entropy.reshape(k, -1) * weight).sum(1) / denom
            # a left-out step has log-ratio 0, which adds 0 to both sums: rescale the row means
            # to means over the real steps
            kl, clip = ratio_stats(log_ratio, self.cfg.learn.clip_ratio, dim=1)
            scale = log_ratio.shape[1] / denom
            kl, clip = kl * scale, clip * scale
        else:
            ent = torch.stack([mean_over(s.mask, torch.float32)[0](
                _entropy(s.entropy) if s.entropy.dim() > s.mask.dim() else s.entropy)
                for s in steps])
            kl, clip = (torch.stack(x) for x in zip(*(
                ratio_stats(s.log_ratio, self.cfg.learn.clip_ratio, s.mask) for s in steps)))
        return torch.stack([losses[:, 0], losses[:, 1], ent, kl, clip, losses[:, 2].float()], 1)


class _ChunkStep(NamedTuple):
    """What one minibatch step leaves for the statistics (all detached)."""

    losses: torch.Tensor     # [policy_loss, value_loss, grad_norm]
    log_ratio: torch.Tensor  # [B, L], 0 where mask is False
    entropy: torch.Tensor    # [B, L], or a Categorical's log-probabilities [B, L, n] to take it of
    mask: torch.Tensor       # [B, L] bool: the real steps


def _normalised(logits: torch.Tensor) -> torch.Tensor:
    """log π from logits [..., n], as torch's Categorical(logits=...) normalises them (so the
    update trains the same weights as through the distribution object)."""
    return logits - logits.logsumexp(-1, keepdim=True)


def _entropy(log_pi: torch.Tensor) -> torch.Tensor:
    """−Σ π log π of normalised log-probabilities [..., n], as Categorical.entropy computes it
    (π by softmax; a masked action's −1e8 adds 0)."""
    return -(log_pi * log_pi.softmax(-1)).sum(-1)


def _mode(dist: Any) -> torch.Tensor:
    """The most likely action of π in network units."""
    if isinstance(dist, torch.distributions.Categorical):
        return dist.logits.argmax(-1)
    if isinstance(dist, torch.distributions.Independent):
        return dist.base_dist.loc
    return dist.mode


def _to_numpy(state: Mapping[str, Any]) -> Dict[str, Any]:
    return {k: _to_numpy(v) if isinstance(v, Mapping) else v.cpu().numpy()
            for k, v in state.items()}


def _to_torch_state(state: Mapping[str, Any], device: torch.device) -> Dict[str, Any]:
    return {k: _to_torch_state(v, device) if isinstance(v, Mapping)
            else torch.as_tensor(np.asarray(v), dtype=torch.float32, device=device)
            for k, v in state.items()}


def _row(tree: Any, t: int) -> Any:
    return {k: _row(v, t) for k, v in tree.items()} if isinstance(tree, Mapping) else tree[t]


def _swap(tree: Any) -> Any:
    """[T, N, ...] leaves → [N, T, ...]."""
    if isinstance(tree, Mapping):
        return {k: _swap(v) for k, v in tree.items()}
    return tree.transpose(0, 1)


def _merge_rows(tree: Any) -> Any:
    if isinstance(tree, Mapping):
        return {k: _merge_rows(v) for k, v in tree.items()}
    return tree.reshape((-1,) + tuple(tree.shape[2:]))
