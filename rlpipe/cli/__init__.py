"""`rlpipe list | train | config | eval | export | plot | report | graph | dataset | tune |
serve | trainer | worker`: the parser and `main`, the entry of the `rlpipe` console script and
of `python -m rlpipe.cli`. Each command parses its arguments, calls one function of the layers
below and prints; the larger commands have a module of their own here (`tune`, `export`,
`dataset`, `cluster`, `after`: eval --video, train --seeds, report), `errors` turns an exception
into the one line or paragraph the user reads."""
from __future__ import annotations

import argparse
import json
import logging
import re
import sys
from typing import List, Optional

USAGE_ERROR = 2
DEBUG_HELP = "on an error, show the Python traceback too (also: RLPIPE_DEBUG=1)"


def _parser() -> argparse.ArgumentParser:
    from rlpipe.cli.export import add_export_parser

    parser = argparse.ArgumentParser(prog="rlpipe", description="Train and evaluate RL agents.")
    parser.add_argument("--debug", action="store_true", help=DEBUG_HELP)
    parser.add_argument("--version", action="version", version=f"rlpipe {_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    listing = sub.add_parser("list", help="list the zoo entries and the algorithms for --algo")
    listing.add_argument("--spaces", action="store_true",
                         help="instead, the table of which algorithm takes which action spaces, "
                              "and the observation spaces the encoders take")
    listing.add_argument("--import", dest="imports", action="append", default=[],
                         metavar="MODULE", help="with --spaces: import MODULE first (one that "
                                                "registers a policy), repeatable")

    train = sub.add_parser("train", help="train a zoo entry (`rlpipe train cartpole-dqn`) or an "
                                         "algorithm on an env (`--algo ppo --env Acrobot-v1`)")
    train.add_argument("name", nargs="?", help="zoo entry (see `rlpipe list`)")
    _add_algo_env(train)
    train.add_argument("--seed", type=int, default=None, help="seed of the run (default 0)")
    train.add_argument("--config", metavar="FILE", help="train what a YAML file names, with its "
                                                        "config (e.g. rlpipe tune's best.yaml)")
    train.add_argument("--async", dest="async_mode", action="store_true",
                       help="overlap collection and evaluation with training: off-policy "
                            "entries collect and evaluate in processes of their own (no Ray "
                            "needed), on-policy ones overlap middleware in threads")
    train.add_argument("--set", dest="overrides", action="append", default=[],
                       metavar="KEY=VALUE", help="override a config value, e.g. policy.learn.lr=3e-4")
    train.add_argument("--run-dir", help="a new or empty folder for this run (default "
                                         "runs/<name>/<timestamp>/)")
    train.add_argument("--overwrite", action="store_true",
                       help="with --run-dir: delete the run already in that folder first")
    train.add_argument("--max-env-steps", type=int, help="stop after this many env steps")
    train.add_argument("--no-progress", action="store_true", help="no progress bar")
    train.add_argument("--resume", metavar="RUN_DIR",
                       help="continue the run in RUN_DIR from its newest checkpoint")
    train.add_argument("--init-from", metavar="RUN_DIR",
                       help="start this new run from the weights of RUN_DIR's best.pt (else "
                            "final.pt), e.g. an offline policy fine-tuned online")
    train.add_argument("--init-from-optim", action="store_true",
                       help="with --init-from: load the optimiser states too (default: fresh)")
    train.add_argument("--trust-run-dir", action="store_true",
                       help="with --resume or --init-from: accept checkpoints not signed on "
                            "this machine by this user (a run folder from elsewhere, or from an "
                            "older rlpipe); resuming unpickles them, so only for folders you "
                            "trust")
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

    config = sub.add_parser("config", help="print the resolved config of a zoo entry, an "
                                           "--algo/--env pair or a run folder, key by key "
                                           "with what each key means")
    config.add_argument("name", nargs="?", help="zoo entry or run folder")
    _add_algo_env(config)
    config.add_argument("--set", dest="overrides", action="append", default=[],
                        metavar="KEY=VALUE", help="override a config value")

    add_export_parser(sub)
    evaluate = sub.add_parser("eval", help="evaluate a run folder or checkpoint")
    evaluate.add_argument("target", help="a run folder (runs/<name>/<timestamp>/) or a .pt file")
    evaluate.add_argument("--episodes", type=int, default=None, help="episodes (default 10)")
    evaluate.add_argument("--seed", type=int, default=12345)
    from rlpipe.cli.after import add_report_command, add_seed_options, add_watch_options

    add_watch_options(evaluate)
    add_seed_options(train)
    add_report_command(sub)

    plot = sub.add_parser("plot", help="learning curves of run folders, e.g. "
                                       "`rlpipe plot runs/cartpole-dqn/* --out curves.png`")
    plot.add_argument("run_dirs", nargs="+", metavar="RUN_DIR",
                      help="run folders; runs of one entry are drawn as mean and 95%% interval")
    plot.add_argument("--out", default=None,
                      help="the figure to write, .png or .svg (default curves.png in the "
                           "folder the runs share: RUN/curves.png for one run, else "
                           "runs/curves.png)")

    graph = sub.add_parser("graph", help="a zoo entry's pipeline: each middleware, the fields "
                                         "it reads and writes, what overlaps in async mode")
    graph.add_argument("name", help="zoo entry (see `rlpipe list`)")
    graph.add_argument("--set", dest="overrides", action="append", default=[],
                       metavar="KEY=VALUE", help="override a config value, as for train")
    graph.add_argument("--out", help="draw it to this .png or .svg file instead of printing it")

    from rlpipe.cli.cluster import add_cluster_commands
    from rlpipe.cli.dataset import add_dataset_command
    from rlpipe.cli.tune import add_tune_parser

    add_tune_parser(sub)
    add_dataset_command(sub)

    add_cluster_commands(sub)
    for command in sub.choices.values():  # also after the command: `rlpipe train --debug ...`
        command.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                             help=DEBUG_HELP)
    return parser


