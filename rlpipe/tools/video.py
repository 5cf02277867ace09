"""`rlpipe eval RUN --video DIR` and `--render human`: watch a run's policy act.

The env is made as the run's config makes it, with `render_mode="rgb_array"` (video) or
`"human"` (a window), one at a time (sync, one sub-env), so episodes follow each other. Videos
are written by gymnasium's `RecordVideo` (moviepy): one mp4 per episode, named
`<entry>-episode-<k>.mp4`. The episodes are evaluated exactly as `rlpipe eval` evaluates them,
so the returns printed are those of the episodes recorded. A run trained with
`logger.wandb=True` gets its videos in its W&B run too.
"""
from __future__ import annotations

import importlib.util
import os
import pathlib
import sys
import warnings
from typing import Any, Dict, List, Optional

import numpy as np

from rlpipe.envs import EnvManager
from rlpipe.envs._registry import resolve_env
from rlpipe.middleware import evaluate_episodes, log_run_videos
from rlpipe.pipelines.offpolicy import eval_env_kwargs, mask_settings
from rlpipe.pipelines.base import make_policy
from rlpipe.zoo.registry import MissingDependencyError

from .evaluate import load_run

VIDEO_HINT = 'install it with: pip install "rlpipe[video]"'


def _require(module: str, why: str) -> None:
    if importlib.util.find_spec(module) is None:
        raise MissingDependencyError(f"{why} needs {module}, which is not installed; {VIDEO_HINT}")


def _probe(source: Any, mode: str, label: str) -> None:
    """Build one env in `mode` and render its first frame, so a missing renderer or display is
    one clear error here rather than a crash (and a restart) inside the env manager."""
    from gymnasium.error import DependencyNotInstalled

    try:
        with warnings.catch_warnings():  # an env without that mode: said below, in one line
            warnings.filterwarnings("ignore", ".*that is not in the possible render_modes")
            env = source.make()
    except TypeError as err:  # a factory that takes no render_mode
        raise ValueError(f"{label}: the env {source.label} cannot render ({err}); only envs "
                         f"that take render_mode={mode!r} can be watched") from err
    try:
        modes = env.metadata.get("render_modes") or []
        if mode not in modes or env.render_mode != mode:
            raise ValueError(f"{label}: the env {source.label} cannot render in mode {mode!r} "
                             f"(its render modes: {modes or 'none'}); watch another env")
        env.reset(seed=0)
        frame = env.render()
        if mode == "rgb_array" and (not isinstance(frame, np.ndarray) or frame.ndim != 3):
            raise ValueError(f"{label}: the env {source.label} rendered "
                             f"{type(frame).__name__}, not an RGB frame; it cannot be recorded")
    except DependencyNotInstalled as err:
        raise MissingDependencyError(f"{label}: rendering {source.label} needs a package that "
                                     f"is not installed ({err}); {VIDEO_HINT}") from err
    except RuntimeError as err:  # pygame.error: no display for a window
        raise ValueError(f"{label}: the env {source.label} could not open a window "
                         f"({err}); run it where there is a display, or record it with "
                         f"--video DIR") from err
    finally:
        env.close()


def _video_factory(source: Any, folder: pathlib.Path, prefix: str, episodes: int) -> Any:
    from gymnasium.wrappers import RecordVideo

    def make() -> Any:
        # the env manager resets once more after the last episode: record only the first ones
        with warnings.catch_warnings():  # an existing folder: its videos were checked for
            warnings.filterwarnings("ignore", ".*Overwriting existing videos")
            return RecordVideo(source.make(), str(folder), name_prefix=prefix,
                               episode_trigger=lambda k: k < episodes)
    return make


def watch_run(target: str, episodes: int = 1, seed: int = 12345, video: Optional[str] = None,
              render: Optional[str] = None) -> Dict[str, Any]:
    """Run `episodes` evaluation episodes of a run's policy (chosen as `rlpipe eval` chooses
    it), recording each to `video`/<entry>-episode-<k>.mp4 or showing them (`render="human"`).
    `video=""`: the run's own videos/ folder (videos-2/, ... when it already holds videos).
    Returns what `rlpipe eval` returns, plus the video files written and their folder."""
    label = "--video" if video is not None else f"--render {render}"
    if video is not None and render is not None:
        raise ValueError("--video and --render: pick one (a video is recorded off-screen)")
    if render not in (None, "human"):
        raise ValueError(f"--render {render!r}: only 'human' (a window); to record, use --video DIR")
    if video is not None:
        _require("moviepy", "--video")
    _require("pygame", label)  # gymnasium draws its classic and Box2D envs with pygame
    entry, cfg, checkpoint, run = load_run(target)
    if getattr(entry.policy_cls, "multi_agent", False):
        raise ValueError(f"{label}: {entry.name} is a multi-agent entry; watching is for "
                         f"single-agent envs only (evaluate it without {label.split()[0]})")
    mode = "rgb_array" if video is not None else "human"
    if mode == "human" and sys.platform.startswith("linux") and not any(
            os.environ.get(v) for v in ("DISPLAY", "WAYLAND_DISPLAY", "SDL_VIDEODRIVER")):
        raise ValueError("--render human: there is no display here (DISPLAY and WAYLAND_DISPLAY "
                         "are unset); run it where there is one, or record with --video DIR")
    if mode == "rgb_array":  # off-screen: SDL (pygame) needs neither a display nor a sound card
        os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
        os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
    source = resolve_env(cfg.env.id, {**(eval_env_kwargs(cfg.env) or {}), "render_mode": mode})
    _probe(source, mode, label)
    before: List[pathlib.Path] = []
    if video == "":
        video = _new_video_folder(run.root, entry.name)
    if video is not None:
        folder = pathlib.Path(video)
        if folder.exists() and not folder.is_dir():
            raise ValueError(f"--video {video}: it is a file; name a folder for the videos")
        before = sorted(folder.glob(f"{entry.name}-episode-*.mp4"))
        if before:
            raise ValueError(f"--video {video}: it already holds videos of {entry.name} "
                             f"({before[0].name}, ...); name a new folder or delete them")
        factory = _video_factory(source, folder, entry.name, episodes)
    else:
        factory = source.make
    env = EnvManager(factory, n_envs=1, seed=seed, mode="sync", **mask_settings(cfg.env))
    try:
        policy = make_policy(cfg, entry.policy_cls, env)
        policy.load_state_dict(checkpoint["policy"])
        returns = np.array([r["return"] for r in evaluate_episodes(policy.eval_mode, env, episodes)])
    finally:
        env.close()  # RecordVideo writes the last episode's file at close
    result = {"entry": entry.name, "run_dir": str(run.root), "episodes": episodes,
              "mean_return": float(returns.mean()), "std_return": float(returns.std()),
              "returns": returns.tolist(), "checkpoint": str(checkpoint.get("path"))}
    if video is not None:
        result["video_dir"] = str(video)
        result["videos"] = [str(p) for p in sorted(pathlib.Path(video).glob(
            f"{entry.name}-episode-*.mp4"))]
        result["wandb"] = log_run_videos(cfg, run.root, result["videos"])  # logger.wandb=True
    return result


def _new_video_folder(run_root: Any, name: str) -> str:
    """RUN/videos, or the first of RUN/videos-2, -3, ... that holds no videos of `name` yet."""
    root, k = pathlib.Path(run_root), 1
    while True:
        folder = root / ("videos" if k == 1 else f"videos-{k}")
        if not folder.exists() or (folder.is_dir()
                                   and not any(folder.glob(f"{name}-episode-*.mp4"))):
            return str(folder)
        k += 1
