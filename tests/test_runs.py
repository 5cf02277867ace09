"""rlpipe.runs: the run folder's layout, config.json errors, the signing key, manifests."""
import hashlib
import json
import os
import stat
import threading

import pytest

from rlpipe import runs
from rlpipe.middleware import _io
from rlpipe.runs import CheckpointError, RunDir


def test_named_paths():
    run = RunDir("/r")
    assert run.config.as_posix() == "/r/config.json"
    assert run.metrics.as_posix() == "/r/metrics.jsonl"
    assert run.log.as_posix() == "/r/log.txt"
    assert run.tb.as_posix() == "/r/tb"
    assert run.latest.as_posix() == "/r/ckpt/latest.json"
    assert run.envs_file("state_7").as_posix() == "/r/ckpt/state_7/envs.pkl"
    assert run.buffer_file("state_7").as_posix() == "/r/ckpt/state_7/buffer.npz"
    assert run.manifest("iter_12.pt").as_posix() == "/r/ckpt/iter_12.manifest.json"
    assert RunDir.of_checkpoint("/r/ckpt/best.pt").root.as_posix() == "/r"


def test_checkpoint_names_and_listings(tmp_path):
    run = RunDir(tmp_path)
    assert run.best.name == "best.pt" and run.final.name == "final.pt"
    assert runs.iter_checkpoint(12) == "iter_12.pt" and RunDir.state_name(1024) == "state_1024"
    assert run.outputs == (tmp_path / "metrics.jsonl", tmp_path / "tb", tmp_path / "ckpt")
    assert run.checkpoint_files() == [] and run.state_dirs() == [] and run.tb_event_files() == []
    run.ckpt.mkdir()
    for name in ("best.pt", "iter_3.pt", ".iter_4.pt.tmp-1-ab", "latest.json"):
        (run.ckpt / name).write_bytes(b"")
    for name in ("state_100", "state_20", "state_x"):
        (run.ckpt / name).mkdir()
    assert run.read_latest() is None  # empty: not JSON
    run.latest.write_text('{"file": "iter_3.pt", "train_iter": 3}')
    assert run.read_latest() == {"file": "iter_3.pt", "train_iter": 3}
    assert [p.name for p in run.checkpoint_files()] == ["best.pt", "iter_3.pt"]
    assert [p.name for p in run.checkpoint_files(best=False)] == ["iter_3.pt"]
    assert [p.name for p in run.state_dirs()] == ["state_20", "state_100"]  # by step, not name
    run.tb.mkdir()
    (run.tb / "events.out.tfevents.1.host").write_bytes(b"")
    assert [p.name for p in run.tb_event_files()] == ["events.out.tfevents.1.host"]


def test_middleware_io_reexports_the_atomic_writes():
    assert _io.atomic_write is runs.atomic_write
    assert _io.atomic_write_json is runs.atomic_write_json
    assert _io.is_temp_file is runs.is_temp_file


@pytest.mark.parametrize("content, message", [
    (None, "no config.json"),
    ("", "is empty"),
    ('{"entry": "cartpole-dqn", "config": {"se', "is not valid JSON"),
    ("[1, 2]", "is not an rlpipe config"),
    ('{"entry": "cartpole-dqn"}', "is not an rlpipe config"),
])
def test_read_config_errors_name_the_file(tmp_path, content, message):
    if content is not None:
        (tmp_path / "config.json").write_text(content)
    with pytest.raises((ValueError, FileNotFoundError)) as err:
        RunDir(tmp_path).read_config()
    text = str(err.value)
    assert message in text and "\n" not in text
    assert str(tmp_path) in text


def test_config_round_trip(tmp_path):
    RunDir(tmp_path).write_config({"entry": "x", "config": {"seed": 3}})
    assert RunDir(tmp_path).read_config() == ("x", {"seed": 3})


def test_key_is_created_once_private_and_shared(tmp_path, monkeypatch):
    key_path = tmp_path / "cfg" / "rlpipe" / "hmac.key"
    monkeypatch.setenv("RLPIPE_KEY_FILE", str(key_path))
    keys = []
    threads = [threading.Thread(target=lambda: keys.append(runs.signing_key())) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(keys)) == 1 and len(keys[0]) == 64
    assert stat.S_IMODE(key_path.stat().st_mode) == 0o600
    assert [p.name for p in key_path.parent.iterdir()] == ["hmac.key"]  # no temp file left
    assert runs.signing_key() == keys[0]


