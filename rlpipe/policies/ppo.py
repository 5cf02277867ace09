"""PPO with the clipped surrogate objective (Schulman et al. 2017), for Discrete, MultiDiscrete,
MultiBinary and Box actions.

collect (on the acting copy):  a ~ π_old(·|s),  logp = log π_old(a|s),  value = V_old(s).
  Discrete: a Categorical over logits.  Box: a diagonal Gaussian N(μ(s), exp(log_std)), the
  log-std one learned parameter per action dimension. MultiDiscrete: a Categorical per component;
  MultiBinary: a Bernoulli per component (log-prob and entropy summed over the components,
  models/distributions.py). The env gets the sample clipped to the
  Box bounds ("action"); the learner uses the unclipped sample ("raw_action") and its logp.
The middleware in between (gae_estimator) adds, per row, adv = GAE(γ, λ) and return = adv + value.

learn, per rollout: `epoch_per_collect` passes over shuffled minibatches of `batch_size` rows,
  ratio  = exp(log π(a|s) − logp)
  A      = adv, normalised to mean 0 / std 1 within the minibatch when adv_norm
  L_clip = mean(max(−A·ratio, −A·clip(ratio, 1 − ε, 1 + ε)))
  L_V    = ½·mean((V(s) − return)²), or with value_clip c:
           ½·mean(max((V − R)², (value + clip(V − value, −c, c) − R)²))
  loss   = L_clip + value_coef·L_V − entropy_coef·H[π(·|s)]
then a gradient step with the global grad norm clipped to grad_clip. The learning rate is constant
or decays linearly to 0 over `lr_decay_env_steps` env steps (rows learned from). With target_kl
set, the epochs stop early once an epoch's mean approx-KL exceeds it.
Action masks (Discrete; MultiDiscrete: one segment per component): invalid logits are pushed to
−1e8 (_masks.masked_categorical) when acting, in log π(a|s) of the update (batch "action_mask")
and in the entropy.
"""
from __future__ import annotations

import copy
import threading
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Sequence

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from rlpipe.data import to_torch
from rlpipe.data_parallel import mean_across_ranks
from rlpipe.models import ActorCritic, batch_rows, obs_as_tensor
from rlpipe.models.actor_critic import head_distribution
from rlpipe.models.distributions import categorical_entropy, categorical_log_prob
from rlpipe.random_streams import COLLECT, LEARN, seed_or_draw, torch_rng
from rlpipe.schema import key

from ._common import (adam, adam_step, clone_state, grad_step, hard_update, model_spaces,
                      resolve_device)
from ._masks import masked_categorical, masked_logits, masked_mode, policy_mask
from ._ppo_loss import PPOTerms, clipped_terms, normalise_adv, ratio_stats
from .base import Policy, _CollectFace

__all__ = ["PPOPolicy"]

_ACTIVATIONS = {"tanh": nn.Tanh, "relu": nn.ReLU, "elu": nn.ELU}
_STATS = ("policy_loss", "value_loss", "entropy", "approx_kl", "clip_frac", "grad_norm")


class _Step(NamedTuple):
    """What one minibatch step leaves for the epoch's statistics (all detached)."""

    losses: torch.Tensor  # [policy_loss, value_loss, grad_norm]
    log_ratio: torch.Tensor  # [rows]
    entropy: torch.Tensor  # [rows], or a Categorical's log-probabilities [rows, n] to take it of


def _rows(tree: Any, rows: Any) -> Any:
    """`tree[rows]` for a tensor, or the same rows of every tensor of a (nested) dict."""
    if isinstance(tree, torch.Tensor):
        return tree[rows]
    return {k: _rows(v, rows) for k, v in tree.items()}


def _minibatches(tree: Any, size: int) -> List[Any]:
    """Consecutive minibatches of `size` rows (the last may be smaller) of a tensor or a
    (nested) dict of them: one `split` per tensor, each minibatch a view."""
    if isinstance(tree, torch.Tensor):
        return list(tree.split(size))
    keys, parts = list(tree), [_minibatches(v, size) for v in tree.values()]
    return [dict(zip(keys, rows)) for rows in zip(*parts)]