def _version() -> str:
    from rlpipe import __version__

    return __version__


def _add_algo_env(command: argparse.ArgumentParser) -> None:
    command.add_argument("--algo", metavar="ALGO",
                         help="instead of a zoo entry: an algorithm (dqn, ppo, sac, td3, one "
                              "you registered, or module:PolicyClass) ...")
    command.add_argument("--env", metavar="ENV",
                         help="... on an env: a gymnasium id, a name registered with "
                              "rlpipe.envs.register_env, or module:factory")
    command.add_argument("--dataset", metavar="ID",
                         help="with --algo: train offline on this local Minari data set "
                              "(`rlpipe dataset list`); --env then names the eval env "
                              "(default: the data set's)")
    command.add_argument("--import", dest="imports", action="append", default=[],
                         metavar="MODULE", help="import MODULE first (e.g. one that registers "
                                                "an env or a policy); repeatable")


def first_sentence(doc: str) -> str:
    """The first sentence of a docstring's first paragraph, joined across its lines: up to the
    first full stop followed by a space that does not end an abbreviation ("et al.", "e.g.",
    "i.e.", "cf.", "vs."), or the paragraph's end."""
    paragraph = " ".join(doc.strip().split("\n\n", 1)[0].split())
    end = re.search(r"(?<!\bal)(?<!\be\.g)(?<!\bi\.e)(?<!\bcf)(?<!\bvs)\. ", paragraph)
    return paragraph if end is None else paragraph[: end.start() + 1]


def spaces_table(names: Optional[List[str]] = None) -> str:
    """`rlpipe list --spaces`: algorithm × action space kind (from the policy classes'
    `action_space_types`), then the observation spaces the encoders take."""
    from rlpipe.policies.registry import (ACTION_SPACES, OBSERVATION_SPACES, action_space_table,
                                          mask_table, spaces_line)

    table = action_space_table(names)
    kinds = [t.__name__ for t in ACTION_SPACES]
    width = max([len("algorithm")] + [len(n) for n in table]) + 2
    lines = ["action spaces (rlpipe train --algo ALGO; Box, MultiDiscrete and MultiBinary 1-D):",
             "algorithm".ljust(width) + "  ".join(kinds)]
    for name, takes in table.items():
        cells = [("yes" if k in takes else "-").ljust(len(k)) for k in kinds]
        lines.append(name.ljust(width) + "  ".join(cells).rstrip())
    lines += ["", spaces_line(names) + ".", "",
              "action masks (info['action_mask'], Dict key 'action_mask' or action_mask_fn; "
              "MultiDiscrete: sum(nvec) values, a segment per component; docs/action_masks.md):"]
    masks = mask_table(names)
    lines += [f"  {name.ljust(width)}{', '.join(kinds)}" for name, kinds in masks.items()]
    lines += ["  (none)"] if not masks else []
    lines += ["", "observation spaces (every algorithm; the encoder is chosen from the space):"]
    kind_width = max(len(k) for k, _ in OBSERVATION_SPACES) + 2
    lines += [f"  {kind.ljust(kind_width)}{how}" for kind, how in OBSERVATION_SPACES]
    return "\n".join(lines)


