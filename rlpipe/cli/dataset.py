"""`rlpipe dataset collect | list | info`: the command line of the offline data sets (the
commands themselves are in `rlpipe/tools/dataset.py`)."""
from __future__ import annotations

import argparse
from typing import Any


def add_dataset_command(sub: Any) -> None:
    """`rlpipe dataset collect | list | info` and their options."""
    dataset = sub.add_parser("dataset", help="offline data sets (Minari): collect, list, info")
    commands = dataset.add_subparsers(dest="dataset_command", required=True)
    root_help = "the Minari root for this command (default: $MINARI_DATASETS_PATH, else " \
                "~/.minari/datasets)"
    collect = commands.add_parser(
        "collect", help="roll a run's policy (RUN_DIR, or --algo ALGO --env ID: its newest run) "
                        "or `random --env ID` into a data set; or export --from-replay RUN_DIR")
    collect.add_argument("source", nargs="?", metavar="RUN_DIR|random",
                         help="a run folder (its best.pt, else final.pt) or `random`")
    collect.add_argument("--algo", metavar="ALGO", help="with --env: the newest run of ALGO on ENV")
    collect.add_argument("--env", metavar="ID", help="the env (with random or --algo)")
    collect.add_argument("--runs-root", default="runs", help="where --algo/--env runs are (runs)")
    collect.add_argument("--from-replay", metavar="RUN_DIR",
                         help="instead: export the run's saved replay buffer")
    collect.add_argument("--id", required=True, metavar="NAMESPACE/NAME-v0", help="the data set id")
    collect.add_argument("--episodes", type=int, default=10, help="episodes to collect (10)")
    collect.add_argument("--eps", type=float, default=0.0,
                         help="discrete actions: probability of a uniform random action")
    collect.add_argument("--noise", type=float, default=0.0,
                         help="Box actions: std of Gaussian noise, in half action ranges")
    collect.add_argument("--seed", type=int, default=0)
    collect.add_argument("--n-envs", type=int, default=4, help="envs stepped together (4)")
    collect.add_argument("--overwrite", action="store_true", help="replace an existing data set")
    collect.add_argument("--no-progress", action="store_true", help="no progress bar")
    listing = commands.add_parser("list", help="the local data sets: size, episodes, mean return")
    info = commands.add_parser("info", help="one data set: episodes, returns, spaces, env")
    info.add_argument("id", metavar="ID")
    for command in (collect, listing, info):
        command.add_argument("--root", metavar="DIR", help=root_help)


def run_dataset_command(args: argparse.Namespace) -> int:
    """Run `rlpipe dataset ...`, printing what it reports."""
    from rlpipe.tools.dataset import run_command

    for text in run_command(args):
        print(text)
    return 0
