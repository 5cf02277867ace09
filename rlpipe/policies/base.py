"""The policy interface: three faces (collect / eval / learn), defaults, state, space checks.

A policy subclass declares its settings in `config_keys()` (or gives a plain `default_config()`),
and implements the four `_forward_*`/`_refresh` methods and `state_dict()`/`load_state_dict()`;
the base builds the faces that middleware use:

- ``policy.collect_mode``: ``forward(obs, **collect_kwargs) -> {"action": np.ndarray, ...}`` and
  ``refresh()`` (copy the learner's weights into the acting copy; called at each iteration start),
  and ``value(obs)`` where the policy defines a ``value`` method (on-policy baselines);
- ``policy.eval_mode``: ``forward(obs) -> {"action": ...}`` (greedy / deterministic);
- ``policy.learn_mode``: ``forward(batch) -> {stat: float, ...}`` and ``train_iter``.

Each face also has DI-engine's ``state_dict()`` and ``load_state_dict(state)``, which are the
policy's (loading also refreshes the acting copy). DI-engine's ``enable_field=[...]`` names the
faces a policy offers (all three when left out); a face it leaves out is refused when asked for.

A policy with memory sets ``recurrent = True`` and defines ``initial_state(n)`` (a dict of arrays
with a leading batch axis ``n``, e.g. ``{"h": [n, H], "c": [n, H]}``); its collect and eval faces
are then called ``forward(obs, state=state, first=first, **kwargs)`` (``first``: bool ``[n]``,
True where ``obs`` starts an episode; the policy zeroes those rows of ``state`` before using
them) and return ``"state"`` (the state after the step) beside ``"action"``. Both faces offer
``initial_state`` too. Feed-forward policies (the default) are called as before.
"""
from __future__ import annotations

import abc
import dataclasses
from typing import (Any, Callable, ClassVar, Dict, List, Mapping, Optional, Protocol, Sequence,
                    Tuple, runtime_checkable)

import gymnasium as gym
import numpy as np
from easydict import EasyDict

from rlpipe.config import merge_config
from rlpipe.data_parallel import join as join_data_parallel
from rlpipe.models import UnsupportedSpaceError
from rlpipe.schema import PIPELINE_KEYS, Key, defaults, extend, flatten

from ._space_table import spaces_line

__all__ = ["CollectMode", "EvalMode", "LearnMode", "Policy", "UnsupportedSpaceError",
           "describe_space"]


@runtime_checkable
class CollectMode(Protocol):
    def forward(self, obs: Any, **collect_kwargs: Any) -> Dict[str, Any]: ...
    def refresh(self) -> None: ...


@runtime_checkable
class EvalMode(Protocol):
    def forward(self, obs: Any) -> Dict[str, Any]: ...


@runtime_checkable
class LearnMode(Protocol):
    train_iter: int
    def forward(self, batch: Dict[str, Any]) -> Dict[str, Any]: ...


class _Face:
    """What the three faces share: the policy's config and DI-engine's per-face
    `state_dict()` / `load_state_dict(state)`, which here are the whole policy's (a face of an
    rlpipe policy has no weights of its own)."""

    __slots__ = ("policy",)

    def __init__(self, policy: "Policy") -> None:
        self.policy = policy

    @property
    def cfg(self) -> EasyDict:
        return self.policy.cfg

    def state_dict(self) -> Dict[str, Any]:
        """The policy's `state_dict()`."""
        return self.policy.state_dict()

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Load `state` (a `state_dict()` of this policy class, e.g. a checkpoint's
        `["policy"]`) into the policy, then copy the loaded weights into the collector's acting
        copy, so that the next collection acts with them (DI-engine's
        `policy.collect_mode.load_state_dict(torch.load(path))` before collecting)."""
        self.policy.load_state_dict(state)
        self.policy._refresh()


class _CollectFace(_Face):
    """`policy.collect_mode`. `forward` and `refresh` are the policy's bound methods (no extra
    call layer on the per-step path)."""

    __slots__ = ("forward", "refresh")

    def __init__(self, policy: "Policy") -> None:
        super().__init__(policy)
        self.forward: Callable[..., Dict[str, Any]] = policy._forward_collect
        self.refresh: Callable[[], None] = policy._refresh

    @property
    def recurrent(self) -> bool:
        return self.policy.recurrent

    def initial_state(self, n: int) -> Dict[str, np.ndarray]:
        """The policy's `initial_state(n)` (an error naming it when it is feed-forward)."""
        return self.policy.initial_state(n)

    @property
    def value(self) -> Callable[[Any], Any]:
        """The policy's `value(obs) -> [B]` when it defines one (gae_estimator bootstraps with
        it); an AttributeError otherwise, so ``getattr(face, "value", None)`` tells."""
        value = getattr(self.policy, "value", None)
        if value is None:
            raise AttributeError(f"{type(self.policy).__name__} has no value(obs) method, so its "
                                 "collect_mode has none; define value(obs) on the policy to give "
                                 "on-policy estimators such as gae_estimator a baseline.")
        return value

    def __repr__(self) -> str:
        return f"<collect_mode of {type(self.policy).__name__}>"