def _cmd_list(args: argparse.Namespace) -> int:
    from rlpipe.zoo.registry import listed_algorithms, list_entries

    if args.imports and not args.spaces:
        raise ValueError("--import only goes with --spaces (it imports modules that "
                         "register policies, to show them in the table); add --spaces")
    if args.spaces:
        from rlpipe.zoo.generic import import_modules

        import_modules(args.imports)
        print(spaces_table())  # every policy that declares a pipeline, offline ones included
        return 0
    names = list_entries()
    width = max(len(name) for name in names) + 2
    for name in names:
        print(f"{name.ljust(width)}{first_sentence(_entry_docstring(name))}")
    print(f"\nany env: rlpipe train --algo {{{','.join(listed_algorithms('online'))}}} --env ENV")
    print(f"a data set: rlpipe train --algo {{{','.join(listed_algorithms('offline'))}}} "
          f"--dataset ID (see rlpipe dataset --help)")
    print("which algorithm takes which spaces: rlpipe list --spaces")
    return 0


def _entry_docstring(name: str) -> str:
    """Zoo entry `name`'s module docstring, read from its source file: importing the module
    would import torch and the entry's env packages only to print one sentence."""
    import ast
    import importlib.util

    from rlpipe.zoo.registry import ENTRIES

    spec = importlib.util.find_spec(ENTRIES[name])
    if spec is None or spec.origin is None:
        raise ImportError(f"zoo entry {name!r}: its module {ENTRIES[name]} is missing from the "
                          f"rlpipe install; reinstall it (pip install -e .)")
    with open(spec.origin, encoding="utf-8") as source:
        return ast.get_docstring(ast.parse(source.read())) or ""


def _cmd_config(args: argparse.Namespace) -> int:
    from rlpipe.cli.config_view import show_config

    print(show_config(args.name, algo=args.algo, env=args.env, imports=args.imports,
                      overrides=args.overrides, dataset=args.dataset))
    return 0


def _cmd_train(args: argparse.Namespace) -> int:
    from rlpipe.training import resume, train

    if args.seeds is not None or args.jobs is not None:
        from rlpipe.cli.after import cmd_seeds

        return cmd_seeds(args)
    if args.max_env_steps is not None and args.max_env_steps <= 0:
        raise ValueError(f"--max-env-steps must be positive, got {args.max_env_steps}")
    if args.config:
        from rlpipe.cli.tune import apply_config_file

        apply_config_file(args)
    if args.resume:
        for flag, given in (("--seed", args.seed is not None), ("--algo", args.algo),
                            ("--env", args.env), ("--run-dir", args.run_dir),
                            ("--overwrite", args.overwrite), ("--import", args.imports),
                            ("--dataset", args.dataset), ("--init-from", args.init_from),
                            ("--init-from-optim", args.init_from_optim)):
            if given:
                raise ValueError(f"--resume {args.resume} continues that run as it was: drop "
                                 f"{flag} (start a new run to change it)")
        result = resume(args.resume, name=args.name, overrides=args.overrides,
                        max_env_step=args.max_env_steps, progress=not args.no_progress,
                        collectors=args.collectors, evaluator=args.evaluator,
                        ray_address=args.ray_address, backend=args.backend,
                        trust=args.trust_run_dir)
    elif args.trust_run_dir and not args.init_from:
        raise ValueError("--trust-run-dir only applies to --resume RUN_DIR or --init-from RUN_DIR")
    elif not (args.name or args.algo or args.env or args.dataset):
        raise ValueError("name a zoo entry (`rlpipe train cartpole-dqn`; `rlpipe list` shows "
                         "them), an algorithm and env (`--algo ppo --env CartPole-v1`), or "
                         "continue a run with --resume RUN_DIR")
    else:
        if args.overwrite and not args.run_dir:
            raise ValueError("--overwrite needs --run-dir (the folder whose run it replaces)")
        result = train(args.name, seed=0 if args.seed is None else args.seed,
                       overrides=args.overrides, run_dir=args.run_dir,
                       async_mode=args.async_mode, max_env_step=args.max_env_steps,
                       progress=not args.no_progress, collectors=args.collectors or 0,
                       evaluator=bool(args.evaluator), ray_address=args.ray_address,
                       backend=args.backend, algo=args.algo, env=args.env,
                       imports=args.imports, overwrite=args.overwrite, dataset=args.dataset,
                       init_from=args.init_from, init_from_optim=args.init_from_optim,
                       trust=args.trust_run_dir)
    _print_summary(result)
    return 0


