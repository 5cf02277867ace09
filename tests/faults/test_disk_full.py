"""Fault injection: the disk fills up while a run writes a checkpoint or a metrics row.

The write is made to fail in-process (half the bytes written, then ENOSPC, as a full disk does)
and `rlpipe train` runs through `rlpipe.cli.main`. The run stops with one line naming the file
and `--resume`; nothing half-written is trusted (no temporary file is left, the previous
checkpoint is the resumable one); once space is free, `--resume` continues with whole rows.
"""
import errno
import json
import os
import re

import pytest

import rlpipe.runs._atomic as atomic_module
from rlpipe.cli import main
from rlpipe.middleware import load_checkpoint
from rlpipe.middleware.logger import OnlineLogger
from rlpipe.runs import RunDir, is_temp_file

from ._run import SMALL

SETS = [a for s in SMALL for a in ("--set", s)]
ITER_PT = re.compile(r"^iter_\d+\.pt$")
ITER_MANIFEST = re.compile(r"^iter_\d+\.manifest\.json$")


def _full(write):
    """`write(f)` that writes half of what it would, then fails as a full disk does."""
    def half_then_enospc(f):
        class Half:
            def write(self, data):
                f.write(bytes(data)[: len(data) // 2])
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        write(Half())
    return half_then_enospc


def _train(run, capsys, *extra):
    code = main(["train", "cartpole-dqn", "--run-dir", str(run.root), "--max-env-steps",
                 "100000", "--no-progress", *SETS, *extra])
    return code, capsys.readouterr().err.strip().splitlines()


def _resumes_with_whole_rows(run, resumable, capsys):
    covered = json.loads(run.manifest(resumable).read_text())["meta"]["env_step"]
    assert main(["train", "--resume", str(run.root), "--no-progress", "--max-env-steps",
                 str(covered + 512)]) == 0, capsys.readouterr().err[-2000:]
    steps = [json.loads(line)["env_step"] for line in run.metrics.read_text().splitlines()]
    assert all(a < b for a, b in zip(steps, steps[1:])) and steps[-1] >= covered + 512
    assert f"resumed from {run.checkpoint(resumable)}" in run.log.read_text()


def _no_temp_files(run):
    return [p for p in run.root.rglob("*") if is_temp_file(p) or is_temp_file(p.parent)]


@pytest.mark.parametrize("failing", [ITER_PT, ITER_MANIFEST], ids=["pt", "manifest"])
def test_disk_full_during_a_checkpoint_keeps_the_previous_one(tmp_path, capsys, monkeypatch,
                                                              failing):
    run = RunDir(tmp_path / "run")
    real, written = atomic_module.atomic_write, []

    def atomic_write(path, write):
        name = os.path.basename(path)
        if failing.match(name):
            written.append(name)
            if len(written) == 3:  # the third periodic checkpoint finds the disk full
                return real(path, _full(write))
        return real(path, write)

    monkeypatch.setattr(atomic_module, "atomic_write", atomic_write)
    code, lines = _train(run, capsys)
    failed, previous = (w if failing is ITER_PT else w.replace(".manifest.json", ".pt")
                        for w in written[2:0:-1])
    assert code == 2 and len(lines) == 1, lines
    assert lines[0] == (f"rlpipe train: error: no space left on device while writing "
                        f"{run.ckpt / written[2]}: free space and resume with rlpipe train "
                        f"--resume {run.root}")
    assert _no_temp_files(run) == []
    assert load_checkpoint(str(run.root), which="resumable")["path"] == str(run.checkpoint(previous))
    assert failing is ITER_MANIFEST or not run.checkpoint(failed).exists()

    monkeypatch.setattr(atomic_module, "atomic_write", real)  # space is free again
    _resumes_with_whole_rows(run, previous, capsys)


def test_disk_full_during_a_metrics_write_resumes_from_the_last_checkpoint(tmp_path, capsys,
                                                                          monkeypatch):
    run = RunDir(tmp_path / "run")
    real_open, rows = OnlineLogger._open_metrics, []

    class FillingFile:
        """metrics.jsonl on a disk that is full from the 12th row on."""
        def __init__(self, f):
            self._f = f

        def write(self, text):
            rows.append(text)
            if len(rows) == 12:
                self._f.write(text[: len(text) // 2])
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return self._f.write(text)

        def __getattr__(self, name):
            return getattr(self._f, name)

    monkeypatch.setattr(OnlineLogger, "_open_metrics", lambda self: FillingFile(real_open(self)))
    code, lines = _train(run, capsys)
    assert code == 2 and len(lines) == 1, lines
    assert lines[0] == (f"rlpipe train: error: no space left on device while writing "
                        f"{run.metrics}: free space and resume with rlpipe train --resume "
                        f"{run.root}")
    resumable = os.path.basename(load_checkpoint(str(run.root), which="resumable")["path"])
    assert ITER_PT.match(resumable)
    assert not run.metrics.read_text().endswith("\n")  # the torn row is on disk ...

    monkeypatch.setattr(OnlineLogger, "_open_metrics", real_open)  # space is free again
    _resumes_with_whole_rows(run, resumable, capsys)  # ... and resume cut it off
