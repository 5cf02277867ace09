"""Saving figures of `rlpipe plot` and `rlpipe graph`: checked target, no display, atomic write.

Figures are made as `matplotlib.figure.Figure` objects, not through pyplot, so no backend
or display is involved (the Agg renderer writes PNGs; SVG has its own).
"""
from __future__ import annotations

import os
import pathlib
from typing import Any, Sequence

SUFFIXES = (".png", ".svg")


def require_matplotlib(command: str) -> None:
    """Raise MissingDependencyError (an ImportError) naming the extra when matplotlib is absent;
    call it before importing matplotlib."""
    from rlpipe.zoo.registry import require_extra

    require_extra(["matplotlib"], f"{command} (it draws with matplotlib)", "plot")


def beside_runs(paths: Sequence[str], name: str) -> str:
    """Where a file or folder `name` about the run folders `paths` goes by default: in the
    folder they share (the run folder itself for one run, runs/cartpole-dqn for its seeds),
    or runs/NAME when the folder they share is the working directory or above it, so that
    a command's default output never lands in the working directory itself."""
    here = os.path.abspath(".")
    shared = os.path.commonpath([os.path.abspath(p) for p in paths]) if paths else here
    if here == shared or here.startswith(shared.rstrip(os.sep) + os.sep):
        return os.path.join("runs", name)
    inside = shared.startswith(here + os.sep)
    return os.path.join(os.path.relpath(shared) if inside else shared, name)


def check_out(path: str, option: str = "--out", suffixes: Sequence[str] = SUFFIXES) -> pathlib.Path:
    """`path` as a Path if a figure can be written there; else ValueError saying why and how.

    The suffix picks the format; the folder must exist and be writable; an existing folder
    named `path` is refused.
    """
    target = pathlib.Path(path)
    if target.suffix.lower() not in suffixes:
        raise ValueError(f"{option} {path!r}: name a {' or '.join(suffixes)} file "
                         f"(the suffix picks the format), e.g. {option} curves.png")
    folder = target.parent if str(target.parent) else pathlib.Path(".")
    if target.is_dir():
        raise ValueError(f"{option} {path!r} is a folder: name a file in it, "
                         f"e.g. {option} {target / ('figure' + suffixes[0])}")
    if not folder.is_dir():
        raise ValueError(f"{option} {path!r}: folder {str(folder)!r} does not exist; create it "
                         f"first or write somewhere else")
    if not os.access(folder, os.W_OK | os.X_OK) or (target.exists() and not os.access(target, os.W_OK)):
        raise ValueError(f"{option} {path!r} cannot be written (no write permission in "
                         f"{str(folder)!r}); write somewhere else")
    return target


def save_figure(fig: Any, path: str, option: str = "--out", dpi: int = 100) -> pathlib.Path:
    """Write `fig` to `path` (format from the suffix) through a temporary file, atomically."""
    target = check_out(path, option)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")  # created with the usual mode
    try:
        fig.savefig(tmp, dpi=dpi, format=target.suffix.lower().lstrip("."))
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return target
