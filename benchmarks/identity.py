"""Bit-identity of training: a hash of each short run's final.pt, recorded once and checked after
a change that must not change behaviour (a refactor of pipelines, losses or learners).

    python benchmarks/identity.py --record        # writes benchmarks/results/identity.json
    python benchmarks/identity.py --check         # retrains; per entry same/DIFFERENT, exit 1 on any
    python benchmarks/identity.py --check --only simple-spread-mappo --keep /tmp/runs

Each entry of `ENTRIES` is trained with `rlpipe train ENTRY --seed 0` at a budget of a few
seconds (the `--set` overrides make updates, evaluations and checkpoints happen early), in a
fresh process and a temporary folder. cartpole-bc trains offline on a small data set of random
CartPole episodes that `rlpipe dataset collect` writes to a temporary Minari root first.

The hash covers what decides how the trained policy behaves and continues: the checkpoint's
`policy` state (every network, every optimiser state, the policy's own counters and RNG state)
and its `ctx` counters (env steps, train iterations, episodes, last evaluation), walked in a
sorted order: key names, and for a tensor its dtype, shape and raw bytes. The file's own bytes
are not hashed: they hold a wall-clock time and the rlpipe version.

torch runs on one intra-op thread (RLPIPE_NUM_THREADS=1, rlpipe's default), so a run does not
depend on how reductions are split between threads; hashes are comparable on one machine and
torch build, not across them.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Optional

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a checkout

from rlpipe.middleware.ckpt import load_checkpoint  # noqa: E402

RESULT = ROOT / "benchmarks" / "results" / "identity.json"
BC_DATASET = "identity/cartpole-random-v0"

# entry -> the arguments of `rlpipe train ENTRY` that make it short; each runs a few seconds.
ENTRIES: Dict[str, List[str]] = {
    "cartpole-dqn": [
        "--max-env-steps", "1536", "--set", "replay.min_samples=256",
        "--set", "policy.collect.random_collect_size=256", "--set", "policy.learn.update_per_collect=32",
        "--set", "policy.eval.evaluator.eval_freq=64", "--set", "policy.eval.evaluator.n_episode=2",
        "--set", "ckpt.train_freq=100"],
    "cartpole-ppo": [
        "--max-env-steps", "1536", "--set", "policy.learn.epoch_per_collect=4",
        "--set", "policy.eval.evaluator.eval_freq=2", "--set", "policy.eval.evaluator.n_episode=2",
        "--set", "ckpt.train_freq=3"],
    "pendulum-sac": [
        "--max-env-steps", "800", "--set", "replay.min_samples=256",
        "--set", "policy.collect.random_collect_size=256", "--set", "policy.learn.update_per_collect=8",
        "--set", "policy.eval.evaluator.eval_freq=64", "--set", "policy.eval.evaluator.n_episode=1",
        "--set", "env.eval_n_envs=1", "--set", "ckpt.train_freq=100"],
    "pendulum-td3": [
        "--max-env-steps", "800", "--set", "replay.min_samples=256",
        "--set", "policy.collect.random_collect_size=256", "--set", "policy.learn.update_per_collect=8",
        "--set", "policy.eval.evaluator.eval_freq=64", "--set", "policy.eval.evaluator.n_episode=1",
        "--set", "env.eval_n_envs=1", "--set", "ckpt.train_freq=100"],
    "cartpole-bc": [
        "--set", f"dataset.id={BC_DATASET}", "--set", "max_train_iter=200",
        "--set", "policy.learn.batch_size=64",
        "--set", "policy.eval.evaluator.eval_freq=100", "--set", "policy.eval.evaluator.n_episode=2",
        "--set", "env.eval_n_envs=2", "--set", "ckpt.train_freq=150"],
    "cartpole-novel-ppo-lstm": [
        "--max-env-steps", "1024", "--set", "policy.learn.epoch_per_collect=4",
        "--set", "policy.eval.evaluator.eval_freq=2", "--set", "policy.eval.evaluator.n_episode=2",
        "--set", "ckpt.train_freq=3"],
    "simple-spread-mappo": [
        "--max-env-steps", "3200", "--set", "policy.learn.epoch_per_collect=3",
        "--set", "policy.eval.evaluator.eval_freq=1", "--set", "policy.eval.evaluator.n_episode=2",
        "--set", "env.eval_n_envs=2", "--set", "ckpt.train_freq=1"],
}
DATASET_COMMAND = ["dataset", "collect", "random", "--env", "CartPole-v1", "--episodes", "20",
                   "--seed", "0", "--id", BC_DATASET, "--no-progress"]


def _feed(h: Any, value: Any, path: str) -> None:
    """Feed `value` into hash `h`: dicts by sorted key, sequences in order, tensors and arrays as
    dtype, shape and bytes, other leaves by type and repr."""
    if isinstance(value, dict):
        h.update(f"{{{len(value)}".encode())
        for key in sorted(value, key=lambda k: (type(k).__name__, repr(k))):
            h.update(f"k:{type(key).__name__}:{key!r}".encode())
            _feed(h, value[key], f"{path}/{key}")
        h.update(b"}")
    elif isinstance(value, (list, tuple)):
        h.update(f"[{type(value).__name__}:{len(value)}".encode())
        for i, item in enumerate(value):
            _feed(h, item, f"{path}/{i}")
        h.update(b"]")
    elif isinstance(value, torch.Tensor):
        t = value.detach().cpu().contiguous()
        h.update(f"t:{t.dtype}:{tuple(t.shape)}".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    elif isinstance(value, np.ndarray):
        a = np.ascontiguousarray(value)
        h.update(f"a:{a.dtype.str}:{a.shape}".encode())
        h.update(a.tobytes())
    elif value is None or isinstance(value, (bool, int, float, str, bytes, np.generic)):
        h.update(f"v:{type(value).__name__}:{value!r}".encode())
    else:
        raise TypeError(f"identity hash: {path} holds a {type(value).__name__}, which it cannot "
                        f"hash; add a case for it to _feed in benchmarks/identity.py")


def state_hash(state: Dict[str, Any]) -> str:
    """SHA-256 of a checkpoint's behaviour-defining content: its `policy` and `ctx` entries."""
    h = hashlib.sha256()
    for part in ("policy", "ctx"):
        if part not in state:
            raise KeyError(f"identity hash: the checkpoint has no {part!r} entry (keys: "
                           f"{sorted(state)}); is it an rlpipe checkpoint?")
        _feed(h, state[part], part)
    return h.hexdigest()


