"""`--init-from RUN_DIR`: a new run that starts from another run's trained weights.

Offline-to-online fine-tuning (an IQL or CQL policy trained on a data set, then trained on in
its env) and any warm start: `rlpipe train ENTRY (or --algo/--env) --init-from RUN_DIR`.

- the checkpoint: RUN_DIR's best.pt, else its final.pt (or a .pt file of a run folder named
  directly), verified against its signed manifest as `--resume` verifies (a folder from
  elsewhere needs `--trust-run-dir`);
- the policy class must be the source run's, or name it in its class attribute
  `init_from_classes` (registered names or classes);
- observation and action spaces must be the source run's (its env, or its data set's);
- the networks (target networks too) are loaded; optimiser states, the update counter and the
  policy's RNGs stay fresh (this run's seed) unless `init_from_optim`, which loads the
  optimisers too. Counters of the new run start at zero.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Dict, Mapping, Tuple

import gymnasium as gym

from rlpipe.runs import BEST_CHECKPOINT, FINAL_CHECKPOINT, RunDir

log = logging.getLogger("rlpipe")
FRESH_KEYS = ("train_iter", "rng")
"""Policy state entries (by substring) that a new run keeps its own: counters and RNGs."""
OPTIMIZER_KEY = "optim"


def pick_checkpoint(source: str) -> str:
    """The checkpoint `--init-from SOURCE` starts from: a run folder's best.pt, else its
    final.pt; or SOURCE itself when it is a .pt file in a run folder."""
    path = Path(source)
    if path.is_file():
        if not RunDir.of_checkpoint(path).config.is_file():
            raise FileNotFoundError(f"--init-from {source}: a checkpoint outside its run folder "
                                    f"(no config.json above it); pass the run folder")
        return str(path)
    if not path.is_dir():
        raise FileNotFoundError(f"--init-from {source}: no such run folder; pass the folder that "
                                f"`rlpipe train` printed (runs/<name>/<timestamp>/)")
    run = RunDir(path)
    for name in (BEST_CHECKPOINT, FINAL_CHECKPOINT):
        if run.checkpoint(name).is_file():
            return str(run.checkpoint(name))
    raise FileNotFoundError(f"--init-from {source}: the run has no best.pt or final.pt yet; "
                            f"train it to its first evaluation (or its end) first")


def check_source(checkpoint: str, source: Tuple[type, gym.Space, gym.Space, str],
                 cls: type, obs_space: gym.Space, action_space: gym.Space) -> None:
    """One-line errors when a `cls` policy on these spaces cannot start from `checkpoint`,
    written by `source` = (policy class, observation space, action space, entry name): another
    class that does not accept it, or other spaces."""
    from rlpipe.data._offline import same_space  # the rule OfflineDataset.check_spaces uses

    source_cls, source_obs, source_action, name = source
    accepted = tuple(getattr(cls, "init_from_classes", ()))
    if source_cls is not cls and not _accepts(accepted, source_cls):
        raise ValueError(f"--init-from {checkpoint}: that run ({name}) trained a "
                         f"{source_cls.__name__}, and {cls.__name__} does not accept its "
                         f"weights; train {cls.__name__} from it only if the class lists it in "
                         f"`init_from_classes`, or start from a {cls.__name__} run")
    for what, theirs, mine in (("observation", source_obs, obs_space),
                               ("action", source_action, action_space)):
        if not same_space(theirs, mine):
            raise ValueError(f"--init-from {checkpoint}: that run's {what} space is "
                             f"{' '.join(str(theirs).split())} but this run's is "
                             f"{' '.join(str(mine).split())}; start from a run of the same env")


def _accepts(accepted: Tuple[Any, ...], source_cls: type) -> bool:
    from rlpipe.policies.registry import registered_name

    name = registered_name(source_cls)
    return any(a is source_cls or (isinstance(a, str) and a == name) for a in accepted)


def merged_state(fresh: Mapping[str, Any], loaded: Mapping[str, Any],
                 with_optim: bool) -> Dict[str, Any]:
    """`loaded`'s entries, but this run's own counters and RNGs (and optimisers unless
    `with_optim`)."""
    def own(key: str) -> bool:
        return any(k in key for k in FRESH_KEYS) or (OPTIMIZER_KEY in key and not with_optim)

    return {key: (fresh[key] if own(key) and key in fresh else value)
            for key, value in loaded.items()}


def init_policy(cfg: Any, policy: Any) -> None:
    """Load the weights of `cfg.init_from` (a checkpoint path, checked by `check_source`
    before the run) into `policy`. The checkpoint is verified (signed) unless the user
    trusted it (`--trust-run-dir`)."""
    from rlpipe.middleware.ckpt import load_verified

    checkpoint = str(cfg.init_from)
    loaded, _ = load_verified(checkpoint, signed=True, trust=bool(cfg.get("resume_trust", False)))
    with_optim = bool(cfg.get("init_from_optim", False))
    policy.load_state_dict(merged_state(policy.state_dict(), loaded["policy"], with_optim))
    log.info("initialised the policy from %s (%s)", checkpoint,
             "weights and optimisers" if with_optim else "weights; fresh optimisers")
