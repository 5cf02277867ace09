"""`rlpipe serve | trainer | worker`: a training on a Ray cluster in TMRL's shape.

    rlpipe serve NAME [--address ADDR] [--stop]         # on the head node: the hub
    rlpipe trainer NAME --address ADDR ENTRY [--set ...] # the learner (and evaluator)
    rlpipe trainer NAME --address ADDR --resume RUN_DIR  # continue a trainer's run on a new hub
    rlpipe worker NAME --address ADDR [--n N]           # on any machine: N more collectors

See rlpipe.pipelines.remote and docs/distributed.md ("Cluster").
"""
from __future__ import annotations

import argparse
from typing import Any, Callable, Dict

COMMANDS = ("serve", "trainer", "worker")


class _IntermixedParser(argparse.ArgumentParser):
    """The trainer's parser: ENTRY may come after options (`rlpipe trainer tmrl --address A
    cartpole-dqn`) and is left out with --resume. Plain argparse fills an optional positional
    from the words before the first option, so ENTRY would then be refused as unrecognised."""

    _intermixing = False

    def parse_known_args(self, args=None, namespace=None):  # type: ignore[override]
        if self._intermixing:  # parse_known_intermixed_args calls back in here
            return super().parse_known_args(args, namespace)
        self._intermixing = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._intermixing = False


def add_cluster_commands(sub: Any) -> None:
    """Add the three commands to the `rlpipe` subparsers `sub`."""
    serve = sub.add_parser("serve", help="on a Ray cluster's head node: start the hub NAME that "
                                         "a trainer and workers attach to (--stop ends it)")
    serve.add_argument("hub", metavar="NAME", help="the hub's name on the cluster")
    serve.add_argument("--stop", action="store_true", help="end the hub (and its training)")
    serve.add_argument("--queue-size", type=int, default=4,
                       help="collector batches queued before collectors wait (4)")
    serve.add_argument("--lost-after", type=float, default=5.0, metavar="S",
                       help="a collector silent this long is counted lost (5 s)")

    trainer = sub.add_parser("trainer", help="train a zoo entry as the learner of hub NAME; "
                                             "its collectors come from `rlpipe worker`")
    trainer.__class__ = _IntermixedParser
    trainer.add_argument("hub", metavar="NAME", help="the hub (`rlpipe serve NAME`)")
    trainer.add_argument("name", metavar="ENTRY", nargs="?",
                         help="an off-policy zoo entry (rlpipe list); optional with --resume")
    trainer.add_argument("--resume", metavar="RUN_DIR",
                         help="continue this run folder from its newest checkpoint as the "
                              "learner of hub NAME (a fresh hub: one hub carries one training)")
    trainer.add_argument("--set", dest="overrides", action="append", default=[],
                         metavar="KEY=VALUE", help="override a config value")
    trainer.add_argument("--seed", type=int, default=0, help="seed of the run (0)")
    trainer.add_argument("--run-dir", help="a new or empty folder for this run")
    trainer.add_argument("--overwrite", action="store_true",
                         help="with --run-dir: delete the run already in that folder first")
    trainer.add_argument("--max-env-steps", type=int, help="stop after this many env steps")
    trainer.add_argument("--no-progress", action="store_true", help="no progress bar")

    worker = sub.add_parser("worker", help="add collectors to the training on hub NAME, on "
                                           "this machine, until it ends")
    worker.add_argument("hub", metavar="NAME", help="the hub (`rlpipe serve NAME`)")
    worker.add_argument("--n", type=int, default=1, help="collectors to add (1)")
    worker.add_argument("--id", dest="worker_id", metavar="ID",
                        help="the worker's name in metrics (default HOST-PID); collector i "
                             "is ID-i")
    worker.add_argument("--num-cpus", type=float, default=1.0,
                        help="Ray CPUs each collector asks for (1)")
    worker.add_argument("--resource", metavar="R",
                        help="place the collectors on nodes that hold custom resource R "
                             "(`ray start --resources '{\"R\": 1}'`) instead of this one")
    for command in (serve, trainer, worker):
        command.add_argument("--address", metavar="ADDR", default=None,
                             help="the Ray cluster (HOST:PORT of `ray start --head`; "
                                  "default auto: the one on this machine)")


def run_cluster_command(args: argparse.Namespace,
                        print_summary: Callable[[Dict[str, Any]], None]) -> int:
    """Run `rlpipe serve`, `trainer` or `worker` (the trainer's summary goes to print_summary)."""
    from rlpipe.pipelines import remote

    if args.command == "serve":
        if args.stop:
            print(remote.stop(args.hub, args.address), flush=True)
        else:
            print(remote.serve(args.hub, args.address, args.queue_size, args.lost_after),
                  flush=True)
        return 0
    if args.command == "worker":
        print(remote.worker(args.hub, args.address, args.n, args.worker_id, args.num_cpus,
                              args.resource), flush=True)
        return 0
    from rlpipe.training import train

    if args.max_env_steps is not None and args.max_env_steps <= 0:
        raise ValueError(f"--max-env-steps must be positive, got {args.max_env_steps}")
    if args.overwrite and not args.run_dir:
        raise ValueError("--overwrite needs --run-dir (the folder whose run it replaces)")
    if args.resume:
        from rlpipe.training import resume

        if args.run_dir or args.overwrite or args.seed:
            raise ValueError("rlpipe trainer --resume continues the run folder it names: drop "
                             "--run-dir, --overwrite and --seed")
        print_summary(resume(args.resume, name=args.name, overrides=args.overrides,
                             max_env_step=args.max_env_steps, progress=not args.no_progress,
                             ray_address=args.address, hub=args.hub))
        return 0
    if args.name is None:
        raise ValueError(f"rlpipe trainer {args.hub}: name the zoo entry to train (rlpipe list), "
                         f"or continue a run with --resume RUN_DIR")
    print_summary(train(args.name, seed=args.seed, overrides=args.overrides,
                        run_dir=args.run_dir, max_env_step=args.max_env_steps,
                        progress=not args.no_progress, ray_address=args.address,
                        overwrite=args.overwrite, hub=args.hub))
    return 0
