"""`rlpipe tune` through the CLI: resume after Ctrl-C or a kill, best.yaml trained by `train --config`,
pruning of a clearly worse trial, --jobs, and one-line refusals."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

optuna = pytest.importorskip("optuna")

from rlpipe.cli import main  # noqa: E402
from rlpipe.tools.config_file import load_train_config  # noqa: E402

# PPO on CartPole, 256 env steps per iteration, evaluated (2 episodes) after every iteration
FIXED = ("space:\n  n_steps: 32\n  batch_size: 256\n  n_epochs: 5\n  net_arch: small\n"
         "  activation_fn: tanh\n  one_minus_gamma: 0.02\n  one_minus_gae_lambda: 0.2\n"
         "  ent_coef: 0.0\n  clip_range: 0.2\n  max_grad_norm: 0.5\n")
FAST = ["--set", "policy.eval.evaluator.eval_freq=1", "--set", "policy.eval.evaluator.n_episode=2",
        "--no-progress"]


def _space(tmp_path, extra: str = "") -> str:
    path = tmp_path / "space.yaml"
    path.write_text(FIXED + extra)
    return str(path)


def _trials(out):
    return optuna.load_study(study_name="cartpole-ppo",
                             storage=f"sqlite:///{os.path.abspath(out)}/study.db").trials


def _interrupt_when_trial_starts(cmd, trial_dir, timeout=120.0):
    """Run `cmd`, Ctrl-C it (SIGINT to its PID) once `trial_dir` is a started run."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + timeout
    while not os.path.exists(os.path.join(trial_dir, "config.json")):
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        assert time.time() < deadline, f"{trial_dir} never started"
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    return proc.returncode, err


@pytest.mark.slow
def test_an_interrupted_tune_resumes_with_the_same_command_and_its_best_config_trains(
        tmp_path, capsys):
    out = str(tmp_path / "tune")
    args = ["tune", "cartpole-ppo", "--trials", "4", "--budget", "512", "--out", out,
            "--space", _space(tmp_path, "  learning_rate: {low: 0.0001, high: 0.01, log: true}\n"),
            *FAST]
    code, err = _interrupt_when_trial_starts([sys.executable, "-m", "rlpipe.cli", *args],
                                             os.path.join(out, "trials", "trial-0001"))
    assert code == 130 and "rerun the same command" in err.strip().splitlines()[-1]
    record = json.loads(open(os.path.join(out, "trials", "trial-0001", "tune.json")).read())
    assert record["state"] == "interrupted"
    assert main(args) == 0
    printed = capsys.readouterr().out
    trials = _trials(out)
    states = [t.state.name for t in trials]
    assert states.count("COMPLETE") + states.count("PRUNED") == 4, states
    killed = trials[1]
    assert killed.state.name == "FAIL" and killed.user_attrs.get("interrupted")
    assert "error" not in killed.user_attrs
    retry = [t for t in trials if t.user_attrs.get("retry_of") == 1]
    assert len(retry) == 1 and retry[0].params == killed.params
    assert retry[0].state.name == "COMPLETE"
    assert "trial  state" in printed and "train it: rlpipe train --config" in printed

    best = os.path.join(out, "best.yaml")
    spec = load_train_config(best)
    complete = [t for t in trials if t.state.name == "COMPLETE"]
    top = max(complete, key=lambda t: t.value)
    assert f"policy.learn.lr={top.params['learning_rate']!r}" in spec["overrides"]
    run_dir = tmp_path / "from-best"
    assert main(["train", "--config", best, "--max-env-steps", "256", "--run-dir", str(run_dir),
                 "--no-progress"]) == 0
    config = json.loads((run_dir / "config.json").read_text())
    assert config["entry"] == "cartpole-ppo"
    assert config["config"]["policy"]["learn"]["lr"] == top.params["learning_rate"]


