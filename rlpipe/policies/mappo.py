"""MAPPO and IPPO: PPO's clipped objective over (env, agent) rows (Yu et al. 2022, "The Surprising
Effectiveness of PPO in Cooperative Multi-Agent Games"; de Witt et al. 2020 for IPPO).

One actor for all agents (an agent-id one-hot joins the observation) unless share_params is off;
MAPPO's critic reads the global state (or, without one, all agents' observations), IPPO's the own.

collect (acting copy), per env row b and agent i:  a ~ π_old(·|o_i),  logp = log π_old(a|o_i),
  value = V_old(critic input of i)  → "action" [n, A, ...], "logp" [n, A], "value" [n, A].
gae_estimator gives, per (env, agent) row, adv = GAE(γ, λ) and return = adv + value; rows of
absent agents (agent_mask False) carry nothing.
learn, per rollout: `epoch_per_collect` passes over `n_minibatches` shuffled minibatches of env
rows; with w = agent_mask (absent agents weigh 0 in every mean, and in the advantage statistics):
  ratio  = exp(log π(a|o) − logp),  A = adv (normalised over the present rows when adv_norm)
  L_clip = Σ w·max(−A·ratio, −A·clip(ratio, 1 ± ε)) / Σ w
  value normalisation (ValueNorm): the critic learns returns normalised by a running mean/std
  of the returns it has seen (an exact running moment, where the paper keeps a debiased EMA);
  L_V    = Σ w·max(ℓ(V − R̂), ℓ(V_old + clip(V − V_old, ±c) − R̂)) / Σ w, ℓ = Huber(δ) or ½x²
  loss   = L_clip + value_coef·L_V − entropy_coef·Σ w·H[π] / Σ w
then one Adam step; actor and critic gradient norms are clipped to grad_clip separately.
"""
from __future__ import annotations

import copy
import threading
from typing import Any, Dict, Mapping, Optional, Sequence

import gymnasium as gym
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from rlpipe.data import to_torch
from rlpipe.data_parallel import average_gradients
from rlpipe.models import batch_rows, obs_as_tensor
from rlpipe.models.multi_agent import MultiAgentActorCritic, agent_rows
from rlpipe.random_streams import COLLECT, LEARN, seed_or_draw, torch_rng
from rlpipe.schema import count, extend, key, positive

from ._agents import agent_action_mask, present_mask, zero_absent
from ._common import adam, clone_state, hard_update, model_spaces, resolve_device
from ._masks import masked_categorical, masked_mode
from ._ppo_loss import ppo_terms
from .base import Policy, _CollectFace

__all__ = ["IPPOPolicy", "MAPPOPolicy"]

_ACTIVATIONS = {"tanh": nn.Tanh, "relu": nn.ReLU, "elu": nn.ELU}
_STATS = ("policy_loss", "value_loss", "entropy", "approx_kl", "clip_frac", "actor_grad_norm",
          "critic_grad_norm")
_MODEL_KEYS = ("agent_id", "share_params", "init_log_std", "value_norm", "layer_norm")
_STATE_KEYS = {"model", "acting", "optimizer", "train_iter", "collect_rng", "learn_rng"}


class _MultiAgentCollectFace(_CollectFace):
    """collect_mode with `value(obs, global_state=, agent_mask=) -> [n, A]` for gae_estimator."""

    __slots__ = ("value",)

    def __init__(self, policy: "MAPPOPolicy") -> None:
        super().__init__(policy)
        self.value = policy.value


