"""`rlpipe eval RUN --video DIR / --render human` and `logger.wandb=True` (offline), through the
CLI, on one tiny CartPole run trained with W&B on."""
import glob
import json
import pathlib

import pytest

from rlpipe.cli import main

TINY = ["--max-env-steps", "256", "--no-progress", "--set", "policy.collect.random_collect_size=128",
        "--set", "replay.min_samples=128", "--set", "policy.eval.evaluator.n_episode=1",
        "--set", "policy.eval.evaluator.eval_freq=50"]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A tiny cartpole-dqn run with logger.wandb=True in W&B's offline mode (no network)."""
    wandb = pytest.importorskip("wandb")
    folder = tmp_path_factory.mktemp("watch") / "run"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("WANDB_MODE", "offline")
        mp.setenv("WANDB_SILENT", "true")
        assert main(["train", "cartpole-dqn", "--run-dir", str(folder), "--set",
                     "logger.wandb=True", *TINY]) == 0
    wandb.teardown()  # W&B's service writes the offline files in the background: wait for it
    return folder


def _wandb_log(folder):
    files = glob.glob(str(folder / "wandb" / "offline-run-*" / "run-*.wandb"))
    assert files, f"no offline W&B run under {folder / 'wandb'}"
    return b"".join(pathlib.Path(f).read_bytes() for f in files)


def test_wandb_offline_files_hold_the_logged_metrics_and_config(run):
    data = _wandb_log(run)
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    logged = {k for row in rows for k in row} - {"time", "wall_time", "train_iter", "total_step"}
    assert "eval/return_mean" in logged and "train/loss" in logged
    for key in logged:  # the same names as metrics.jsonl and TensorBoard
        assert key.encode() in data, key
    assert b"replay" in data and b"min_samples" in data  # the config
    assert (run / "wandb" / "rlpipe_run_id").read_text().encode() in data


def test_video_writes_one_mp4_per_episode_with_frames(run, tmp_path, capsys):
    moviepy = pytest.importorskip("moviepy")
    pytest.importorskip("pygame")
    out = tmp_path / "videos"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("WANDB_MODE", "offline")
        assert main(["eval", str(run), "--video", str(out), "--episodes", "2"]) == 0
    import wandb

    wandb.teardown()
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    files = sorted(out.glob("*.mp4"))
    assert [f.name for f in files] == ["cartpole-dqn-episode-0.mp4", "cartpole-dqn-episode-1.mp4"]
    assert result["videos"] == [str(f) for f in files] and len(result["returns"]) == 2
    for file, ret in zip(files, result["returns"]):
        clip = moviepy.VideoFileClip(str(file))
        try:  # CartPole: a frame per step, at 50 fps; the cart is drawn on white
            assert clip.size == [600, 400]
            assert clip.n_frames >= ret - 1
            frame = clip.get_frame(0)
            assert frame.shape == (400, 600, 3) and 100 < frame.mean() < 255
        finally:
            clip.close()
    assert result["wandb"] is True and b"video/cartpole-dqn-episode-0" in _wandb_log(run)
    # a second recording into the same folder would mix episodes: refused, in one line
    assert main(["eval", str(run), "--video", str(out)]) == 2
    assert "already holds videos" in capsys.readouterr().err


def test_render_human_opens_a_window_or_says_there_is_no_display(run, capsys, monkeypatch):
    pytest.importorskip("pygame")
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "SDL_VIDEODRIVER"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr("sys.platform", "linux")
    assert main(["eval", str(run), "--render", "human"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no display" in err[0] and "--video" in err[0]
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")  # a window SDL draws off-screen
    assert main(["eval", str(run), "--render", "human"]) == 0
    assert len(json.loads(capsys.readouterr().out.strip().splitlines()[-1])["returns"]) == 1


def test_an_env_that_cannot_render_is_one_clear_error():
    from rlpipe.envs._maskedgrid import GYM_ID, register
    from rlpipe.envs._registry import resolve_env
    from rlpipe.tools.video import _probe

    register()
    with pytest.raises(ValueError, match=r"--video: the env .*MaskedGrid.* cannot render"):
        _probe(resolve_env(GYM_ID, {"render_mode": "rgb_array"}), "rgb_array", "--video")


def test_missing_moviepy_names_the_extra(run, tmp_path, capsys, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "moviepy" else real(name, *a))
    assert main(["eval", str(run), "--video", str(tmp_path / "v")]) == 2
    err = capsys.readouterr().err
    assert "moviepy" in err and 'rlpipe[video]' in err