@pytest.mark.slow
def test_a_clearly_worse_trial_is_pruned_and_its_run_folder_says_so(tmp_path, capsys):
    # the third trial gets Sutton & Barto's CartPole reward (0 per step, -1 at the end): its
    # returns are <= 0 where the two earlier trials' are >= 8
    space = _space(tmp_path, "  learning_rate: 0.001\n"
                             "  sparse: {choices: [false, true], "
                             "key: env.env_kwargs.sutton_barto_reward}\n"
                             "enqueue:\n  - {sparse: false}\n  - {sparse: false}\n"
                             "  - {sparse: true}\n")
    out = str(tmp_path / "tune")
    assert main(["tune", "cartpole-ppo", "--trials", "3", "--budget", "1024", "--out", out,
                 "--space", space, "--prune-after", "2", *FAST]) == 0
    assert [t.state.name for t in _trials(out)] == ["COMPLETE", "COMPLETE", "PRUNED"]
    folder = os.path.join(out, "trials", "trial-0002")
    record = json.loads(open(os.path.join(folder, "tune.json")).read())
    assert record["state"] == "pruned" and record["pruned"]["value"] <= 0
    log_txt = open(os.path.join(folder, "log.txt")).read()
    assert "pruned at evaluation" in log_txt
    assert "the run ended after iteration" in log_txt and ": pruned by tune at evaluation" in log_txt
    assert os.path.exists(os.path.join(folder, "ckpt", "final.pt"))  # stopped cleanly
    assert "pruned" in capsys.readouterr().out
    # best.yaml is the best trial's config, seed and budget: training it reproduces that trial
    assert main(["train", "--config", os.path.join(out, "best.yaml"), "--run-dir",
                 str(tmp_path / "again"), "--no-progress", *FAST[:4]]) == 0
    again = json.loads(capsys.readouterr().out.strip().splitlines()[-1])["eval_value"]
    assert again == max(t.value for t in _trials(out) if t.value is not None)


@pytest.mark.slow
def test_jobs_run_trials_in_processes_and_never_more_than_asked(tmp_path):
    out = str(tmp_path / "tune")
    space = _space(tmp_path, "  learning_rate: {low: 0.0001, high: 0.01, log: true}\n")
    assert main(["tune", "cartpole-ppo", "--trials", "3", "--budget", "256", "--jobs", "2",
                 "--out", out, "--space", space, *FAST]) == 0
    trials = _trials(out)
    assert [t.state.name for t in trials] == ["COMPLETE"] * 3
    assert sorted(os.listdir(os.path.join(out, "trials"))) == [
        "trial-0000", "trial-0001", "trial-0002"]


@pytest.mark.parametrize("argv, message", [
    (["tune", "no-such-entry"], "unknown zoo entry 'no-such-entry'"),
    (["tune", "cartpole-ppo", "--budget", "0"], "--budget must be a positive"),
    (["tune", "cartpole-ppo", "--trials", "0"], "--trials must be at least 1"),
    (["tune", "cartpole-bc"], "trains offline"),
    (["tune", "cartpole-ppo", "--set", "policy.learn.lrr=1"], "policy.learn.lrr"),
    (["tune", "--algo", "bc", "--env", "CartPole-v1"], "no search space for algorithm 'bc'"),
])
def test_bad_tune_input_is_one_line(argv, message, tmp_path, capsys):
    full = [*argv, "--out", str(tmp_path / "t")]
    full += [] if "--trials" in argv else ["--trials", "2"]
    full += [] if "--budget" in argv else ["--budget", "100"]
    assert main(full) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1, err
    assert not os.path.exists(tmp_path / "t" / "study.db")


def test_an_unknown_space_key_is_one_line_naming_the_file(tmp_path, capsys):
    path = tmp_path / "space.yaml"
    path.write_text("space:\n  learning_rat: {low: 0.001, high: 0.01}\n")
    assert main(["tune", "cartpole-ppo", "--trials", "2", "--budget", "100", "--space",
                 str(path), "--out", str(tmp_path / "t")]) == 2
    err = capsys.readouterr().err.strip()
    assert "unknown space key 'learning_rat'" in err and str(path) in err
    assert "learning_rate" in err and len(err.splitlines()) == 1