def _normalise_per_minibatch(adv: torch.Tensor, size: int) -> torch.Tensor:
    """`adv` [n] with each run of `size` rows (the epoch's minibatches, the last one may be
    shorter) normalised within itself: the whole minibatches in one pass over a [k, size] view."""
    whole = adv.shape[0] // size * size
    parts = [normalise_adv(adv[:whole].view(-1, size), dim=1).reshape(-1)] if whole else []
    if whole < adv.shape[0]:
        parts.append(normalise_adv(adv[whole:]))
    return parts[0] if len(parts) == 1 else torch.cat(parts)


class _PPOCollectFace(_CollectFace):
    """`policy.collect_mode` of PPO: also `value(obs) -> np.ndarray [B]` (V of the acting copy),
    which gae_estimator uses to bootstrap truncated episodes and the rollout's last step."""

    __slots__ = ("value",)

    def __init__(self, policy: "PPOPolicy") -> None:
        super().__init__(policy)
        self.value = policy.value


class PPOPolicy(Policy):
    """Proximal policy optimisation (clipped objective) with an actor-critic network."""

    pipeline = "on-policy"  # trained by the zoo's on-policy pipeline
    learn_stats = (*_STATS, "lr", "n_updates")
    supports_action_mask = True  # faces take action_mask=, learn reads "action_mask"
    mask_space_types = (gym.spaces.Discrete, gym.spaces.MultiDiscrete)
    obs_space_types = (gym.spaces.Box, gym.spaces.Dict, gym.spaces.Tuple, gym.spaces.Discrete,
                       gym.spaces.MultiDiscrete)
    action_space_types = (gym.spaces.Discrete, gym.spaces.MultiDiscrete, gym.spaces.MultiBinary,
                          gym.spaces.Box)
    space_hint = "PPO acts in Discrete(n), 1-D MultiDiscrete, 1-D MultiBinary or 1-D Box spaces."

    @classmethod
    def config_keys(cls) -> Dict[str, Any]:
        return dict(
            device=key("cpu", 'learner device: "cpu", "cuda" or "auto"'),
            seed=key(None, "seeds network init, action sampling and minibatch order"),
            model=dict(
                hidden=key((64, 64), "layers of the actor's and the critic's MLP"),
                activation=key("tanh", '"tanh", "relu" or "elu"'),
                share_encoder=key(False, "one encoder for actor and critic (e.g. for images)"),
                init_log_std=key(0.0, "Box actions: initial log-std of the Gaussian"),
                obs_norm=key(False, "running mean/std observation normalisation (vectors)"),
                encoders=key({}, 'per Dict key encoder kind, e.g. {"image": "mlp"}'),
            ),
            learn=dict(
                lr=key(3e-4, "Adam learning rate (the start value when decaying)"),
                lr_schedule=key("constant", '"constant" or "linear" (to 0 over lr_decay_env_steps)'),
                lr_decay_env_steps=key(None, "env steps of the linear decay (zoo: max_env_step)"),
                epoch_per_collect=key(10, "passes over each rollout"),
                batch_size=key(64, "rows per minibatch"),
                gamma=key(0.99, "discount (read by gae_estimator)"),
                gae_lambda=key(0.95, "GAE λ (read by gae_estimator)"),
                reward_scale=key(1.0, "rewards × this before GAE (read by gae_estimator)"),
                clip_ratio=key(0.2, "ε of the clipped objective"),
                value_clip=key(None, "c: clip V's change to ±c around the collected value"),
                value_coef=key(0.5, "weight of the value loss"),
                entropy_coef=key(0.0, "weight of the entropy bonus"),
                adv_norm=key(True, "normalise advantages per minibatch"),
                grad_clip=key(0.5, "max global grad norm (None: no clipping)"),
                target_kl=key(None, "stop the epochs early above this approx-KL (None: never)"),
            ),
            collect=dict(
                device=key("cpu", "where the acting copy lives"),
            ),
        )

    def __init__(self, cfg: Mapping | None, obs_space: Optional[gym.Space] = None,
                 action_space: Optional[gym.Space] = None, *,
                 model: Optional[nn.Module] = None,
                 enable_field: Optional[Sequence[str] | str] = None) -> None:
        """`(cfg, obs_space, action_space)` builds the network from `cfg.model`; DI-engine's
        `(cfg, model=ActorCritic(obs_space, action_space, ...))` trains the given one (the
        spaces come from it, or are checked against it when passed too)."""
        if model is not None:
            if not isinstance(model, ActorCritic):
                raise TypeError(f"{type(self).__name__}(cfg, model=...): the model must be an "
                                f"rlpipe.models.ActorCritic (the policy calls its actor and "
                                f"critic heads), got a {type(model).__name__}")
            obs_space, action_space = model_spaces(model, obs_space, action_space,
                                                   type(self).__name__)
        elif obs_space is None or action_space is None:
            raise TypeError(f"{type(self).__name__} needs (cfg, obs_space, action_space) or (cfg, "
                            f"model=...) with an rlpipe.models.ActorCritic built for the env")
        super().__init__(cfg, obs_space, action_space, enable_field=enable_field)
        self._check_cfg()
        c = self.cfg
        self.device = resolve_device(c.device)
        self.collect_device = resolve_device(c.collect.device)
        self._collect_on_cpu = self.collect_device.type == "cpu"
        self.discrete = isinstance(action_space, gym.spaces.Discrete)
        # MultiDiscrete / MultiBinary: sampled per component (models/distributions.py)
        self.multi = isinstance(action_space, (gym.spaces.MultiDiscrete, gym.spaces.MultiBinary))
        self.action_offset: Any = int(action_space.start) if self.discrete else 0
        if isinstance(action_space, gym.spaces.MultiDiscrete):
            self.action_offset = np.asarray(action_space.start)
        if not (self.discrete or self.multi):
            self._low, self._high = action_space.low, action_space.high
        with torch.random.fork_rng(devices=[]):  # seed our init without touching global RNG
            if c.seed is not None:
                torch.manual_seed(c.seed)
            self.model = self._build_model() if model is None else model
        self.model.to(self.device)
        self.acting = copy.deepcopy(self.model).to(self.collect_device).requires_grad_(False)
        self._params = list(self.model.parameters())
        self.optimizer = adam(self._params, c.learn.lr, self.device, eps=1e-5)
        seed = seed_or_draw(c.seed)  # acting and minibatch order: streams apart from the init
        self._collect_rng = torch_rng(self.collect_device, seed, COLLECT)
        self._learn_rng = torch_rng("cpu", seed, LEARN)
        self.learned_env_steps = 0  # rows learned from: the clock of the lr schedule
        self._lock = threading.Lock()  # a learn step's weight update vs refresh / eval / state
        self._collect_face = _PPOCollectFace(self)

    def _build_model(self) -> nn.Module:
        m = self.cfg.model
        return ActorCritic(self.obs_space, self.action_space, m.hidden, _ACTIVATIONS[m.activation],
                           share_encoder=m.share_encoder, init_log_std=m.init_log_std,
                           obs_norm=m.obs_norm, encoders=m.encoders)

    def _check_cfg(self) -> None:
        learn, model = self.cfg.learn, self.cfg.model
        for key in ("lr", "epoch_per_collect", "batch_size", "gamma", "gae_lambda", "clip_ratio",
                    "value_coef", "entropy_coef", "reward_scale"):
            if learn[key] is None:
                raise ValueError(f"policy.learn.{key} must be set (it is None).")
        if model.hidden is None:
            raise ValueError("policy.model.hidden must be a tuple of layer sizes (it is None).")
        if model.activation not in _ACTIVATIONS:
            raise ValueError(f"policy.model.activation must be one of {sorted(_ACTIVATIONS)}, "
                             f"got {model.activation!r}.")
        if learn.lr_schedule not in ("constant", "linear"):
            raise ValueError("policy.learn.lr_schedule must be 'constant' or 'linear', "
                             f"got {learn.lr_schedule!r}.")
        if learn.lr_schedule == "linear" and not (learn.lr_decay_env_steps or 0) > 0:
            raise ValueError("policy.learn.lr_schedule='linear' needs policy.learn."
                             "lr_decay_env_steps > 0 (the env steps over which lr decays to 0), "
                             f"got {learn.lr_decay_env_steps!r}.")
        for key in ("epoch_per_collect", "batch_size"):
            if learn[key] < 1:
                raise ValueError(f"policy.learn.{key} must be >= 1, got {learn[key]}.")
        for key in ("gamma", "gae_lambda"):
            if not 0.0 <= learn[key] <= 1.0:
                raise ValueError(f"policy.learn.{key} must be in [0, 1], got {learn[key]}.")
        for key in ("clip_ratio", "reward_scale", "value_clip", "grad_clip", "target_kl"):
            if learn[key] is not None and not learn[key] > 0:
                raise ValueError(f"policy.learn.{key} must be > 0 (or None where allowed), "
                                 f"got {learn[key]}.")

    # --- collect: sample from π_old on the acting copy ------------------------------------------
    def _forward_collect(self, obs: Any, action_mask: Any = None) -> Dict[str, np.ndarray]:
        obs_t = obs_as_tensor(obs, self.collect_device)
        mask = None if action_mask is None else policy_mask(
            self.action_space, action_mask, batch_rows(obs), "PPO collect", self.collect_device)
        with torch.inference_mode():
            if self.discrete:  # from the logits, with no distribution object (as in learning)
                logits, value = self.acting.outputs(obs_t)
                log_pi = torch.log_softmax(masked_logits(logits, mask), -1)
                # the draws [B, 1] index log π as they are (categorical_log_prob's gather)
                drawn = torch.multinomial(log_pi.exp(), 1, generator=self._collect_rng)
                raw, logp = drawn.squeeze(1), log_pi.gather(1, drawn).squeeze(1)
            else:
                dist, value = self.acting(obs_t)
                raw, logp = self._sample(masked_categorical(dist, mask))
        return self._collect_output(self._host(raw), logp, value)

    def _sample(self, dist: Any) -> Any:
        """(raw action, log π_old(raw)) drawn with the collect generator."""
        if self.discrete:
            raw = torch.multinomial(dist.probs, 1, generator=self._collect_rng).squeeze(1)
        elif self.multi:
            raw = dist.sample_with(self._collect_rng)
        else:
            normal = dist.base_dist
            noise = torch.randn(normal.loc.shape, generator=self._collect_rng,
                                device=normal.loc.device)
            raw = normal.loc + normal.scale * noise
        return raw, dist.log_prob(raw)

    def _collect_output(self, raw_np: np.ndarray, logp: torch.Tensor, value: torch.Tensor
                        ) -> Dict[str, np.ndarray]:
        out = {"logp": self._host(logp), "value": self._host(value)}
        if self.discrete:  # a new array only where the space starts elsewhere than at 0
            out["action"] = raw_np + self.action_offset if self.action_offset else raw_np
        elif self.multi:
            out["action"] = self._env_action(raw_np)
        else:  # the env gets the clipped action; the learner the sample whose logp we stored
            out["action"] = np.clip(raw_np, self._low, self._high)
            out["raw_action"] = raw_np
        return out

    def _host(self, tensor: torch.Tensor) -> np.ndarray:
        """An acting output as a NumPy array (no `.cpu()` call where the acting copy is on the
        CPU already: it would return the same tensor)."""
        return tensor.numpy() if self._collect_on_cpu else tensor.cpu().numpy()

    def value(self, obs: Any) -> np.ndarray:
        """V(obs) of the acting copy, float32 [B] (the critic that valued the rollout)."""
        with torch.inference_mode():
            v = self.acting.value(obs_as_tensor(obs, self.collect_device))
        return v.cpu().numpy()

    def _refresh(self) -> None:
        with self._lock:
            hard_update(self.acting, self.model)

    # --- eval: the mode of π (argmax / mean) on the learner's network ---------------------------
    def _forward_eval(self, obs: Any, action_mask: Any = None) -> Dict[str, np.ndarray]:
        obs_t = obs_as_tensor(obs, self.device)
        mask = policy_mask(self.action_space, action_mask, batch_rows(obs), "PPO eval",
                           self.device)
        with self._lock, torch.inference_mode():
            if mask is None:
                action = self.model.mode(obs_t).cpu().numpy()
            else:  # the most likely valid action (of each component)
                action = masked_mode(masked_categorical(self.model.dist(obs_t), mask)).cpu().numpy()
        return {"action": self._greedy_action(action)}

    def _greedy_action(self, action: np.ndarray) -> np.ndarray:
        """The mode of π in network units → what the env takes."""
        if self.discrete:
            return action + self.action_offset
        if self.multi:
            return self._env_action(action)
        return np.clip(action, self._low, self._high)

    def _env_action(self, raw: np.ndarray) -> np.ndarray:
        """A MultiDiscrete / MultiBinary action [B, k] of the network → env dtype and start."""
        return (raw.astype(np.int64) + self.action_offset).astype(self.action_space.dtype)

    def _net_action(self, action: torch.Tensor) -> torch.Tensor:
        """Batch actions as the env took them → what the distribution's log_prob takes."""
        if self.discrete:
            return action.long() - self.action_offset
        if isinstance(self.action_space, gym.spaces.MultiDiscrete):
            offset = torch.as_tensor(self.action_offset, device=action.device)
            return action.long() - offset
        return action.float()

    # --- learn: epochs of clipped-objective minibatch steps over one rollout ----------------------
    def current_lr(self) -> float:
        """The learning rate the next learn_mode.forward uses."""
        c = self.cfg.learn
        if c.lr_schedule == "constant":
            return float(c.lr)
        return float(c.lr) * max(0.0, 1.0 - self.learned_env_steps / c.lr_decay_env_steps)

    def _forward_learn(self, batch: Mapping[str, Any]) -> Dict[str, Any]:
        c = self.cfg.learn
        action_key = "raw_action" if "raw_action" in batch else "action"
        keys = ["obs", action_key, "logp", "adv", "return"] + (["value"] if c.value_clip else [])
        missing = [k for k in keys if k not in batch]
        if missing:
            raise KeyError(f"PPO learn batch lacks {missing}; it has {sorted(batch)}. Feed the "
                           "rollout through gae_estimator (adds adv/return) from a PPO collect_mode "
                           "(logp, value); random warm-up steps have no logp: set "
                           "policy.collect.random_collect_size=0.")
        if "action_mask" in batch:
            keys.append("action_mask")
        # the observation as plain (nested) dicts of tensors: minibatches index them per key
        # without going through a tree library
        b = dict(to_torch({k: batch[k] for k in keys if k != "obs"}, self.device))
        obs = obs_as_tensor(batch["obs"], self.device)
        # where the network's input stage holds no weights (parts read flat or one-hot), its
        # output is computed here once, and the minibatches take rows of it
        features = self.model.fixed_features(obs)
        if features is None:
            b["obs"] = obs
        else:
            b["features"] = features
        n = int(b["adv"].shape[0])
        if n == 0:
            raise ValueError("PPO learn batch has no rows.")
        b["action"] = self._net_action(b.pop(action_key))
        lr = self.current_lr()
        for group in self.optimizer.param_groups:
            group["lr"] = lr

        stats, n_updates = [], 0
        for _ in range(c.epoch_per_collect):
            order = torch.randperm(n, generator=self._learn_rng).to(self.device)
            # one gather and one split per key and epoch; the minibatches are views of it
            shuffled = _rows(b, order)
            if c.adv_norm:  # every minibatch's advantages normalised within it, at once
                shuffled["adv"] = _normalise_per_minibatch(shuffled["adv"].float(), c.batch_size)
            epoch = self._epoch_stats([self._update(mb) for mb in
                                       _minibatches(shuffled, c.batch_size)])
            stats.append(epoch)
            n_updates += epoch.shape[0]
            # in a data-parallel run the ranks' mean KL decides, so they all stop alike
            if c.target_kl is not None and mean_across_ranks(
                    epoch[:, 3].mean(), "PPO's approx-KL") > c.target_kl:
                break
        self.learned_env_steps += n
        if self.model.obs_norm is not None:  # the next rollout is collected with the new stats
            with self._lock:
                self.model.obs_norm.update(obs)
        out: Dict[str, Any] = dict(zip(_STATS, torch.cat(stats).mean(0).tolist()))
        out.update(lr=lr, n_updates=n_updates)
        return out

    def _update(self, mb: Dict[str, Any]) -> _Step:
        """One gradient step on the minibatch `mb` (its action in network units). A Categorical
        head's log-probabilities come from log_softmax of the logits, with no distribution
        object; the entropy joins the graph only when it has a weight in the loss."""
        c = self.cfg.learn
        mask = mb.get("action_mask")
        features = mb.get("features")
        if self.discrete:
            logits, value = (self.model.outputs(mb["obs"]) if features is None
                             else self.model.head_outputs(features))
            log_pi = torch.log_softmax(masked_logits(logits, None if mask is None else mask.bool()),
                                       -1)
            new_logp = categorical_log_prob(log_pi, mb["action"])
            entropy = categorical_entropy(log_pi) if c.entropy_coef else None
        else:
            if features is None:
                dist, value = self.model(mb["obs"])
            else:
                out, value = self.model.head_outputs(features)
                dist = head_distribution(out, False, self.model.multi, self.model.log_std)
            if mask is not None:  # the same masked π that acted: in log π(a|s) and the entropy
                dist = masked_categorical(dist, mask)
            new_logp, entropy = dist.log_prob(mb["action"]), dist.entropy()
        old = mb["value"] if c.value_clip is not None else None
        terms = clipped_terms(c, new_logp, entropy, value, mb["logp"], mb["adv"], mb["return"],
                              old, stats=False, adv_normalised=True)
        grad_norm = self._step(terms.loss)
        return _Step(torch.stack([terms.policy_loss, terms.value_loss, grad_norm]).detach(),
                     terms.log_ratio,
                     log_pi.detach() if entropy is None else entropy.detach())

    def _step(self, loss: torch.Tensor) -> torch.Tensor:
        """One gradient step on `loss`; the (pre-clipping) gradient norm."""
        grad_norm = grad_step(self.optimizer, loss, self._params, self.cfg.learn.grad_clip,
                              norm=True)
        with self._lock:
            adam_step(self.optimizer)
            self.train_iter += 1
        return grad_norm

    def _optimise(self, terms: PPOTerms) -> torch.Tensor:
        """One gradient step on `terms.loss`; the statistics of _STATS as one tensor (LSTM-PPO's
        update, whose terms carry their statistics)."""
        grad_norm = self._step(terms.loss)
        return torch.stack([terms.policy_loss, terms.value_loss, terms.entropy, terms.approx_kl,
                            terms.clip_frac, grad_norm.float()]).detach()

    def _epoch_stats(self, steps: List[_Step]) -> torch.Tensor:
        """The statistics of _STATS, one row per minibatch of the epoch [k, 6]: the losses and
        grad norms as the steps recorded them; entropy, approx-KL and clip fraction as the mean
        over each minibatch's rows, computed here once for the whole epoch."""
        sizes = [int(s.log_ratio.shape[0]) for s in steps]
        entropy = torch.cat([s.entropy for s in steps])
        if entropy.dim() == 2:  # log-probabilities of a Categorical: the entropy of each row
            entropy = categorical_entropy(entropy)
        log_ratio = torch.cat([s.log_ratio for s in steps])
        if len(set(sizes)) == 1:  # equal minibatches: one mean along rows of a [k, size] view
            k = len(sizes)
            ent = entropy.view(k, -1).mean(1)
            kl, clip = ratio_stats(log_ratio.view(k, -1), self.cfg.learn.clip_ratio, dim=1)
        else:
            ent = torch.stack([e.mean() for e in entropy.split(sizes)])
            kl, clip = (torch.stack(x) for x in zip(*(
                ratio_stats(r, self.cfg.learn.clip_ratio) for r in log_ratio.split(sizes))))
        losses = torch.stack([s.losses for s in steps])
        return torch.stack([losses[:, 0], losses[:, 1], ent, kl, clip, losses[:, 2].float()], 1)

    # --- state -----------------------------------------------------------------------------------
    def state_dict(self) -> Dict[str, Any]:
        with self._lock:
            return {
                "model": clone_state(self.model),
                "acting": clone_state(self.acting),
                "optimizer": copy.deepcopy(self.optimizer.state_dict()),
                "train_iter": self.train_iter,
                "learned_env_steps": self.learned_env_steps,
                "collect_rng": self._collect_rng.get_state(),
                "learn_rng": self._learn_rng.get_state(),
            }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        missing = {"model", "acting", "optimizer", "train_iter", "learned_env_steps",
                   "collect_rng", "learn_rng"} - set(state)
        if missing:
            raise KeyError(f"PPOPolicy.load_state_dict: the state lacks {sorted(missing)}; "
                           "it must come from PPOPolicy.state_dict().")
        with self._lock:
            self.model.load_state_dict(state["model"])
            self.acting.load_state_dict(state["acting"])
            self.optimizer.load_state_dict(state["optimizer"])
            self.train_iter = int(state["train_iter"])
            self.learned_env_steps = int(state["learned_env_steps"])
            self._collect_rng.set_state(state["collect_rng"].cpu())
            self._learn_rng.set_state(state["learn_rng"].cpu())
