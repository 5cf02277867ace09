"""Fault injection: truncate or flip each file kind of a run folder; assert what resume/eval do.

One small run is trained once (iter_<n>.pt, best.pt, final.pt, their manifests, two state
folders); each test damages a copy of it.
"""
import hashlib
import json
import logging
import pickle
import shutil

import pytest
import torch

from rlpipe.middleware import load_checkpoint
from rlpipe.runs import CheckpointError, RunDir
from rlpipe.training import resume, train
from rlpipe.pipelines.resume import prepare_resume

from rlpipe.cli import main

from ._run import DAMAGE, SMALL, cli_subprocess, flip, newest_resumable


class Done:
    """What a CLI call left: exit code, stdout, and stderr with the log records it wrote."""

    def __init__(self, returncode, stdout, stderr):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


@pytest.fixture
def cli(capsys, caplog):
    """`rlpipe ARGS` run in this process through rlpipe.cli.main (a traceback would fail the
    test by raising); stderr includes the warnings it logged."""
    def run(*args):
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            code = main(list(args))
        out, err = capsys.readouterr()
        return Done(code, out, err + "".join(f"{r.levelname} {r.getMessage()}\n"
                                             for r in caplog.records))
    return run


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("faults") / "run"
    train("cartpole-dqn", seed=1, max_env_step=1024, run_dir=str(run_dir), progress=False,
          overrides=SMALL)
    return run_dir


@pytest.fixture
def run(trained, tmp_path):
    copy = tmp_path / "run"
    shutil.copytree(trained, copy)
    return copy


def _state_of(run_dir, name):
    return json.loads(RunDir(run_dir).manifest(name).read_text())["state_dir"]


def test_the_trained_folder_has_what_the_suite_damages(run):
    names = sorted(p.name for p in (run / "ckpt").iterdir())
    assert {"best.pt", "final.pt", "latest.json", "final.manifest.json", "best.manifest.json"} <= set(names)
    assert len([n for n in names if n.startswith("state_")]) >= 2
    assert newest_resumable(run) == "final.pt"
    assert prepare_resume(str(run)).endswith("final.pt")


@pytest.mark.parametrize("damage", sorted(DAMAGE))
@pytest.mark.parametrize("kind", ["pt", "envs.pkl", "buffer.npz", "manifest"])
def test_resume_skips_a_damaged_checkpoint_naming_the_file(run, caplog, damage, kind):
    state = _state_of(run, "final.pt")
    target = {"pt": run / "ckpt" / "final.pt", "envs.pkl": run / "ckpt" / state / "envs.pkl",
              "buffer.npz": run / "ckpt" / state / "buffer.npz",
              "manifest": RunDir(run).manifest("final.pt")}[kind]
    DAMAGE[damage](target)
    with caplog.at_level(logging.WARNING, logger="rlpipe"):
        chosen = prepare_resume(str(run))
    refused = [r.getMessage() for r in caplog.records if "cannot be loaded" in r.getMessage()]
    assert refused and str(target) in refused[0]
    assert any(f"using {chosen} instead" in r.getMessage() for r in caplog.records)
    assert not chosen.endswith("final.pt")
    # The checkpoint chosen verifies as a whole, and its state folder is not the damaged one.
    RunDir(run).verify(chosen.rsplit("/", 1)[1], signed=True)
    if kind in ("envs.pkl", "buffer.npz"):
        assert _state_of(run, chosen.rsplit("/", 1)[1]) != state


def test_a_full_resume_after_a_flipped_envs_pkl_continues_from_the_previous_checkpoint(run):
    flip(run / "ckpt" / _state_of(run, "final.pt") / "envs.pkl")
    result = resume(str(run), max_env_step=1536, progress=False)
    assert result["env_step"] >= 1536
    assert load_checkpoint(run, which="final")["ctx"]["env_step"] == result["env_step"]


def test_a_missing_state_folder_falls_back(run, caplog):
    state = _state_of(run, "final.pt")
    shutil.rmtree(run / "ckpt" / state)
    with caplog.at_level(logging.WARNING, logger="rlpipe"):
        chosen = prepare_resume(str(run))
    assert f"{state}/buffer.npz: missing" in caplog.text and not chosen.endswith("final.pt")


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_latest_json_still_resumes_from_a_verified_checkpoint(run, caplog, damage):
    DAMAGE[damage](run / "ckpt" / "latest.json")
    with caplog.at_level(logging.WARNING, logger="rlpipe"):
        chosen = prepare_resume(str(run))
    if damage == "truncated":  # unreadable: named, and the checkpoints are ordered by time
        assert "latest.json: cannot read it" in caplog.text
    assert chosen.endswith(".pt") and "best.pt" not in chosen
    RunDir(run).verify(chosen.rsplit("/", 1)[1], signed=True)


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_config_json_is_one_line_naming_it(run, cli, damage):
    DAMAGE[damage](run / "config.json")
    for args in (["train", "--resume", str(run), "--no-progress"], ["eval", str(run)]):
        done = cli(*args)
        assert done.returncode == 2, done.stderr
        assert "Traceback" not in done.stderr
        lines = [line for line in done.stderr.splitlines() if "error:" in line]
        assert len(lines) == 1
        # A flip can leave valid JSON with a misspelt key: resume names the key, eval the file.
        assert "config.json" in lines[0] or (damage == "flipped" and "config key" in lines[0])
        if args[0] == "eval":
            assert "config.json" in lines[0]