def test_a_study_made_with_other_arguments_is_not_resumed(tmp_path, capsys):
    from rlpipe.tools.tune import TuneSpec, begin, folder_lock, prepare

    out = str(tmp_path / "t")
    study = prepare(TuneSpec("cartpole-ppo", None, None, [], trials=2, budget=500, out=out))
    with folder_lock(out):
        begin(study)
    assert main(["tune", "cartpole-ppo", "--trials", "2", "--budget", "600", "--out", out]) == 2
    err = capsys.readouterr().err.strip()
    assert "made with budget 500, not 600" in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("text, message", [
    ("entry: cartpole-ppo\nconfig:\n  policy: {learn: {lrr: 1}}\n", "policy.learn.lrr"),
    ("entry: cartpole-ppo\nseeds: 1\n", "unknown key 'seeds'"),
    ("config: {}\n", "name what to train"),
    ("entry: no-such-entry\n", "unknown zoo entry"),
])
def test_a_bad_config_file_is_one_line_naming_the_file(tmp_path, capsys, text, message):
    path = tmp_path / "run.yaml"
    path.write_text(text)
    assert main(["train", "--config", str(path), "--run-dir", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1, err
    assert "unknown zoo entry" in err or str(path) in err
    assert not (tmp_path / "r").exists()


def test_set_applies_on_top_of_a_config_file(tmp_path, capsys):
    path = tmp_path / "run.yaml"
    path.write_text("entry: cartpole-ppo\nseed: 4\nconfig:\n  policy.learn.lr: 0.002\n"
                    "  policy: {learn: {gamma: 0.95}}\n")
    run_dir = tmp_path / "r"
    assert main(["train", "--config", str(path), "--set", "policy.learn.lr=0.003",
                 "--max-env-steps", "256", "--run-dir", str(run_dir), "--no-progress",
                 "--set", "policy.eval.evaluator.n_episode=1"]) == 0
    config = json.loads((run_dir / "config.json").read_text())["config"]
    assert config["policy"]["learn"]["lr"] == 0.003 and config["policy"]["learn"]["gamma"] == 0.95
    assert config["seed"] == 4


def test_a_trial_left_running_by_a_killed_tune_is_marked_failed_and_tried_again(tmp_path):
    from rlpipe.tools.tune import TuneSpec, begin, counted, folder_lock, prepare

    out = str(tmp_path / "t")
    study = prepare(TuneSpec("cartpole-ppo", None, None, [], trials=2, budget=500, out=out))
    with folder_lock(out):
        opened = begin(study)
        left = opened.ask()  # a tune killed here leaves its trial RUNNING in the database
        left.suggest_float("learning_rate", 1e-5, 0.002, log=True)
    with folder_lock(out):
        opened = begin(prepare(study.spec))
    trials = opened.trials
    assert trials[0].state.name == "FAIL" and "error" not in trials[0].user_attrs
    assert trials[1].state.name == "WAITING" and trials[1].user_attrs["retry_of"] == 0
    retry = opened.ask()  # the next trial asked is the retry, with the same values
    assert retry.number == 1 and counted(opened) == (0, 1)
    assert retry.suggest_float("learning_rate", 1e-5, 0.002, log=True) == \
        trials[0].params["learning_rate"]


def test_ctrl_c_as_a_trial_starts_marks_it_interrupted_and_tried_again(tmp_path, capsys,
                                                                        monkeypatch):
    # Ctrl-C between the trial's config.json and the run's graceful stop arrives as a plain
    # KeyboardInterrupt, not `Interrupted`: the trial is recorded the same way
    import rlpipe.training as training

    def started_then_ctrl_c(*args, run_dir, **kwargs):
        os.makedirs(run_dir)
        open(os.path.join(run_dir, "config.json"), "w").close()
        raise KeyboardInterrupt

    monkeypatch.setattr(training, "train", started_then_ctrl_c)
    out = str(tmp_path / "tune")
    assert main(["tune", "cartpole-ppo", "--trials", "2", "--budget", "512", "--out", out,
                 "--space", _space(tmp_path), "--no-progress"]) == 130
    assert "rerun the same command" in capsys.readouterr().err
    record = json.loads(open(os.path.join(out, "trials", "trial-0000", "tune.json")).read())
    assert record["state"] == "interrupted"
    first, retry = _trials(out)
    assert first.state.name == "FAIL" and first.user_attrs["interrupted"]
    assert retry.state.name == "WAITING" and retry.user_attrs["retry_of"] == 0
