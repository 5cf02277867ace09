"""`rlpipe export RUN --format onnx|torchscript [--out F] [--which best|final]`.

Writes the greedy acting face of a run's checkpoint (`_export_face`) as a file that runs without
rlpipe (onnxruntime, or torch.jit.load), then checks the written file against the policy's eval
face on 1,000 observations sampled from the observation space and those of a few env steps
(`_export_check`); only a file that passes is kept (written to a temporary name, then renamed).
Beside it goes a sidecar JSON (``policy.onnx`` → ``policy.onnx.json``): its inputs (names, shapes,
dtypes, in call order), its output and the action space, the run, checkpoint and check.
"""
from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import pathlib
import warnings
from typing import Any, Callable, Dict, List, Optional, Tuple

import gymnasium as gym
import numpy as np
import torch

from rlpipe.mask_layout import mask_segments
from rlpipe.runs import EXPORT_SUFFIXES, FINAL_CHECKPOINT, RunDir, atomic_write_text
from rlpipe.runs._atomic import temp_name
from rlpipe.pipelines.base import make_policy
from rlpipe.zoo.registry import require_extra

from ._export_check import compare, env_inputs, sample_inputs, sample_masks
from ._export_face import MASK_INPUT, ExportError, InputSpec, acting_module, refusal
from .evaluate import load_run, run_env

FORMATS = EXPORT_SUFFIXES  # --format → the file's suffix
OUTPUT = "action"
ONNX_OPSET = 18
ENV_COPIES = 4  # envs stepped side by side for the env-step observations of the check


def sidecar_path(out: pathlib.Path) -> pathlib.Path:
    """The JSON beside an exported file: ``policy.onnx`` → ``policy.onnx.json``."""
    return out.with_name(out.name + ".json")


def _on_cpu(policy_cfg: Any) -> None:
    """Build the policy on the CPU whatever device it trained on: the file is traced there (its
    constants are CPU tensors) and onnxruntime's CPU provider checks it."""
    for section in (policy_cfg, policy_cfg.get("collect") or {}):
        if "device" in section:
            section["device"] = "cpu"


def _checkpoint_target(target: str, which: str) -> str:
    if which not in ("best", "final"):
        raise ValueError(f"--which must be 'best' or 'final', got {which!r}")
    path = pathlib.Path(target)
    if which == "final" and path.is_dir():
        final = RunDir(path).checkpoint(FINAL_CHECKPOINT)
        if not final.is_file():
            raise FileNotFoundError(f"{target}: no {final.name} in {final.parent} (the run did "
                                    f"not finish); export its best checkpoint (--which best)")
        return str(final)
    return target


