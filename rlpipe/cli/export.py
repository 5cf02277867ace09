"""The `rlpipe export` command line: `add_export_parser(sub)` and `run_export(args)`."""
from __future__ import annotations

import argparse
import json

from rlpipe.runs import EXPORT_SUFFIXES  # the formats; `rlpipe.tools.export` imports torch


def add_export_parser(sub: "argparse._SubParsersAction") -> argparse.ArgumentParser:
    """Register `rlpipe export RUN --format onnx|torchscript [--out F] [--which best|final]`."""
    export = sub.add_parser(
        "export", help="write a run's greedy policy (observation -> action) as an ONNX or "
                       "TorchScript file that runs without rlpipe, checked against the policy")
    export.add_argument("target", metavar="RUN",
                        help="a run folder (runs/<name>/<timestamp>/) or a .pt file in it")
    export.add_argument("--format", dest="fmt", choices=sorted(EXPORT_SUFFIXES), default="onnx",
                        help="onnx (run it with onnxruntime) or torchscript (torch.jit.load)")
    export.add_argument("--out", metavar="FILE",
                        help="the file to write (default RUN/export/policy.onnx or policy.pt); "
                             "a JSON sidecar with its inputs goes beside it")
    export.add_argument("--which", choices=("best", "final"), default="best",
                        help="the run's checkpoint: best.pt (default; final.pt when there is "
                             "no best) or final.pt")
    export.add_argument("--check-obs", type=int, default=1000, metavar="N",
                        help="observations sampled from the observation space to check the "
                             "file's actions against the policy's (default 1000)")
    return export


def run_export(args: argparse.Namespace) -> int:
    """Export as `args` say; print the summary as one JSON line."""
    from rlpipe.tools import export_run

    result = export_run(args.target, fmt=args.fmt, out=args.out, which=args.which,
                        n_check=args.check_obs)
    print(json.dumps(result))
    return 0
