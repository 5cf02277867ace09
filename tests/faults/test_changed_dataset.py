"""Fault injection: an offline run's data set changed or cut short between the run and its resume.

The run records its data set's files (size, SHA-256) in data_files.json when it starts; a
`--resume` on data whose content changed is refused in one line naming the file and the command
that rebuilds the data set, touching no checkpoint; with the data put back it resumes.
"""
import json

import pytest

from rlpipe.cli import main
from rlpipe.runs import RunDir
from tests.offline.conftest import _no_home_minari, minari_root  # noqa: F401 - fixtures
from tests.zoo.offline.datasets import cartpole_data

from ._run import DAMAGE

SETS = ["policy.eval.evaluator.eval_freq=50", "ckpt.train_freq=50", "env.stop_value=None",
        "policy.learn.batch_size=32", "policy.eval.evaluator.n_episode=2", "env.eval_n_envs=2"]


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_resume_on_a_changed_data_set_is_refused_naming_the_file(tmp_path, monkeypatch, capsys,
                                                                 minari_root, damage):
    monkeypatch.chdir(tmp_path)
    cartpole_data("cartpole/faults-v0", 1)
    run = RunDir(tmp_path / "run")
    sets = [a for s in SETS + ["max_train_iter=50"] for a in ("--set", s)]
    assert main(["train", "--algo", "dqn", "--dataset", "cartpole/faults-v0", "--run-dir",
                 str(run.root), "--no-progress", *sets]) == 0
    recorded = json.loads(run.data_files.read_text())["files"]
    data = minari_root / "cartpole" / "faults-v0" / "data"
    (name,) = [n for n in recorded if n.endswith(".hdf5")]
    assert recorded[name]["size"] == (data / name).stat().st_size
    capsys.readouterr()

    original = (data / name).read_bytes()
    DAMAGE[damage](data / name)
    before = {p: p.stat().st_mtime_ns for p in run.ckpt.rglob("*")}
    resume = ["train", "--resume", str(run.root), "--no-progress", "--set", "max_train_iter=100"]
    assert main(resume) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    assert f"{data / name} changed since the run in {run.root} started" in lines[0]
    assert ("cut short" if damage == "truncated" else "different content") in lines[0]
    assert "rlpipe dataset collect" in lines[0] and "--id cartpole/faults-v0" in lines[0]
    assert {p: p.stat().st_mtime_ns for p in run.ckpt.rglob("*")} == before

    (data / name).write_bytes(original)  # the data the run trained on, put back
    assert main(resume) == 0, capsys.readouterr().err[-2000:]
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["train_iter"] == 100