@contextlib.contextmanager
def _quiet() -> Any:
    """The exporters' progress prints, tracer and deprecation warnings stay off the console."""
    loggers = [logging.getLogger(n) for n in ("torch.onnx", "torch.export", "torch._dynamo")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            yield
    finally:
        for lg, level in zip(loggers, levels):
            lg.setLevel(level)


def _write(module: torch.nn.Module, example: Dict[str, np.ndarray], names: List[str],
           fmt: str, path: pathlib.Path) -> None:
    args = tuple(torch.as_tensor(example[n]) for n in names)
    try:
        with _quiet(), torch.no_grad():
            if fmt == "torchscript":
                torch.jit.save(torch.jit.trace(module, args, check_trace=False), str(path))
                return
            batch = torch.export.Dim("batch")
            # one dict per tensor of forward's *inputs: axis 0 is the batch
            torch.onnx.export(module, args, str(path), input_names=names, output_names=[OUTPUT],
                              dynamo=True, external_data=False, opset_version=ONNX_OPSET,
                              dynamic_shapes=(tuple({0: batch} for _ in names),), verbose=False)
    except Exception as err:  # the exporters raise many types; name the step and keep the cause
        first = (str(err).strip().splitlines() or [type(err).__name__])[0]
        raise ExportError(f"torch could not write the {fmt} file ({type(err).__name__}: "
                          f"{first}); rerun with --debug for the whole traceback") from err


def _runner(fmt: str, path: pathlib.Path, names: List[str]
            ) -> Callable[[Dict[str, np.ndarray]], np.ndarray]:
    """Run the written file as a user would: onnxruntime, or torch.jit.load."""
    if fmt == "torchscript":
        with warnings.catch_warnings():  # torch 2.13 marks TorchScript deprecated
            warnings.simplefilter("ignore", DeprecationWarning)
            loaded = torch.jit.load(str(path))

        def run_ts(inputs: Dict[str, np.ndarray]) -> np.ndarray:
            with torch.no_grad():
                return loaded(*(torch.as_tensor(inputs[n]) for n in names)).numpy()
        return run_ts
    import onnxruntime as ort  # export_run checked that it is installed

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    got = [i.name for i in session.get_inputs()]
    if got != names:
        raise ExportError(f"the ONNX file's inputs are {got}, expected {names} (an observation "
                          f"part the model does not read?); the file was not kept")
    return lambda inputs: session.run([OUTPUT], {n: inputs[n] for n in names})[0]


def _action_space_json(space: gym.Space) -> Dict[str, Any]:
    out: Dict[str, Any] = {"type": type(space).__name__, "repr": " ".join(repr(space).split())}
    if isinstance(space, gym.spaces.Discrete):
        out.update(n=int(space.n), start=int(space.start))
    elif isinstance(space, gym.spaces.MultiDiscrete):
        out.update(nvec=space.nvec.tolist(), start=np.asarray(space.start).tolist())
    elif isinstance(space, gym.spaces.Box):
        out.update(low=space.low.tolist(), high=space.high.tolist(), shape=list(space.shape))
    elif isinstance(space, gym.spaces.MultiBinary):
        out.update(shape=list(space.shape))
    return out


def _is_discrete(space: gym.Space) -> bool:
    return not isinstance(space, gym.spaces.Box)


def _check(policy: Any, env: Any, fmt: str, path: pathlib.Path, specs: List[InputSpec],
           n_check: int, env_steps: int, seed: int, atol: float
           ) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    names = [s.name for s in specs]
    run_file = _runner(fmt, path, names)
    obs_specs = [s for s in specs if s.name != MASK_INPUT]
    sampled = sample_inputs(policy.obs_space, obs_specs, n_check, seed)
    with_mask = len(obs_specs) < len(specs)
    if with_mask:
        sampled[MASK_INPUT] = sample_masks(mask_segments(policy.action_space), n_check, seed + 1)
    stepped = env_inputs(env, policy, obs_specs, env_steps, with_mask)
    discrete = _is_discrete(policy.action_space)
    worst = 0.0
    for inputs, what in ((sampled, f"{n_check} sampled observations"),
                         (stepped, f"{len(stepped[names[0]])} env-step observations"),
                         ({n: v[:1] for n, v in stepped.items()}, "a batch of one")):
        worst = max(worst, compare(policy, run_file, inputs, obs_specs, discrete, atol, what))
    one = run_file({n: v[:1] for n, v in stepped.items()})
    output = {"name": OUTPUT, "shape": ["batch", *one.shape[1:]], "dtype": str(one.dtype)}
    return output, {"sampled_observations": n_check,
                    "env_step_observations": len(stepped[names[0]]),
                    "max_abs_diff": worst, "atol": 0.0 if discrete else atol, "passed": True}


def export_run(target: str, fmt: str = "onnx", out: Optional[str] = None, which: str = "best",
               n_check: int = 1000, env_steps: int = 16, seed: int = 0,
               atol: float = 1e-5) -> Dict[str, Any]:
    """Export the acting face of a run (folder or .pt) to `out`; see the module docstring.
    Returns what the CLI prints: the file, its sidecar, the checkpoint and the check."""
    if fmt not in FORMATS:
        raise ValueError(f"--format must be one of {sorted(FORMATS)}, got {fmt!r}")
    if n_check < 1 or env_steps < 1:
        raise ValueError(f"the check needs at least one observation of each kind, got "
                         f"n_check={n_check}, env_steps={env_steps}")
    if fmt == "onnx":  # torch's ONNX exporter writes through onnx and onnxscript; the check runs it
        require_extra(["onnx", "onnxscript", "onnxruntime"],
                      "rlpipe export --format onnx (or use --format torchscript)", "export")
    entry, cfg, checkpoint, run = load_run(_checkpoint_target(target, which))
    reason = refusal(entry.policy_cls)
    if reason is not None:
        raise ExportError(f"cannot export {run.root}: {reason}")
    path = pathlib.Path(out) if out else run.export_file(fmt)
    if path.is_dir():
        raise IsADirectoryError(f"--out {path} is a folder; give a file name such as "
                                f"{path / run.export_file(fmt).name}")
    path.parent.mkdir(parents=True, exist_ok=True)
    _on_cpu(cfg.policy)
    env = run_env(cfg, ENV_COPIES, seed, entry.policy_cls)
    tmp = path.with_name(temp_name(path.name))
    try:
        policy = make_policy(cfg, entry.policy_cls, env)
        policy.load_state_dict(checkpoint["policy"])
        env.reset()
        with_mask = (getattr(env, "action_mask", None) is not None
                     and getattr(policy, "supports_action_mask", False))
        module, specs = acting_module(policy, with_mask)
        if with_mask:
            n = sum(mask_segments(policy.action_space))
            specs = specs + [InputSpec(MASK_INPUT, ("batch", n), "bool", (), "action mask")]
        example = sample_inputs(policy.obs_space, specs[:len(specs) - with_mask], 4, seed)
        if with_mask:
            example[MASK_INPUT] = sample_masks(mask_segments(policy.action_space), 4, seed)
        _write(module, example, [s.name for s in specs], fmt, tmp)
        output, check = _check(policy, env, fmt, tmp, specs, n_check, env_steps, seed, atol)
        os.replace(tmp, path)
    finally:
        env.close()
        tmp.unlink(missing_ok=True)
    sidecar = {
        "format": fmt, "file": path.name, "entry": entry.name,
        "policy": type(policy).__name__, "env": cfg.env.id, "run_dir": str(run.root),
        "checkpoint": str(checkpoint.get("path")),
        "env_step": checkpoint.get("meta", {}).get("env_step"),
        "inputs": [s.as_json() for s in specs],
        "output": output,
        "action_space": _action_space_json(policy.action_space),
        "deterministic": True, "check": check,
    }
    atomic_write_text(sidecar_path(path), json.dumps(sidecar, indent=2) + "\n")
    return {"file": str(path), "sidecar": str(sidecar_path(path)), "format": fmt,
            "entry": entry.name, "checkpoint": sidecar["checkpoint"],
            "inputs": [s.name for s in specs], "max_abs_diff": check["max_abs_diff"]}

