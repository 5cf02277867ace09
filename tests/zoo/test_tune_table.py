"""`rlpipe tune`'s table shows what each trial trained with, not what the sampler drew."""
import optuna
import pytest

from rlpipe.tools.tune import table

optuna.logging.set_verbosity(optuna.logging.WARNING)


def _trial(study, value, params, config=None):
    trial = study.ask({name: optuna.distributions.IntDistribution(1, 10**6) for name in params})
    assert trial.params == params
    if config is not None:
        trial.set_user_attr("config", config)
    study.tell(trial, value)
    return trial


def test_the_table_shows_the_applied_config_where_the_trial_recorded_one():
    study = optuna.create_study(direction="maximize")
    study.enqueue_trial({"learning_starts": 20_000})
    _trial(study, 10.0, {"learning_starts": 20_000},
           {"replay.min_samples": 1_500, "policy.learn.lr": 0.0003})
    printed = table(study)
    assert "config (as trained)" in printed.splitlines()[0]
    row = printed.splitlines()[1]
    assert "replay.min_samples=1500" in row and "learn.lr=0.0003" in row
    assert "20000" not in row and "learning_starts" not in row


def test_a_trial_without_a_recorded_config_shows_its_sampled_values():
    study = optuna.create_study(direction="maximize")
    study.enqueue_trial({"batch_size": 64})
    _trial(study, 1.0, {"batch_size": 64})
    assert "batch_size=64" in table(study).splitlines()[1]


@pytest.mark.parametrize("values", [(5.0, 9.0), (9.0, 5.0)])
def test_rows_are_ordered_by_return(values):
    study = optuna.create_study(direction="maximize")
    for number, value in enumerate(values):
        study.enqueue_trial({"batch_size": 32 + number})
        _trial(study, value, {"batch_size": 32 + number}, {"policy.learn.batch_size": 32 + number})
    rows = table(study).splitlines()[1:]
    best = 32 + values.index(max(values))
    assert f"learn.batch_size={best}" in rows[0]
