"""The middleware library: each item is `fn(ctx)` (or builds one) with a declared contract."""
from rlpipe._threads import apply_thread_policy
from .buffer_io import (concat_steps, data_pusher, nstep_reward_enhancer, offline_data_saver,
                        offpolicy_data_fetcher, priority_calculator)
from .ckpt import (CkptSaver, NonFiniteStateError, final_ctx_saver, load_checkpoint,
                   restore_checkpoint)
from .collector import EpisodeCollector, StepCollector, StepCollectorAsync, inferencer, rolloutor
from .evaluator import envpool_evaluator, evaluate_episodes, interaction_evaluator
from .exchange import (ContextExchanger, Exchange, ModelExchanger, context_exchanger,
                       model_exchanger)
from .exploration import (PerEnvStep, eps_greedy_handler, eps_greedy_masker, epsilon_schedule,
                          kwargs_at)
from .learner import NonFiniteLossError, OffPolicyLearner, trainer
from .logger import (offline_logger, online_logger, read_metrics, wandb_offline_logger,
                     wandb_online_logger)
from .offline import offline_data_fetcher
from .onpolicy import gae_estimator, multistep_trainer
from .progress import epoch_timer, progress_bar
from .realtime import overrun_meter
from .sequence import SequenceAdding, sequence_fetcher, sequence_pusher
from .termination import termination_checker
from ._acting import EpisodeQuota
from ._make_acting import make_acting
from ._wandb import WandbSink, log_run_videos
# DI-engine names rlpipe refuses: importable, outside __all__, each a one-line error on use
from ._ding_refused import (EnvpoolOffPolicyLearner, EnvpoolStepCollector, EnvpoolStepCollectorV2,
                            OffPolicyLearnerV2, OffPolicyLearnerV3, PeriodicalModelExchanger)

__all__ = [
    "CkptSaver",
    "ContextExchanger",
    "EpisodeCollector",
    "EpisodeQuota",
    "Exchange",
    "ModelExchanger",
    "NonFiniteLossError",
    "NonFiniteStateError",
    "OffPolicyLearner",
    "PerEnvStep",
    "SequenceAdding",
    "StepCollector",
    "StepCollectorAsync",
    "WandbSink",
    "concat_steps",
    "context_exchanger",
    "data_pusher",
    "envpool_evaluator",
    "epoch_timer",
    "eps_greedy_handler",
    "eps_greedy_masker",
    "epsilon_schedule",
    "evaluate_episodes",
    "final_ctx_saver",
    "gae_estimator",
    "inferencer",
    "interaction_evaluator",
    "kwargs_at",
    "load_checkpoint",
    "log_run_videos",
    "make_acting",
    "model_exchanger",
    "multistep_trainer",
    "nstep_reward_enhancer",
    "offline_data_fetcher",
    "offline_data_saver",
    "offline_logger",
    "offpolicy_data_fetcher",
    "online_logger",
    "overrun_meter",
    "priority_calculator",
    "progress_bar",
    "read_metrics",
    "restore_checkpoint",
    "rolloutor",
    "sequence_fetcher",
    "sequence_pusher",
    "termination_checker",
    "trainer",
    "wandb_offline_logger",
    "wandb_online_logger",
]

apply_thread_policy()  # torch is imported by now: one thread by default (rlpipe/_threads.py)
