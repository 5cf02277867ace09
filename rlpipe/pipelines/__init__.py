"""rlpipe's pipelines: one function per pipeline shape, the same ones the zoo and the CLI run.

Each shape has `build_<shape>(cfg, policy_cls, ...)` (envs, policy, data and the resumed
context, with its middleware in order; nothing runs yet: a `Pipeline`) and `run_<shape>(cfg,
policy_cls, ...)` (seed, build, run on the global task, close; the run's summary), and its
`resolve_config(policy_cls, entry_config, user)` (defaults ← an entry's config ← the user's,
checked):

- `offpolicy`: evaluator → collector → data pusher (n-step, or sequences for a recurrent
  policy: `sequence`) → OffPolicyLearner → the run's tail (DQN, SAC, TD3, R2D2);
- `onpolicy`: evaluator → collector → gae_estimator → multistep_trainer → the run's tail
  (PPO, recurrent PPO, MAPPO/IPPO on a PettingZoo env);
- `offline`: evaluator → offline_data_fetcher → trainer → the run's tail (BC, CQL, IQL,
  TD3+BC, or an off-policy algorithm on a data set).

`run_tail(task, cfg, policy, run_state)` is the run's tail as middleware (termination, final
evaluation, logger, checkpoints with the resume state, progress bar); `RunState` and
`resumed_context` make a pipeline resume exactly (`resume.py`); `run_keys.py` says which run
keys each pipeline takes and the defaults it changes (the keys themselves, with default, meaning
and range, are declared in `rlpipe.schema`).
"""
from . import offline, offpolicy, onpolicy
from .base import Pipeline, make_policy, run_pipeline, seed_everything
from .offline import build_offline, run_offline
from .offpolicy import build_offpolicy, run_offpolicy
from .onpolicy import build_onpolicy, run_onpolicy
from .resume import RunState, resumed_context
from .tail import run_tail, summary

__all__ = ["Pipeline", "RunState", "build_offline", "build_offpolicy", "build_onpolicy",
           "make_policy", "offline", "offpolicy", "onpolicy", "resumed_context", "run_offline",
           "run_offpolicy", "run_onpolicy", "run_pipeline", "run_tail", "seed_everything",
           "summary"]