class MAPPOPolicy(Policy):
    """Multi-agent PPO with a centralised critic (global state, or all agents' observations)."""

    pipeline = "on-policy"
    learn_stats = (*_STATS, "n_updates")
    multi_agent = True  # built with n_agents/state_space; faces take agent_mask/global_state
    supports_action_mask = True
    mask_space_types = (gym.spaces.Discrete, gym.spaces.MultiDiscrete)
    obs_space_types = (gym.spaces.Box, gym.spaces.Dict, gym.spaces.Tuple, gym.spaces.Discrete,
                       gym.spaces.MultiDiscrete)
    action_space_types = (gym.spaces.Discrete, gym.spaces.MultiDiscrete, gym.spaces.MultiBinary,
                          gym.spaces.Box)
    space_hint = "MAPPO/IPPO act in Discrete(n), 1-D MultiDiscrete/MultiBinary or 1-D Box spaces."
    critic_inputs = ("auto", "state", "concat_obs")  # "auto": state where the env has one

    @classmethod
    def config_keys(cls) -> Dict[str, Any]:
        # Yu et al. 2022, appendix tables for MPE (common and MAPPO hyperparameters): lr 7e-4 for
        # actor and critic, Adam eps 1e-5, 64-unit ReLU MLPs, orthogonal init (policy gain 0.01),
        # ppo epochs 10, 1 mini-batch, clip 0.2 (policy and value), entropy 0.01, γ 0.99,
        # GAE λ 0.95, Huber value loss δ 10, value coef 1, max grad norm 10, value normalisation.
        return dict(
            device=key("cpu", 'learner device: "cpu", "cuda" or "auto"'),
            seed=key(None, "seeds network init, action sampling and minibatch order"),
            model=dict(
                hidden=key((64, 64), "MLP layers of the actor and of the critic"),
                activation=key("relu", '"tanh", "relu" or "elu"'),
                agent_id=key(True, "join a one-hot agent id to the inputs (shared params)"),
                share_params=key(True, "one actor and one critic for all agents"),
                critic_input=key("auto", '"auto" | "state" | "concat_obs" (IPPO: "local")'),
                init_log_std=key(0.0, "Box actions: initial log-std of the Gaussian"),
                value_norm=key(True, "ValueNorm: running mean/std of the return targets"),
                layer_norm=key(False, "LayerNorm on the inputs and after each hidden layer"),
            ),
            learn=dict(
                lr=key(7e-4, "actor's Adam learning rate"),
                critic_lr=key(7e-4, "critic's Adam learning rate"),
                epoch_per_collect=key(10, "passes over each rollout"),
                n_minibatches=key(1, "minibatches (of env rows) per pass",
                                  count(1, "minibatches per pass")),
                gamma=key(0.99, "discount (read by gae_estimator)"),
                gae_lambda=key(0.95, "GAE λ (read by gae_estimator)"),
                reward_scale=key(1.0, "rewards × this before GAE (read by gae_estimator)"),
                clip_ratio=key(0.2, "ε of the clipped objective"),
                value_clip=key(0.2, "c: clip the (normalised) value's change (None: no clip)"),
                value_loss=key("huber", '"huber" or "mse"'),
                huber_delta=key(10.0, "δ of the Huber value loss", positive("Huber threshold")),
                value_coef=key(1.0, "weight of the value loss"),
                entropy_coef=key(0.01, "weight of the entropy bonus"),
                adv_norm=key(True, "normalise advantages over each minibatch's present rows"),
                grad_clip=key(10.0, "max grad norm, actor and critic each (None: no clipping)"),
            ),
            collect=dict(device=key("cpu", "where the acting copy lives")),
        )

    def __init__(self, cfg: Mapping | None, obs_space: Optional[gym.Space] = None,
                 action_space: Optional[gym.Space] = None, *, n_agents: Optional[int] = None,
                 state_space: Optional[gym.Space] = None,
                 model: Optional[nn.Module] = None,
                 enable_field: Optional[Sequence[str] | str] = None) -> None:
        """`(cfg, obs_space, action_space, n_agents=, state_space=)` builds the network from
        `cfg.model`; DI-engine's `(cfg, model=MultiAgentActorCritic(...))` trains the given one
        (spaces, agent count and critic input come from it, or are checked against it)."""
        who = type(self).__name__
        if model is not None:
            obs_space, action_space, n_agents, state_space = self._model_layout(
                model, obs_space, action_space, n_agents, state_space)
        elif obs_space is None or action_space is None or n_agents is None:
            raise TypeError(f"{who} needs (cfg, obs_space, action_space, n_agents=..., "
                            f"state_space=...) or (cfg, model=...) with an "
                            f"rlpipe.models.MultiAgentActorCritic built for the env")
        super().__init__(cfg, obs_space, action_space, enable_field=enable_field)
        c = self.cfg
        self._check_cfg()
        self.n_agents, self.state_space = int(n_agents), state_space
        critic = c.model.critic_input if model is None else model.critic_input
        if critic == "auto":
            critic = "state" if state_space is not None else "concat_obs"
        self.critic_input = critic
        self.device = resolve_device(c.device)
        self.collect_device = resolve_device(c.collect.device)
        self.discrete = isinstance(action_space, gym.spaces.Discrete)
        self.box = isinstance(action_space, gym.spaces.Box)
        self.action_offset: Any = 0
        if self.discrete:
            self.action_offset = int(action_space.start)
        elif isinstance(action_space, gym.spaces.MultiDiscrete):
            self.action_offset = np.asarray(action_space.start)
        with torch.random.fork_rng(devices=[]):  # seed our init without touching global RNG
            if c.seed is not None:
                torch.manual_seed(c.seed)
            m = c.model
            self.model = model if model is not None else MultiAgentActorCritic(
                obs_space, action_space, self.n_agents, m.hidden, _ACTIVATIONS[m.activation],
                critic_input=critic, state_space=state_space, **{k: m[k] for k in _MODEL_KEYS})
        self.model.to(self.device)
        self.acting = copy.deepcopy(self.model).to(self.collect_device).requires_grad_(False)
        self._actor_params = self.model.actor_parameters()
        self._critic_params = self.model.critic_parameters()
        self.optimizer = adam([{"params": self._actor_params, "lr": c.learn.lr},
                               {"params": self._critic_params, "lr": c.learn.critic_lr}],
                              c.learn.lr, self.device, eps=1e-5)
        seed = seed_or_draw(c.seed)  # acting and minibatch order: streams apart from the init
        self._collect_rng = torch_rng(self.collect_device, seed, COLLECT)
        self._learn_rng = torch_rng("cpu", seed, LEARN)
        self._lock = threading.Lock()  # a learn step's weight update vs refresh / eval / state
        self._collect_face = _MultiAgentCollectFace(self)

    @classmethod
    def _model_layout(cls, model: nn.Module, obs_space: Optional[gym.Space],
                      action_space: Optional[gym.Space], n_agents: Optional[int],
                      state_space: Optional[gym.Space]) -> tuple:
        """(obs_space, action_space, n_agents, state_space) of a given network; what the caller
        passes as well must agree with it."""
        who = cls.__name__
        if not isinstance(model, MultiAgentActorCritic):
            raise TypeError(f"{who}(cfg, model=...): the model must be an "
                            f"rlpipe.models.MultiAgentActorCritic (the policy calls its actor, "
                            f"critic and value normalisation), got a {type(model).__name__}")
        obs_space, action_space = model_spaces(model, obs_space, action_space, who)
        if n_agents is not None and int(n_agents) != model.n_agents:
            raise ValueError(f"{who}(cfg, n_agents={n_agents}, model=...): the model was built "
                             f"for {model.n_agents} agents; build it with the env's n_agents")
        if state_space is not None and state_space != model.state_space:
            raise ValueError(f"{who}(cfg, state_space=..., model=...): the model was built for "
                             f"state_space {model.state_space}, not {state_space}; build it "
                             f"with the env's state_space")
        allowed = [k for k in cls.critic_inputs if k != "auto"]
        if model.critic_input not in allowed:
            raise ValueError(f"{who}(cfg, model=...): the model's critic_input is "
                             f"{model.critic_input!r}, but {who}'s critic reads one of {allowed}; "
                             f"build MultiAgentActorCritic(..., critic_input={allowed[0]!r})")
        return obs_space, action_space, model.n_agents, model.state_space

    def _check_cfg(self) -> None:
        learn, model, name = self.cfg.learn, self.cfg.model, type(self).__name__
        if model.critic_input not in self.critic_inputs:
            raise ValueError(f"{name}: policy.model.critic_input must be one of "
                             f"{self.critic_inputs}, got {model.critic_input!r}")
        for key, value, allowed in (("model.activation", model.activation, sorted(_ACTIVATIONS)),
                                    ("learn.value_loss", learn.value_loss, ["huber", "mse"])):
            if value not in allowed:
                raise ValueError(f"{name}: policy.{key} must be one of {allowed}, got {value!r}")
        for key in ("epoch_per_collect", "n_minibatches"):
            if not isinstance(learn[key], int) or learn[key] < 1:
                raise ValueError(f"{name}: policy.learn.{key} must be an int >= 1, "
                                 f"got {learn[key]!r}")
        for key in ("lr", "critic_lr", "clip_ratio", "huber_delta", "value_clip", "grad_clip"):
            if learn[key] is not None and not learn[key] > 0:
                raise ValueError(f"{name}: policy.learn.{key} must be > 0 (or None where "
                                 f"allowed), got {learn[key]!r}")

    def _to_env(self, raw: torch.Tensor, B: int) -> np.ndarray:
        """Network actions over B·A rows → env actions [B, A, ...]."""
        a = raw.cpu().numpy().reshape((B, self.n_agents) + tuple(raw.shape[1:]))
        if self.box:
            return np.clip(a, self.action_space.low, self.action_space.high)
        return (a.astype(np.int64) + self.action_offset).astype(self.action_space.dtype)

    # --- collect / eval --------------------------------------------------------------------------
    def _forward_collect(self, obs: Any, agent_mask: Any = None, global_state: Any = None,
                         action_mask: Any = None) -> Dict[str, np.ndarray]:
        dev, B = self.collect_device, batch_rows(obs)
        present = present_mask(self, obs, agent_mask, dev, "collect")
        mask = agent_action_mask(self.action_space, action_mask, present, "collect")
        obs_t = obs_as_tensor(obs, dev)
        state = None if global_state is None else obs_as_tensor(global_state, dev)
        with torch.inference_mode():
            dist = masked_categorical(self.acting.dist(obs_t), mask)
            value = self.acting.denormalize(self.acting.value(obs_t, state, present))
            if self.discrete:
                raw = torch.multinomial(dist.probs, 1, generator=self._collect_rng).squeeze(1)
            elif not self.box:
                raw = dist.sample_with(self._collect_rng)
            else:
                normal = dist.base_dist
                noise = torch.randn(normal.loc.shape, generator=self._collect_rng, device=dev)
                raw = normal.loc + normal.scale * noise
            logp = dist.log_prob(raw).reshape(B, self.n_agents)
        out = {"action": self._to_env(raw, B), "logp": logp.cpu().numpy(),
               "value": value.cpu().numpy()}
        if self.box:  # the learner takes the unclipped sample whose logp was stored
            out["raw_action"] = raw.cpu().numpy().reshape(out["action"].shape)
        return out

    def value(self, obs: Any, global_state: Any = None, agent_mask: Any = None) -> np.ndarray:
        """V per agent of the acting copy, float32 [B, A], in return units."""
        present = present_mask(self, obs, agent_mask, self.collect_device, "value")
        state = None if global_state is None else obs_as_tensor(global_state, self.collect_device)
        with torch.inference_mode():
            v = self.acting.value(obs_as_tensor(obs, self.collect_device), state, present)
            return self.acting.denormalize(v).cpu().numpy()

    def _refresh(self) -> None:
        with self._lock:
            hard_update(self.acting, self.model)

    def _forward_eval(self, obs: Any, agent_mask: Any = None, global_state: Any = None,
                      action_mask: Any = None) -> Dict[str, np.ndarray]:
        B = batch_rows(obs)
        present = present_mask(self, obs, agent_mask, self.device, "eval")
        mask = agent_action_mask(self.action_space, action_mask, present, "eval")
        obs_t = obs_as_tensor(obs, self.device)
        with self._lock, torch.inference_mode():
            if mask is None:
                action = self.model.mode(obs_t).flatten(0, 1)
            else:  # the most likely valid action
                action = masked_mode(masked_categorical(self.model.dist(obs_t), mask))
        return {"action": self._to_env(action, B)}

    # --- learn -----------------------------------------------------------------------------------
    def _forward_learn(self, batch: Mapping[str, Any]) -> Dict[str, Any]:
        c = self.cfg.learn
        act_key = "raw_action" if "raw_action" in batch else "action"
        keys = ["obs", act_key, "logp", "adv", "return", "agent_mask"]
        keys += ["value"] * bool(c.value_clip) + ["global_state"] * (self.critic_input == "state")
        missing = [k for k in keys if k not in batch]
        if missing:
            raise KeyError(f"{type(self).__name__} learn batch lacks {missing}; it has "
                           f"{sorted(batch)}. Collect with a MultiAgentEnvManager (agent_mask, "
                           "global_state) and this policy's collect_mode (logp, value), then "
                           "gae_estimator (adv, return).")
        keys += ["action_mask"] if "action_mask" in batch else []
        b = to_torch({k: batch[k] for k in keys}, self.device)
        w = b.pop("agent_mask").bool()
        n = int(w.shape[0])
        if n == 0 or not w.any():
            raise ValueError(f"{type(self).__name__} learn batch has no present agent rows.")
        b = zero_absent(b, w)  # what absent agents carry never reaches a number we use
        b["action"] = self._net_action(b.pop(act_key))
        if "action_mask" in b:
            b["action_mask"] = b["action_mask"].bool() | ~w.unsqueeze(-1)
        norm = self.model.value_norm
        if norm is not None:  # the next critic targets are normalised with these statistics
            with self._lock:
                norm.update(b["return"][w])
        # Returns and old values in the critic's units, once for every minibatch of this call:
        # the statistics stay as they are until the next call.
        b["return"] = self.model.normalize(b["return"].float())
        if c.value_clip is not None:
            b["value"] = self.model.normalize(b["value"].float())
        if self.model.fixed_inputs:  # the networks' inputs (ids joined) once, for every minibatch
            b["inputs"] = self.model.inputs(b.pop("obs"), b.pop("global_state", None), w)
        stats = []
        for _ in range(c.epoch_per_collect):
            order = torch.randperm(n, generator=self._learn_rng).to(self.device)
            stats += [self._update(b, w, idx)
                      for idx in torch.tensor_split(order, min(c.n_minibatches, n))]
        out: Dict[str, Any] = dict(zip(_STATS, torch.stack(stats).mean(0).tolist()))
        out.update(n_updates=len(stats))
        return out

    def _net_action(self, action: torch.Tensor) -> torch.Tensor:
        if self.box or isinstance(self.action_space, gym.spaces.MultiBinary):
            return action.float()
        return action.long() - torch.as_tensor(self.action_offset, device=action.device)

    def _update(self, b: Dict[str, Any], w_all: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        c, model = self.cfg.learn, self.model
        w = w_all[idx]
        if "inputs" in b:
            dist, value = model.heads(*(x[idx] for x in b["inputs"]))
        else:
            obs = agent_rows(b["obs"], lambda t: t[idx])
            state = b["global_state"][idx] if "global_state" in b else None
            dist, value = model(obs, state, w)
        if "action_mask" in b:
            dist = masked_categorical(dist, b["action_mask"][idx].flatten(0, 1))
        old = b["value"][idx].reshape(-1) if c.value_clip is not None else None
        # The critic learns normalised returns; Yu et al. normalise advantages by the population std.
        terms = ppo_terms(c, dist, value.reshape(-1), b["action"][idx].flatten(0, 1),
                          b["logp"][idx].reshape(-1), b["adv"][idx].reshape(-1),
                          b["return"][idx].reshape(-1), old, mask=w.reshape(-1),
                          value_err=self._value_err, unbiased_adv_std=False)
        self.optimizer.zero_grad(set_to_none=True)
        terms.loss.backward()
        average_gradients(self.optimizer)  # across the ranks of a data-parallel run, if any
        limit = float("inf") if c.grad_clip is None else c.grad_clip
        actor_norm = nn.utils.clip_grad_norm_(self._actor_params, limit)
        critic_norm = nn.utils.clip_grad_norm_(self._critic_params, limit)
        with self._lock:
            self.optimizer.step()
            self.train_iter += 1
        return torch.stack([terms.policy_loss, terms.value_loss, terms.entropy, terms.approx_kl,
                            terms.clip_frac, actor_norm.float(), critic_norm.float()]).detach()

    def _value_err(self, value: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        if self.cfg.learn.value_loss == "huber":
            return F.huber_loss(value, target, reduction="none", delta=self.cfg.learn.huber_delta)
        return 0.5 * (value - target) ** 2

    # --- state -----------------------------------------------------------------------------------
    def state_dict(self) -> Dict[str, Any]:
        with self._lock:
            return {"model": clone_state(self.model), "acting": clone_state(self.acting),
                    "optimizer": copy.deepcopy(self.optimizer.state_dict()),
                    "train_iter": self.train_iter, "collect_rng": self._collect_rng.get_state(),
                    "learn_rng": self._learn_rng.get_state()}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        missing = _STATE_KEYS - set(state)
        if missing:
            raise KeyError(f"{type(self).__name__}.load_state_dict: the state lacks "
                           f"{sorted(missing)}; it must come from its state_dict().")
        with self._lock:
            self.model.load_state_dict(state["model"])
            self.acting.load_state_dict(state["acting"])
            self.optimizer.load_state_dict(state["optimizer"])
            self.train_iter = int(state["train_iter"])
            self._collect_rng.set_state(state["collect_rng"].cpu())
            self._learn_rng.set_state(state["learn_rng"].cpu())


class IPPOPolicy(MAPPOPolicy):
    """Independent PPO: MAPPO with each agent's critic on its own observation (and agent id)."""

    critic_inputs = ("local",)

    @classmethod
    def config_keys(cls) -> Dict[str, Any]:
        return extend(MAPPOPolicy.config_keys(), {"model": {"critic_input": "local"}})