class _EvalFace(_Face):
    """`policy.eval_mode`."""

    __slots__ = ("forward",)

    def __init__(self, policy: "Policy") -> None:
        super().__init__(policy)
        self.forward: Callable[..., Dict[str, Any]] = policy._forward_eval

    @property
    def recurrent(self) -> bool:
        return self.policy.recurrent

    def initial_state(self, n: int) -> Dict[str, np.ndarray]:
        """The policy's `initial_state(n)` (an error naming it when it is feed-forward)."""
        return self.policy.initial_state(n)

    def __repr__(self) -> str:
        return f"<eval_mode of {type(self.policy).__name__}>"


class _LearnFace(_Face):
    """`policy.learn_mode`; `train_iter` counts completed learn steps."""

    __slots__ = ("forward",)

    def __init__(self, policy: "Policy") -> None:
        super().__init__(policy)
        self.forward: Callable[[Dict[str, Any]], Dict[str, Any]] = policy._forward_learn

    @property
    def train_iter(self) -> int:
        return self.policy.train_iter

    def __repr__(self) -> str:
        return f"<learn_mode of {type(self.policy).__name__} at train_iter {self.train_iter}>"


_FACES: Tuple[str, ...] = ("learn", "collect", "eval")


def _enabled_faces(who: str, enable_field: Sequence[str] | str | None) -> frozenset:
    """The faces a policy offers: DI-engine's `enable_field` (a face name or a list of them;
    None: all three). The policy builds its networks whichever it names; a face left out is
    refused when asked for, so a script that meant to only collect cannot train by mistake."""
    if enable_field is None:
        return frozenset(_FACES)
    names = [enable_field] if isinstance(enable_field, str) else enable_field
    if not isinstance(names, (list, tuple, set, frozenset)) or not names \
            or any(name not in _FACES for name in names):
        raise ValueError(f"{who}(..., enable_field={enable_field!r}): name one or more of "
                         f"{list(_FACES)}, as a list (or one name as a string)")
    return frozenset(names)


def describe_space(space: gym.Space) -> str:
    """A short description of a space for messages, e.g. ``Discrete(2)`` or
    ``Box(-1.0, 1.0, (3,), float32)``."""
    return repr(space)


# The pipeline settings every policy section carries (`rlpipe.schema.PIPELINE_KEYS`): a policy's
# config schema is its own keys plus these.
PIPELINE_DEFAULTS: Dict[str, Any] = defaults(PIPELINE_KEYS)


def _with_pipeline(own: Mapping[str, Any], pipeline: Mapping[str, Any]) -> Dict[str, Any]:
    """`own` with the pipeline's keys it lacks; a pipeline key that it states keeps the pipeline
    key's meaning and range unless it states its own."""
    merged = dict(own)
    for name, value in pipeline.items():
        mine = merged.get(name)
        if isinstance(value, Mapping):
            merged[name] = _with_pipeline(mine or {}, value)
        elif name not in merged:
            merged[name] = value
        elif isinstance(value, Key) and not isinstance(mine, Mapping):
            merged[name] = (mine if isinstance(mine, Key) else Key(mine)).over(value)
    return merged