def test_an_empty_config_json_is_one_line_naming_it(run, cli):
    (run / "config.json").write_text("")
    done = cli("eval", str(run))
    assert done.returncode == 2 and "config.json is empty" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_eval_with_a_damaged_best_pt_falls_back_to_final_and_says_so(run, cli, damage):
    DAMAGE[damage](run / "ckpt" / "best.pt")
    done = cli("eval", str(run), "--episodes", "1")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert "best.pt" in done.stderr and "evaluating" in done.stderr
    assert json.loads(done.stdout.splitlines()[-1])["checkpoint"].endswith("final.pt")


def test_a_lone_pt_outside_its_run_folder_is_one_line(run, cli, tmp_path):
    lone = tmp_path / "elsewhere" / "best.pt"
    lone.parent.mkdir()
    shutil.copy(run / "ckpt" / "best.pt", lone)
    done = cli("eval", str(lone))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "outside its run folder" in done.stderr and str(lone) in done.stderr


def test_a_folder_signed_by_someone_else_needs_trust(run, cli, tmp_path, monkeypatch):
    monkeypatch.setenv("RLPIPE_KEY_FILE", str(tmp_path / "another-user.key"))
    with pytest.raises(FileNotFoundError, match=r"final\.manifest\.json: signature does not match"):
        prepare_resume(str(run))
    done = cli("train", "--resume", str(run), "--no-progress")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "--trust-run-dir" in done.stderr and "final.manifest.json" in done.stderr
    done = cli("train", "--resume", str(run), "--no-progress", "--trust-run-dir",
               "--max-env-steps", "1536")
    assert done.returncode == 0, done.stderr


def test_a_folder_from_before_manifests_needs_trust(run):
    for manifest in (run / "ckpt").glob("*.manifest.json"):
        manifest.unlink()
    with pytest.raises(FileNotFoundError, match="--trust-run-dir"):
        prepare_resume(str(run))
    with pytest.warns(RuntimeWarning, match="best.pt has no manifest: it is not verified"):
        assert load_checkpoint(run, which="best")["policy"]  # weights alone (weights_only) load
    with pytest.warns(RuntimeWarning, match="final.pt has no manifest"):
        result = resume(str(run), max_env_step=1536, progress=False, trust=True)
    assert result["env_step"] >= 1536


class Payload:
    """What an attacker puts in envs.pkl: unpickling it would create the marker file."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def _plant(run, marker, sign_hashes):
    for state in (run / "ckpt").glob("state_*"):
        (state / "envs.pkl").write_bytes(pickle.dumps(Payload(marker)))
    if sign_hashes:  # rewrite the manifests' hashes too (the attacker has no key to sign them)
        for path in (run / "ckpt").glob("*.manifest.json"):
            manifest = json.loads(path.read_text())
            for rel in manifest["files"]:
                manifest["files"][rel] = hashlib.sha256((run / "ckpt" / rel).read_bytes()).hexdigest()
            path.write_text(json.dumps(manifest))


@pytest.mark.parametrize("how", ["hashes-kept", "hashes-rewritten", "manifests-removed"])
def test_a_payload_pickle_is_never_unpickled(run, tmp_path, how):
    marker = tmp_path / "PWNED"
    _plant(run, marker, sign_hashes=how == "hashes-rewritten")
    if how == "manifests-removed":
        for path in (run / "ckpt").glob("*.manifest.json"):
            path.unlink()
    done = cli_subprocess("train", "--resume", str(run), "--no-progress", "--max-env-steps", "1536")
    assert not marker.exists()
    assert done.returncode == 2 and "Traceback" not in done.stderr
    error = [line for line in done.stderr.splitlines() if "error:" in line]
    assert len(error) == 1
    assert ("envs.pkl" in error[0]) if how == "hashes-kept" else ("manifest.json" in error[0])
    # Through Python as well: resumed_context re-verifies before unpickling.
    with pytest.raises((CheckpointError, FileNotFoundError)):
        resume(str(run), max_env_step=1536, progress=False)
    assert not marker.exists()


def test_a_nan_run_with_a_checkpoint_every_update_writes_only_finite_checkpoints(tmp_path):
    """lr=1e39 with one update and one checkpoint per iteration: the first update's loss is
    finite but the weights it leaves are not; that checkpoint is never written."""
    from rlpipe.middleware import NonFiniteStateError

    run_dir = tmp_path / "nan"
    overrides = SMALL + ["policy.learn.update_per_collect=1", "policy.learn.lr=1e39",
                         "ckpt.train_freq=1"]
    with pytest.raises(NonFiniteStateError) as err:
        train("cartpole-dqn", seed=1, max_env_step=4096, run_dir=str(run_dir), progress=False,
              overrides=overrides)
    assert err.value.checkpoint == run_dir / "ckpt" / "iter_1.pt"
    assert err.value.last_good is None  # only best.pt (no resume state) was written before
    assert "iter_1.pt was not written" in str(err.value) and "weight" in err.value.tensor
    assert not err.value.checkpoint.exists()
    for pt in (run_dir / "ckpt").glob("*.pt"):
        state = load_checkpoint(pt)["policy"]
        stack = [state]
        while stack:
            item = stack.pop()
            if isinstance(item, dict):
                stack.extend(item.values())
            elif isinstance(item, (list, tuple)):
                stack.extend(item)
            elif isinstance(item, torch.Tensor) and item.is_floating_point():
                assert torch.isfinite(item).all(), pt
