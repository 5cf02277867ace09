"""`tune_study`, the scripting form of `rlpipe tune`: it returns the study's best trial and
best.yaml, resumes when called again, refuses bad arguments before writing anything, and the
command line only parses, calls it and prints."""
import json
import os

import pytest

optuna = pytest.importorskip("optuna")

from rlpipe.cli import main  # noqa: E402
from rlpipe.tools import TuneResult, TuneWorkerError, tune_study  # noqa: E402
from rlpipe.tools.config_file import load_train_config  # noqa: E402

# PPO on CartPole with every rl-zoo value fixed but the learning rate: 256 env steps a trial
SPACE = ("space:\n  n_steps: 32\n  batch_size: 256\n  n_epochs: 5\n  net_arch: small\n"
         "  activation_fn: tanh\n  one_minus_gamma: 0.02\n  one_minus_gae_lambda: 0.2\n"
         "  ent_coef: 0.0\n  clip_range: 0.2\n  max_grad_norm: 0.5\n"
         "  learning_rate: {low: 0.0001, high: 0.01, log: true}\n")


@pytest.mark.slow
def test_the_result_is_the_best_trial_its_config_and_best_yaml_and_a_second_call_resumes(
        tmp_path):
    space = tmp_path / "space.yaml"
    space.write_text(SPACE)
    out = str(tmp_path / "tune")
    kwargs = dict(trials=2, budget=256, space=str(space), out=out, progress=False,
                  overrides=["policy.eval.evaluator.n_episode=2"])
    result = tune_study("cartpole-ppo", **kwargs)

    trials = optuna.load_study(study_name="cartpole-ppo",
                               storage=f"sqlite:///{os.path.abspath(out)}/study.db").trials
    assert [t.state.name for t in trials] == ["COMPLETE", "COMPLETE"]
    best = max(trials, key=lambda t: t.value)
    assert (result.trial, result.value) == (best.number, best.value)
    assert result.config["policy.learn.lr"] == best.params["learning_rate"]
    assert result.config["policy.eval.evaluator.n_episode"] == 2  # the fixed override
    assert result.run_dir == os.path.join(out, "trials", f"trial-{best.number:04d}")
    record = json.loads(open(os.path.join(result.run_dir, "tune.json")).read())
    assert record["state"] == "complete" and record["value"] == result.value
    spec = load_train_config(result.best_yaml)
    assert spec["name"] == "cartpole-ppo" and spec["max_env_steps"] == 256
    assert f"policy.learn.lr={result.config['policy.learn.lr']!r}" in spec["overrides"]
    assert f"{best.number:>5}  complete" in result.table().splitlines()[1]

    again = tune_study("cartpole-ppo", **kwargs)  # the study has its trials: none is run
    assert sorted(os.listdir(os.path.join(out, "trials"))) == ["trial-0000", "trial-0001"]
    assert (again.trial, again.value, again.config) == (result.trial, result.value,
                                                        result.config)


@pytest.mark.parametrize("kwargs, message", [
    (dict(trials=0, budget=100), "--trials must be at least 1"),
    (dict(trials=2, budget=0), "--budget must be a positive"),
    (dict(trials=2, budget=100, jobs=0), "--jobs must be at least 1"),
    (dict(trials=2, budget=100, overrides=["policy.learn.lrr=1"]), "policy.learn.lrr"),
])
def test_bad_arguments_are_refused_before_anything_is_written(tmp_path, kwargs, message):
    out = tmp_path / "tune"
    with pytest.raises(ValueError, match=message):
        tune_study("cartpole-ppo", out=str(out), progress=False, **kwargs)
    assert not out.exists()


def _finished_study() -> TuneResult:
    study = optuna.create_study(direction="maximize")
    trial = study.ask({"learning_rate": optuna.distributions.FloatDistribution(1e-5, 1.0)})
    trial.set_user_attr("config", {"policy.learn.lr": trial.params["learning_rate"]})
    study.tell(trial, 42.0)
    return TuneResult(0, 42.0, {"policy.learn.lr": trial.params["learning_rate"]},
                      "somewhere/best.yaml", "somewhere/trials/trial-0000", study)


def test_the_command_passes_its_options_to_tune_study_and_prints_its_result(
        monkeypatch, capsys):
    calls = []

    def fake(name=None, **kwargs):
        calls.append((name, kwargs))
        return _finished_study()

    monkeypatch.setattr("rlpipe.tools.tune.tune_study", fake)
    assert main(["tune", "cartpole-ppo", "--trials", "3", "--budget", "500", "--jobs", "2",
                 "--space", "s.yaml", "--seed", "7", "--out", "o", "--set", "a.b=1",
                 "--prune-after", "2", "--no-prune", "--no-progress"]) == 0
    assert calls == [("cartpole-ppo", dict(
        algo=None, env=None, imports=[], trials=3, budget=500, jobs=2, storage=None,
        space="s.yaml", seed=7, out="o", overrides=["a.b=1"], prune_after=2, prune=False,
        progress=False))]
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("trial  state") and "learn.lr=" in printed[1]
    assert printed[-1] == "train it: rlpipe train --config somewhere/best.yaml"


def test_a_failed_worker_is_one_line_and_exit_code_1(monkeypatch, capsys):
    def fake(name=None, **kwargs):
        raise TuneWorkerError("tune worker(s) rlpipe-tune-1 (exit code 1) stopped with an error")

    monkeypatch.setattr("rlpipe.tools.tune.tune_study", fake)
    assert main(["tune", "cartpole-ppo", "--trials", "2", "--budget", "100", "--jobs", "2"]) == 1
    err = capsys.readouterr().err.strip()
    assert err == ("rlpipe tune: error: tune worker(s) rlpipe-tune-1 (exit code 1) stopped "
                   "with an error")
