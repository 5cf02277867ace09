"""The command-line face of what comes after training: `eval --video/--render`,
`train --seeds/--jobs` and `rlpipe report` (their options, and the commands they run)."""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any, List


def add_watch_options(evaluate: argparse.ArgumentParser) -> None:
    """`rlpipe eval RUN --video DIR | --render human`."""
    evaluate.add_argument("--video", metavar="DIR", nargs="?", const="",
                          help="record each episode to DIR/<entry>-episode-<k>.mp4 (needs "
                               "rlpipe[video]; DIR defaults to RUN/videos/, or videos-2/ ... "
                               "when that holds videos); --episodes defaults to 1 here")
    evaluate.add_argument("--render", choices=("human",),
                          help="show the episodes in a window (needs a display and "
                               "rlpipe[video]); --episodes defaults to 1 here")


def add_seed_options(train: argparse.ArgumentParser) -> None:
    """`rlpipe train ENTRY --seeds 0-4 [--jobs K]`."""
    train.add_argument("--seeds", metavar="LIST",
                       help="one run per seed, e.g. 0-4 or 1,5,9: folders seed-<S> under "
                            "--run-dir (default a new runs/<name>/<timestamp>/), then a table "
                            "of their returns")
    train.add_argument("--jobs", type=int, metavar="K",
                       help="with --seeds: runs at once (default: the number of CPUs)")


def add_report_command(sub: Any) -> None:
    """`rlpipe report RUN... [--out DIR]`."""
    report = sub.add_parser("report", help="aggregate final eval returns of runs (seeds of one "
                                           "or more entries): IQM, mean, median, optimality "
                                           "gap with 95%% bootstrap CIs (rliable), PNG + table")
    report.add_argument("run_dirs", nargs="+", metavar="RUN",
                        help="run folders, or folders of `train --seeds` (their seed-* runs)")
    report.add_argument("--out", default=None,
                        help="folder for report.md and report.png (default report/ in the "
                             "folder the runs share, else runs/report/)")
    report.add_argument("--normalize", action="append", default=[], metavar="ENTRY=MIN:MAX",
                        help="score (return - MIN) / (MAX - MIN) for ENTRY's runs; repeatable")
    report.add_argument("--gap-threshold", type=float, metavar="T",
                        help="optimality gap below T (default: 1 for normalised entries, "
                             "else the entry's env.stop_value)")
    report.add_argument("--reps", type=int, default=2000,
                        help="bootstrap resamples (default 2000)")
    report.add_argument("--seed", type=int, default=0, help="seed of the bootstrap (default 0)")


def cmd_watch(args: argparse.Namespace) -> int:
    from rlpipe.tools import watch_run

    episodes = 1 if args.episodes is None else args.episodes
    if episodes <= 0:
        raise ValueError(f"--episodes must be positive, got {episodes}")
    result = watch_run(args.target, episodes=episodes, seed=args.seed, video=args.video,
                       render=args.render)
    if args.video is not None:
        print(f"wrote {len(result['videos'])} video(s) to {result['video_dir']}",
              file=sys.stderr)
    print(json.dumps(result))
    return 0


def cmd_seeds(args: argparse.Namespace) -> int:
    from rlpipe.runs.seeds import format_table, json_line, parse_seeds, run_seeds

    if args.seeds is None:
        raise ValueError(f"--jobs {args.jobs} goes with --seeds (runs of several seeds at once); "
                         f"add e.g. --seeds 0-4, or drop --jobs")
    for flag, given in (("--seed", args.seed is not None), ("--resume", args.resume)):
        if given:
            raise ValueError(f"--seeds runs new runs, one per seed: drop {flag}")
    if not (args.name or args.algo):
        raise ValueError("--seeds needs a zoo entry or --algo/--env to train")
    seeds = parse_seeds(args.seeds)
    argv: List[str] = args.argv
    name = args.name or f"{args.algo}-{(args.env or args.dataset or 'env').replace('/', '-')}"
    runs = run_seeds(argv, seeds, args.jobs, name, args.run_dir)
    sys.stdout.flush()
    print(format_table(runs), file=sys.stderr, flush=True)
    print(json_line(runs))
    return 0 if all(r.summary is not None for r in runs) else 1


def cmd_report(args: argparse.Namespace) -> int:
    from rlpipe.tools import write_report

    markdown, files = write_report(args.run_dirs, args.out, normalize=args.normalize,
                                   gap_threshold=args.gap_threshold, reps=args.reps,
                                   seed=args.seed)
    print(markdown)
    print(f"wrote {', '.join(str(f) for f in files)}", file=sys.stderr)
    return 0