def run_hash(run_dir: Path) -> str:
    """The hash of `run_dir`'s final.pt, read through rlpipe's verified checkpoint loader."""
    return state_hash(load_checkpoint(run_dir, which="final"))


def _rlpipe(args: List[str], env: Dict[str, str], cwd: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "rlpipe.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
        raise RuntimeError(f"`rlpipe {' '.join(args)}` failed (exit {done.returncode}):\n{tail}")


def _child_env(work: Path) -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    env.update(PYTHONPATH=str(ROOT), RLPIPE_NUM_THREADS="1", MINARI_DATASETS_PATH=str(work / "minari"),
               CUDA_VISIBLE_DEVICES="", WANDB_MODE="disabled", PYTHONHASHSEED="0")
    return env


def train_and_hash(entries: List[str], work: Path,
                   budgets: Optional[Dict[str, List[str]]] = None) -> Dict[str, str]:
    """Train each entry in `work` (run folders `work/<entry>`) with its arguments in `budgets`
    (default `ENTRIES`) and hash its final.pt."""
    work.mkdir(parents=True, exist_ok=True)
    env = _child_env(work)
    if "cartpole-bc" in entries and not (work / "minari").is_dir():
        _rlpipe(DATASET_COMMAND, env, work)
    out = {}
    for name in entries:
        run_dir = work / name
        _rlpipe(["train", name, "--seed", "0", "--run-dir", str(run_dir), "--no-progress",
                 *(budgets or ENTRIES)[name]], env, work)
        out[name] = run_hash(run_dir)
        print(f"  {name:<26} {out[name][:16]}", flush=True)
    return out


def _commit() -> str:
    """HEAD's commit, with '+dirty' when rlpipe/ has uncommitted changes."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
    dirty = git("status", "--porcelain", "--", "rlpipe")
    return git("rev-parse", "HEAD") + ("+dirty" if dirty else "")


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--record", action="store_true", help=f"write the hashes to {RESULT}")
    what.add_argument("--check", action="store_true", help="retrain and compare with the record")
    parser.add_argument("--only", nargs="+", choices=sorted(ENTRIES), help="these entries only")
    parser.add_argument("--keep", type=Path, help="train in this (new or empty) folder and keep the runs")
    args = parser.parse_args(argv)
    entries = args.only or list(ENTRIES)

    recorded: Dict[str, Any] = {}
    if args.check:
        if not RESULT.is_file():
            print(f"identity: no record at {RESULT}; run `python benchmarks/identity.py --record` "
                  f"at the reference commit first", file=sys.stderr)
            return 2
        recorded = json.loads(RESULT.read_text())
        missing = [e for e in entries if e not in recorded["hashes"]]
        if missing:
            print(f"identity: {RESULT} holds no hash for {missing}; record them with --record",
                  file=sys.stderr)
            return 2

    commit = _commit()
    print(f"training {len(entries)} entries at {commit[:12]}", flush=True)
    if args.keep is not None:
        hashes = train_and_hash(entries, args.keep.resolve())
    else:
        with tempfile.TemporaryDirectory(prefix="rlpipe-identity-") as tmp:
            hashes = train_and_hash(entries, Path(tmp))

    if args.record:
        old = json.loads(RESULT.read_text())["hashes"] if RESULT.is_file() and args.only else {}
        RESULT.parent.mkdir(parents=True, exist_ok=True)
        RESULT.write_text(json.dumps({"commit": commit, "torch": torch.__version__,
                                      "hashes": {**old, **hashes},
                                      "commands": {e: f"rlpipe train {e} --seed 0 {' '.join(a)}"
                                                   for e, a in ENTRIES.items()}},
                                     indent=1) + "\n")
        print(f"recorded {len(hashes)} hashes in {RESULT}")
        return 0
    print(f"against the record of {recorded['commit'][:12]} (torch {recorded.get('torch')}):")
    differ = [e for e in entries if hashes[e] != recorded["hashes"][e]]
    for e in entries:
        print(f"  {e:<26} {'DIFFERENT' if e in differ else 'same'}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