class Policy(abc.ABC):
    """Base of all policies: ``Policy(cfg, obs_space, action_space)``.

    `cfg` is merged over `config_schema()` here — the policy's `default_config()` plus the
    pipeline settings every policy section carries (`PIPELINE_DEFAULTS`: collect.n_sample,
    other.eps, learn.update_per_collect, eval.evaluator ...). An unknown key or a wrong type
    raises `rlpipe.config.ConfigError` naming the key, so a partial config and an already
    merged one both work and a typo never passes silently.
    `enable_field` (keyword, DI-engine's): the faces to offer, e.g. ``["collect"]`` for a
    policy that only collects demonstrations; the networks are built either way.
    Subclasses declare the spaces they accept in `obs_space_types`/`action_space_types` and
    a `space_hint` that the unsupported-space error adds (e.g. which policy to use instead).
    """

    obs_space_types: ClassVar[Tuple[type, ...]] = (gym.spaces.Space,)
    action_space_types: ClassVar[Tuple[type, ...]] = (gym.spaces.Space,)
    space_hint: ClassVar[str] = ""
    # True when collect_mode.forward takes `eps` from an epsilon schedule (eps_greedy_handler).
    explores_with_eps: ClassVar[bool] = False
    # The pipeline that trains it (`rlpipe train --algo NAME --env ID`): "off-policy" (replay
    # buffer, pipelines/offpolicy.py) or "on-policy" (rollouts and GAE, pipelines/onpolicy.py);
    # "" for a policy that the zoo cannot train (e.g. RandomPolicy).
    pipeline: ClassVar[str] = ""
    # True for a policy with memory: its collect/eval faces take `state=` and `first=` and
    # return "state"; it defines `initial_state(n)`. The acting path decides once, when it is
    # built, so feed-forward policies (False) pay nothing for it.
    recurrent: ClassVar[bool] = False
    # Meanings (dotted key below `policy.` → text) over those its keys declare: how a policy with
    # a plain `default_config()` explains its settings in `rlpipe config`.
    config_meanings: ClassVar[Mapping[str, str]] = {}
    # The names of the statistics `learn_mode.forward` returns (`monitor_vars()`); None: the
    # policy does not list them.
    learn_stats: ClassVar[Optional[Tuple[str, ...]]] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.recurrent and cls.initial_state is Policy.initial_state:
            raise TypeError(f"{cls.__name__} sets recurrent = True but does not define "
                            f"initial_state(n) -> dict of arrays [n, ...]; define it (the state "
                            f"an episode starts from, e.g. zeros {{'h': [n, H], 'c': [n, H]}})")

    def __init__(self, cfg: Mapping | None, obs_space: gym.Space, action_space: gym.Space, *,
                 enable_field: Sequence[str] | str | None = None) -> None:
        self.check_spaces(obs_space, action_space)
        self.enabled_faces = _enabled_faces(type(self).__name__, enable_field)
        self.cfg: EasyDict = merge_config(self.config_schema(), cfg or {}, path="policy")
        self.obs_space = obs_space
        self.action_space = action_space
        self.train_iter = 0
        self._collect_face = _CollectFace(self)
        self._eval_face = _EvalFace(self)
        self._learn_face = _LearnFace(self)

    def monitor_vars(self) -> List[str]:
        """DI-engine's name: the statistics the learner reports each update (`learn_stats`),
        e.g. as the `metric_list` of `wandb_online_logger`."""
        if self.learn_stats is None:
            raise NotImplementedError(
                f"{type(self).__name__}.monitor_vars(): this policy does not list its learn "
                f"statistics; pass metric_list=None to wandb_online_logger to send them all")
        return list(self.learn_stats)

    def _monitor_vars_learn(self) -> List[str]:
        """DI-engine's older name for `monitor_vars()` (its EnvPool scripts pass
        `metric_list=policy._monitor_vars_learn()` to `wandb_online_logger`)."""
        return self.monitor_vars()

    @classmethod
    def config_schema(cls) -> EasyDict:
        """Every key a policy section may hold, with its default: `default_config()` plus
        `PIPELINE_DEFAULTS`."""
        return EasyDict(_with_pipeline(cls.default_config(), PIPELINE_DEFAULTS))

    @classmethod
    def declared_keys(cls, prefix: str = "") -> Dict[str, Key]:
        """`{prefix + dotted name: Key}` for every key of a policy section: the defaults of
        `default_config()` with the meanings and ranges that `config_keys()` declares (a
        subclass may override either), plus the pipeline's keys, with the meanings of the
        optional `config_meanings` dict (dotted name → meaning) over the declared ones. What
        `rlpipe config` explains and the range check applies."""
        own = extend(cls.config_keys(), cls.default_config())
        keys = flatten(_with_pipeline(own, PIPELINE_KEYS))
        for name, meaning in cls.config_meanings.items():
            keys[name] = dataclasses.replace(keys.get(name, Key(None)), meaning=meaning)
        return {prefix + name: k for name, k in keys.items()}

    # --- the interface ------------------------------------------------------------------------
    @classmethod
    def config_keys(cls) -> Dict[str, Any]:
        """Every setting this policy reads, declared as a tree of ``key(default, meaning,
        range)`` (`rlpipe.schema`). A policy defines this or `default_config()`; a policy that
        defines only a plain `default_config()` has keys without meaning or range."""
        if getattr(cls.default_config, "__func__", None) is Policy.default_config.__func__:
            raise TypeError(f"{cls.__name__} defines neither config_keys() nor default_config(); "
                            f"define config_keys() returning its settings as key(default, "
                            f"meaning) declarations (rlpipe.schema.key)")
        return cls.default_config()

    @classmethod
    def default_config(cls) -> EasyDict:
        """A fresh EasyDict of every setting this policy reads, with its default (the defaults
        of `config_keys()`)."""
        return defaults(cls.config_keys())

    @abc.abstractmethod
    def _forward_collect(self, obs: Any, **collect_kwargs: Any) -> Dict[str, Any]: ...

    @abc.abstractmethod
    def _refresh(self) -> None: ...

    @abc.abstractmethod
    def _forward_eval(self, obs: Any) -> Dict[str, Any]: ...

    @abc.abstractmethod
    def _forward_learn(self, batch: Dict[str, Any]) -> Dict[str, Any]: ...

    @abc.abstractmethod
    def state_dict(self) -> Dict[str, Any]:
        """Networks, target networks, optimisers and counters; only tensors, dicts, lists,
        numbers and strings, so that ``torch.load(path, weights_only=True)`` reads it back."""

    @abc.abstractmethod
    def load_state_dict(self, state: Mapping[str, Any]) -> None: ...

    def initial_state(self, n: int) -> Dict[str, np.ndarray]:
        """The hidden state `n` envs start an episode from: a dict of arrays with a leading
        axis `n` (recurrent policies define it; a feed-forward one has no state)."""
        raise TypeError(f"{type(self).__name__} is feed-forward (recurrent = False): it has no "
                        f"hidden state, so it has no initial_state(); its faces are called "
                        f"forward(obs, ...) without state=/first=. Use a recurrent policy for "
                        f"memory")

    # --- faces ---------------------------------------------------------------------------------
    @property
    def collect_mode(self) -> CollectMode:
        self._check_enabled("collect")
        return self._collect_face

    @property
    def eval_mode(self) -> EvalMode:
        self._check_enabled("eval")
        return self._eval_face

    @property
    def learn_mode(self) -> LearnMode:
        """The learn face. Taken first inside a `DDPContext` of several ranks, it makes the
        policy data-parallel (`rlpipe.data_parallel.join`)."""
        self._check_enabled("learn")
        join_data_parallel(self)
        return self._learn_face

    def _check_enabled(self, face: str) -> None:
        if face not in self.enabled_faces:
            name = type(self).__name__
            raise AttributeError(f"{name}(..., enable_field={sorted(self.enabled_faces)}) has no "
                                 f"{face}_mode: add {face!r} to enable_field, or leave "
                                 f"enable_field out for all three faces")

    # --- spaces --------------------------------------------------------------------------------
    @classmethod
    def check_spaces(cls, obs_space: gym.Space, action_space: gym.Space) -> None:
        """Raise `UnsupportedSpaceError` when this policy cannot handle the spaces."""
        for what, space, allowed in (("observation", obs_space, cls.obs_space_types),
                                     ("action", action_space, cls.action_space_types)):
            if not isinstance(space, allowed):
                names = " or ".join(t.__name__ for t in allowed)
                hint = f" {cls.space_hint}" if cls.space_hint and what == "action" else ""
                if what == "action":  # which algorithms take which action spaces
                    hint += f" ({spaces_line()}.)"
                raise UnsupportedSpaceError(
                    f"{cls.__name__} does not support the {what} space {describe_space(space)}: "
                    f"it needs {names}.{hint}")

    def describe_spaces(self) -> str:
        return (f"{type(self).__name__}: observation space {describe_space(self.obs_space)}, "
                f"action space {describe_space(self.action_space)}")

    def __repr__(self) -> str:
        return f"<{self.describe_spaces()}, train_iter={self.train_iter}>"

