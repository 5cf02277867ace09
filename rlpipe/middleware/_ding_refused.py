"""DI-engine middleware names that rlpipe does not provide. Each is importable from
`rlpipe.middleware`, so that a ported script fails where it builds the middleware, with one
line that says what rlpipe uses instead, rather than with an ImportError that names nothing."""
from __future__ import annotations

from typing import Any, NoReturn


def PeriodicalModelExchanger(*args: Any, **kwargs: Any) -> NoReturn:  # noqa: N802 - DI-engine's name
    """Refused: rlpipe's `ModelExchanger(model)` already does its work."""
    raise ValueError("PeriodicalModelExchanger: rlpipe's ModelExchanger(model) sends the "
                     "learner's weights after every iteration and loads the newest into "
                     "collectors and the evaluator; drop PeriodicalModelExchanger and keep "
                     "task.use(ModelExchanger(model))")


def _collector_refused(name: str) -> NoReturn:
    raise ValueError(f"{name}: rlpipe's StepCollector steps an EnvManager in EnvPool mode "
                     f"(EnvManager(id, n_envs, mode='envpool')) like any other; use "
                     f"StepCollector(cfg, policy.collect_mode, env)")


def EnvpoolStepCollector(*args: Any, **kwargs: Any) -> NoReturn:  # noqa: N802
    """Refused: `StepCollector` collects from an EnvPool `EnvManager`."""
    _collector_refused("EnvpoolStepCollector")


def EnvpoolStepCollectorV2(*args: Any, **kwargs: Any) -> NoReturn:  # noqa: N802
    """Refused: `StepCollector` collects from an EnvPool `EnvManager`."""
    _collector_refused("EnvpoolStepCollectorV2")


def _learner_refused(name: str) -> NoReturn:
    raise ValueError(f"{name}: rlpipe has one off-policy learner, whatever the env manager; "
                     f"use OffPolicyLearner(cfg, policy.learn_mode, buffer_)")


def OffPolicyLearnerV2(*args: Any, **kwargs: Any) -> NoReturn:  # noqa: N802
    """Refused: `OffPolicyLearner` is rlpipe's one off-policy learner."""
    _learner_refused("OffPolicyLearnerV2")


def OffPolicyLearnerV3(*args: Any, **kwargs: Any) -> NoReturn:  # noqa: N802
    """Refused: `OffPolicyLearner` is rlpipe's one off-policy learner."""
    _learner_refused("OffPolicyLearnerV3")


def EnvpoolOffPolicyLearner(*args: Any, **kwargs: Any) -> NoReturn:  # noqa: N802
    """Refused: `OffPolicyLearner` is rlpipe's one off-policy learner."""
    _learner_refused("EnvpoolOffPolicyLearner")
