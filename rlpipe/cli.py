"""`rlpipe list | train | eval`: the command line."""
from __future__ import annotations

import argparse
import json
import logging
import sys
from typing import List, Optional

USAGE_ERROR = 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rlpipe", description="Train and evaluate RL agents.")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="list the zoo entries")

    train = sub.add_parser("train", help="train a zoo entry, e.g. `rlpipe train cartpole-dqn`")
    train.add_argument("name", nargs="?", help="zoo entry (see `rlpipe list`)")
    train.add_argument("--seed", type=int, default=0)
    train.add_argument("--async", dest="async_mode", action="store_true",
                       help="overlap collection and evaluation with training: off-policy "
                            "entries collect and evaluate in processes of their own (no Ray "
                            "needed), on-policy ones overlap middleware in threads")
    train.add_argument("--set", dest="overrides", action="append", default=[],
                       metavar="KEY=VALUE", help="override a config value, e.g. policy.learn.lr=3e-4")
    train.add_argument("--run-dir", help="folder for this run (default runs/<name>/<timestamp>/)")
    train.add_argument("--max-env-steps", type=int, help="stop after this many env steps")
    train.add_argument("--no-progress", action="store_true", help="no progress bar")
    train.add_argument("--resume", metavar="RUN_DIR",
                       help="continue the run in RUN_DIR from its newest checkpoint")
    train.add_argument("--collectors", type=int, metavar="N",
                       help="distributed run: a learner and N collector processes")
    train.add_argument("--backend", choices=("ray", "local"), default=None,
                       help="with --collectors: Ray actors (default; one machine or a "
                            "cluster) or child processes of this machine (no Ray)")
    train.add_argument("--evaluator", action="store_true", default=None,
                       help="with --collectors: evaluate in a process of its own")
    train.add_argument("--ray-address", metavar="ADDR",
                       help="with --collectors: a Ray cluster started with `ray start` "
                            "(e.g. auto or HOST:6379); default: a local Ray")

    evaluate = sub.add_parser("eval", help="evaluate a run folder or checkpoint")
    evaluate.add_argument("target", help="a run folder (runs/<name>/<timestamp>/) or a .pt file")
    evaluate.add_argument("--episodes", type=int, default=10)
    evaluate.add_argument("--seed", type=int, default=12345)
    return parser


def _cmd_list() -> int:
    from rlpipe.zoo import get_entry, list_entries

    for name in list_entries():
        doc = (get_entry(name).module.__doc__ or "").strip().splitlines()
        print(f"{name:28s} {doc[0] if doc else ''}")
    return 0


def _cmd_train(args: argparse.Namespace) -> int:
    from rlpipe.zoo import resume, train

    if args.max_env_steps is not None and args.max_env_steps <= 0:
        raise ValueError(f"--max-env-steps must be positive, got {args.max_env_steps}")
    if args.resume:
        result = resume(args.resume, name=args.name, overrides=args.overrides,
                        max_env_step=args.max_env_steps, progress=not args.no_progress,
                        collectors=args.collectors, evaluator=args.evaluator,
                        ray_address=args.ray_address, backend=args.backend)
    elif not args.name:
        raise ValueError("name a zoo entry (`rlpipe train cartpole-dqn`; `rlpipe list` shows "
                         "them) or continue a run with --resume RUN_DIR")
    else:
        result = train(args.name, seed=args.seed, overrides=args.overrides,
                       run_dir=args.run_dir, async_mode=args.async_mode,
                       max_env_step=args.max_env_steps, progress=not args.no_progress,
                       collectors=args.collectors or 0, evaluator=bool(args.evaluator),
                       ray_address=args.ray_address, backend=args.backend)
    _print_summary(result)
    return 0


def _print_summary(result: dict, stopped_by: Optional[str] = None) -> None:
    """The human summary on stderr, then the machine-readable one: strict JSON (null for a
    return that was never measured), the last line of stdout."""
    from rlpipe.zoo._tail import format_summary, json_summary

    sys.stdout.flush()
    print(format_summary(result, stopped_by), file=sys.stderr, flush=True)
    print(json.dumps(json_summary(result), allow_nan=False))


def _cmd_eval(args: argparse.Namespace) -> int:
    from rlpipe.zoo._evaluate import evaluate_run

    if args.episodes <= 0:
        raise ValueError(f"--episodes must be positive, got {args.episodes}")
    result = evaluate_run(args.target, episodes=args.episodes, seed=args.seed)
    print(json.dumps(result))
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    from rlpipe.engine.parallel import LearnerDiedError
    from rlpipe.zoo import Interrupted

    args = _parser().parse_args(argv)
    from rlpipe.middleware.progress import BarLogHandler

    console = BarLogHandler()  # log lines go above the progress bar, not onto it
    console.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.WARNING, handlers=[console])
    try:
        if args.command == "list":
            return _cmd_list()
        if args.command == "train":
            return _cmd_train(args)
        return _cmd_eval(args)
    except Interrupted as stop:
        if stop.summary is not None:
            _print_summary(stop.summary, stop.signal_name)
        print(f"rlpipe {args.command}: {stop}", file=sys.stderr)
        return stop.exit_code
    except KeyboardInterrupt:
        print("rlpipe: interrupted", file=sys.stderr)
        return 130
    except LearnerDiedError as died:
        print(f"rlpipe {args.command}: error: {died}", file=sys.stderr)
        return 1
    except (KeyError, ValueError, TypeError, ImportError, FileNotFoundError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"rlpipe {args.command}: error: {message}", file=sys.stderr)
        return USAGE_ERROR


if __name__ == "__main__":
    sys.exit(main())