def _print_summary(result: dict, stopped_by: Optional[str] = None) -> None:
    """The human summary on stderr, then the machine-readable one: strict JSON (null for a
    return that was never measured), the last line of stdout."""
    from rlpipe.pipelines.tail import format_summary, json_summary

    sys.stdout.flush()
    print(format_summary(result, stopped_by), file=sys.stderr, flush=True)
    print(json.dumps(json_summary(result), allow_nan=False))


def _cmd_eval(args: argparse.Namespace) -> int:
    from rlpipe.tools import evaluate_run

    if args.video is not None or args.render is not None:
        from rlpipe.cli.after import cmd_watch

        return cmd_watch(args)
    args.episodes = 10 if args.episodes is None else args.episodes
    if args.episodes <= 0:
        raise ValueError(f"--episodes must be positive, got {args.episodes}")
    result = evaluate_run(args.target, episodes=args.episodes, seed=args.seed)
    print(json.dumps(result))
    return 0


def _cmd_plot(args: argparse.Namespace) -> int:
    from rlpipe.tools import plot_runs

    drawn, path = plot_runs(args.run_dirs, args.out)
    groups = sorted({f"{c.label} ({c.runs} run{'s' if c.runs > 1 else ''})" for c in drawn})
    print(f"wrote {path}: {', '.join(groups)}")
    return 0


def _cmd_graph(args: argparse.Namespace) -> int:
    from rlpipe.tools import entry_graph, format_graph, save_figure
    from rlpipe.tools.figures import check_out

    if args.out is not None:
        check_out(args.out)  # refuse before building anything
    graph = entry_graph(args.name, args.overrides)
    if args.out is None:
        print(format_graph(graph))
        return 0
    from rlpipe.tools import draw_graph

    print(f"wrote {save_figure(draw_graph(graph), args.out, dpi=90)}")
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    from rlpipe.cli.errors import debug_requested

    args = _parser().parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # for `train --seeds`'s children
    debug = debug_requested(args.debug)
    if args.command != "list":  # `rlpipe list` logs nothing, and stays clear of torch
        from rlpipe.middleware.progress import BarLogHandler

        console = BarLogHandler()  # log lines go above the progress bar, not onto it
        console.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        logging.basicConfig(level=logging.WARNING, handlers=[console])
    try:
        return _run_command(args)
    except KeyboardInterrupt:
        print("rlpipe: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - the kinds `report` explains; others propagate
        from rlpipe.cli.errors import report

        run_dir = getattr(args, "resume", None) or getattr(args, "run_dir", None)
        code = report(exc, args.command, run_dir, debug, _print_summary)
        if code is None:
            raise
        return code


def _run_command(args: argparse.Namespace) -> int:
    if args.command == "list":
        return _cmd_list(args)
    if args.command == "train":
        return _cmd_train(args)
    if args.command == "plot":
        return _cmd_plot(args)
    if args.command == "graph":
        return _cmd_graph(args)
    if args.command == "config":
        return _cmd_config(args)
    if args.command == "dataset":
        from rlpipe.cli.dataset import run_dataset_command

        return run_dataset_command(args)
    if args.command == "report":
        from rlpipe.cli.after import cmd_report

        return cmd_report(args)
    if args.command == "export":
        from rlpipe.cli.export import run_export

        return run_export(args)
    if args.command == "tune":
        from rlpipe.cli.tune import run_tune

        return run_tune(args)
    if args.command in ("serve", "trainer", "worker"):
        from rlpipe.cli.cluster import run_cluster_command

        return run_cluster_command(args, _print_summary)
    return _cmd_eval(args)