def test_key_location_defaults_to_xdg_config_home(tmp_path, monkeypatch):
    monkeypatch.delenv("RLPIPE_KEY_FILE", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert runs.key_file() == tmp_path / "rlpipe" / "hmac.key"


def test_a_key_others_can_read_is_refused(tmp_path, monkeypatch):
    key_path = tmp_path / "hmac.key"
    monkeypatch.setenv("RLPIPE_KEY_FILE", str(key_path))
    runs.signing_key()
    os.chmod(key_path, 0o644)
    with pytest.raises(PermissionError, match="chmod 600"):
        runs.signing_key()


def _checkpoint(tmp_path, files=None):
    run = RunDir(tmp_path)
    run.ckpt.mkdir(parents=True)
    data = b"weights" * 100
    (run.ckpt / "iter_4.pt").write_bytes(data)
    run.state_dir("state_4").mkdir()
    for name, content in (files or {"envs.pkl": b"envs", "buffer.npz": b"buffer"}).items():
        (run.state_dir("state_4") / name).write_bytes(content)
    run.write_manifest("iter_4.pt", data, state="state_4", logs={"metrics.jsonl": 10})
    return run


def test_manifest_lists_every_file_with_its_sha256(tmp_path):
    run = _checkpoint(tmp_path)
    manifest = json.loads(run.manifest("iter_4.pt").read_text())
    assert manifest["files"] == {
        "iter_4.pt": hashlib.sha256(b"weights" * 100).hexdigest(),
        "state_4/buffer.npz": hashlib.sha256(b"buffer").hexdigest(),
        "state_4/envs.pkl": hashlib.sha256(b"envs").hexdigest(),
    }
    verified = run.verify("iter_4.pt", signed=True)
    assert verified.read("state_4/envs.pkl") == b"envs"
    assert verified.logs == {"metrics.jsonl": 10}


@pytest.mark.parametrize("rel", ["iter_4.pt", "state_4/envs.pkl", "state_4/buffer.npz"])
def test_a_flipped_or_truncated_file_is_refused_naming_it(tmp_path, rel):
    run = _checkpoint(tmp_path)
    path = run.ckpt / rel
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match=f"{rel}: SHA-256 does not match"):
        run.verify("iter_4.pt", signed=True)
    path.write_bytes(bytes(data[:2]))
    with pytest.raises(CheckpointError, match=f"{rel}: SHA-256 does not match"):
        run.verify("iter_4.pt", signed=False)


def test_a_large_file_is_checked_in_chunks_when_its_path_is_asked_for(tmp_path):
    # checked_path hashes the file as it is when asked (a replay buffer is loaded from its path,
    # not from gigabytes of bytes in memory), so a file changed after verify() is refused too
    run = _checkpoint(tmp_path)
    verified = run.verify("iter_4.pt", signed=True)
    assert verified.checked_path("state_4/buffer.npz") == run.ckpt / "state_4" / "buffer.npz"
    (run.ckpt / "state_4" / "buffer.npz").write_bytes(b"buffeR")
    with pytest.raises(CheckpointError, match="buffer.npz: SHA-256 does not match"):
        verified.checked_path("state_4/buffer.npz")
    with pytest.raises(CheckpointError, match="not listed in the manifest"):
        verified.checked_path("state_4/other.npz")


def test_a_missing_state_file_is_refused(tmp_path):
    run = _checkpoint(tmp_path)
    os.remove(run.envs_file("state_4"))
    with pytest.raises(CheckpointError, match="envs.pkl: missing"):
        run.verify("iter_4.pt", signed=True)
    run.verify("iter_4.pt", signed=False, state=False)  # the .pt alone still verifies


def test_another_users_signature_is_refused_unless_trusted(tmp_path, monkeypatch):
    run = _checkpoint(tmp_path)
    monkeypatch.setenv("RLPIPE_KEY_FILE", str(tmp_path / "other.key"))  # another user's key
    with pytest.raises(CheckpointError, match=r"iter_4\.manifest\.json: signature does not match"):
        run.verify("iter_4.pt", signed=True)
    assert run.verify("iter_4.pt", signed=True, trust=True).manifest is not None
    assert run.verify("iter_4.pt", signed=False).manifest is not None  # hashes only


def test_an_edited_manifest_fails_its_signature(tmp_path):
    run = _checkpoint(tmp_path)
    path = run.manifest("iter_4.pt")
    manifest = json.loads(path.read_text())
    (run.ckpt / "state_4" / "envs.pkl").write_bytes(b"evil")
    manifest["files"]["state_4/envs.pkl"] = hashlib.sha256(b"evil").hexdigest()
    path.write_text(json.dumps(manifest))
    with pytest.raises(CheckpointError, match="signature does not match"):
        run.verify("iter_4.pt", signed=True)


def test_no_manifest_needs_trust(tmp_path):
    run = _checkpoint(tmp_path)
    run.manifest("iter_4.pt").unlink()
    with pytest.raises(CheckpointError, match="missing.*--trust-run-dir"):
        run.verify("iter_4.pt", signed=True)
    assert run.verify("iter_4.pt", signed=True, trust=True).manifest is None


def test_manifest_paths_cannot_leave_the_checkpoint_folder(tmp_path):
    run = _checkpoint(tmp_path)
    verified = run.verify("iter_4.pt", signed=True)
    with pytest.raises(CheckpointError, match="outside ckpt"):
        verified.read("../config.json")


def test_log_lengths_and_truncation(tmp_path):
    run = RunDir(tmp_path)
    run.metrics.write_text('{"env_step": 1}\n')
    run.log.write_text("line one\n")
    lengths = run.log_lengths()
    assert lengths == {"metrics.jsonl": 16, "log.txt": 9}
    with open(run.metrics, "a") as f:
        f.write('{"env_step": 2}\n{"env_st')
    with open(run.log, "a") as f:
        f.write("after the checkpoint\n")
    assert run.truncate_logs(lengths) == {"metrics.jsonl": 24, "log.txt": 21}
    assert run.metrics.read_text() == '{"env_step": 1}\n' and run.log.read_text() == "line one\n"
