"""The data a run trains from, recorded in its folder: the size and SHA-256 of every file of an
offline data set, written when the run starts (`data_files.json`) and compared when it resumes,
so a resume never continues on data whose content changed (not only on a changed data set id).

Sizes are compared first (a truncated file is found without reading it); the files are hashed
once per start or resume.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

from ._atomic import PathLike, atomic_write_json, is_temp_file, sha256_file
from ._layout import RunDir

DATA_FILES_FORMAT = "rlpipe-data-files-1"


def _files(folder: Path) -> Dict[str, int]:
    return {p.relative_to(folder).as_posix(): p.stat().st_size
            for p in sorted(folder.rglob("*")) if p.is_file() and not is_temp_file(p)}


def record_data_files(run_dir: PathLike, source: str, folder: PathLike) -> None:
    """Write `<run>/data_files.json`: every file under `folder` (the data set `source`) with its
    size and SHA-256."""
    root = Path(folder)
    files = {name: {"size": size, "sha256": sha256_file(root / name)}
             for name, size in _files(root).items()}
    atomic_write_json(RunDir(run_dir).data_files, {"format": DATA_FILES_FORMAT, "source": source,
                                                   "folder": str(root), "files": files})


def recorded_data_files(run_dir: PathLike) -> Optional[Dict[str, Any]]:
    """The record of `<run>/data_files.json`; None for a run that has none (or an unreadable one:
    such a run is checked as one written before data files were recorded)."""
    try:
        record = json.loads(RunDir(run_dir).data_files.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    ok = isinstance(record, dict) and record.get("format") == DATA_FILES_FORMAT
    return record if ok and isinstance(record.get("files"), dict) else None


def changed_data_file(run_dir: PathLike, folder: PathLike) -> Optional[Tuple[Path, str]]:
    """(the file, how it changed) of the first file under `folder` that differs from the run's
    record: missing, cut short, grown, different content, or new; None when all match or the
    run recorded nothing."""
    record = recorded_data_files(run_dir)
    if record is None:
        return None
    root, files = Path(folder), record["files"]
    now = _files(root)
    for name, was in sorted(files.items()):
        size = now.get(name)
        if size is None:
            return root / name, "it is missing"
        if size != was.get("size"):
            how = "cut short" if size < was.get("size", 0) else "grown"
            return root / name, f"{size} bytes, was {was.get('size')}: {how}"
    added = sorted(set(now) - set(files))
    if added:
        return root / added[0], "a file the run did not train on"
    for name, was in sorted(files.items()):
        if sha256_file(root / name) != was.get("sha256"):
            return root / name, "same size, different content (SHA-256)"
    return None
