"""The middleware library: each item is `fn(ctx)` (or builds one) with a declared contract."""
from rlpipe._threads import apply_thread_policy
from .buffer_io import concat_steps, data_pusher, nstep_reward_enhancer, offpolicy_data_fetcher
from .ckpt import CkptSaver, NonFiniteStateError, load_checkpoint, restore_checkpoint
from .collector import EpisodeCollector, StepCollector, inferencer, rolloutor
from .evaluator import evaluate_episodes, interaction_evaluator
from .exchange import Exchange
from .exploration import PerEnvStep, eps_greedy_handler, epsilon_schedule, kwargs_at
from .learner import NonFiniteLossError, OffPolicyLearner, trainer
from .logger import online_logger, read_metrics
from .offline import offline_data_fetcher
from .onpolicy import gae_estimator, multistep_trainer
from .progress import progress_bar
from .realtime import overrun_meter
from .sequence import SequenceAdding, sequence_fetcher, sequence_pusher
from .termination import termination_checker
from ._wandb import WandbSink, log_run_videos

__all__ = [
    "CkptSaver",
    "EpisodeCollector",
    "Exchange",
    "WandbSink",
    "NonFiniteLossError",
    "NonFiniteStateError",
    "OffPolicyLearner",
    "PerEnvStep",
    "SequenceAdding",
    "StepCollector",
    "concat_steps",
    "data_pusher",
    "eps_greedy_handler",
    "epsilon_schedule",
    "evaluate_episodes",
    "gae_estimator",
    "inferencer",
    "interaction_evaluator",
    "kwargs_at",
    "load_checkpoint",
    "log_run_videos",
    "multistep_trainer",
    "nstep_reward_enhancer",
    "offline_data_fetcher",
    "offpolicy_data_fetcher",
    "online_logger",
    "overrun_meter",
    "progress_bar",
    "read_metrics",
    "restore_checkpoint",
    "rolloutor",
    "sequence_fetcher",
    "sequence_pusher",
    "termination_checker",
    "trainer",
]

apply_thread_policy()  # torch is imported by now: one thread by default (rlpipe/_threads.py)
