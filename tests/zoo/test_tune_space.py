"""Search spaces of `rlpipe tune` and the files of `rlpipe train --config` (no training)."""
import pytest

optuna = pytest.importorskip("optuna")

from rlpipe.zoo import get_entry  # noqa: E402
from rlpipe.tools.config_file import load_train_config, write_train_config  # noqa: E402
from rlpipe.tools.tune_space import space_for  # noqa: E402


@pytest.mark.parametrize("algo, entry", [("dqn", "cartpole-dqn"), ("ppo", "cartpole-ppo"),
                                         ("sac", "pendulum-sac"), ("td3", "pendulum-td3"),
                                         ("ppo-lstm", "cartpole-novel-ppo-lstm")])
def test_every_sample_of_a_default_space_is_a_valid_config(algo, entry):
    from rlpipe.tools.config_file import as_override

    space, zoo = space_for(algo), get_entry(entry)
    base = zoo.resolve({"max_env_step": 5000})
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    keys = set()
    for _ in range(25):
        sets = space.overrides(space.sample(study.ask()), base, 5000)
        cfg = zoo.resolve({"max_env_step": 5000}, [as_override(k, v) for k, v in sets.items()])
        keys |= set(sets)
        for key, value in sets.items():
            node = cfg
            for part in key.split("."):
                node = node[part]
            assert node == value, key
    assert {"policy.learn.gamma", "policy.learn.batch_size"} <= keys


def test_dqn_units_follow_rl_zoo():
    space, base = space_for("dqn"), get_entry("cartpole-dqn").resolve({})
    sets = space.overrides({"exploration_fraction": 0.25, "train_freq": 16, "subsample_steps": 4,
                            "target_update_interval": 1000, "learning_starts": 0,
                            "net_arch": "tiny"}, base, budget=8000)
    assert sets["policy.other.eps.decay"] == 2000  # a quarter of the budget, in env steps
    assert sets["policy.collect.n_sample"] == 16 * base.env.n_envs
    assert sets["policy.learn.update_per_collect"] == 16 * base.env.n_envs // 4
    assert sets["policy.learn.target_update_freq"] == 250  # 1000 env steps at 1 update per 4
    assert sets["replay.min_samples"] == 0 and sets["policy.model.hidden"] == (64,)


def test_a_space_file_fixes_drops_and_adds_parameters(tmp_path):
    path = tmp_path / "space.yaml"
    path.write_text("space:\n  learning_rate: {low: 0.0001, high: 0.01, log: true}\n"
                    "  one_minus_gamma: 0.03\n  net_arch: null\n"
                    "  clip: {choices: [0.1, 0.3], key: policy.learn.clip_ratio}\n"
                    "enqueue:\n  - {learning_rate: 0.001, clip: 0.3}\n")
    space = space_for("ppo", str(path))
    assert "net_arch" not in space.params and space.enqueue == [{"learning_rate": 0.001,
                                                                "clip": 0.3}]
    trial = optuna.trial.FixedTrial({**{n: p.choices[0] for n, p in space.params.items()
                                        if p.choices}, "learning_rate": 0.002,
                                     "one_minus_gae_lambda": 0.05,
                                     "ent_coef": 0.01, "max_grad_norm": 1.0})
    values = space.sample(trial)
    sets = space.overrides(values, get_entry("cartpole-ppo").resolve({}), 1000)
    assert sets["policy.learn.lr"] == 0.002 and sets["policy.learn.clip_ratio"] == 0.1
    assert sets["policy.learn.gamma"] == pytest.approx(0.97)
    assert "policy.model.hidden" not in sets


@pytest.mark.parametrize("text, message", [
    ("space:\n  lrate: {low: 0.1, high: 1}\n", "unknown space key 'lrate'"),
    ("space:\n  learning_rate: {low: 0, high: 1, log: true}\n", "low must be > 0"),
    ("space:\n  learning_rate: {low: 1, high: 0.1}\n", "low < high"),
    ("enqueue:\n  - {lrate: 0.1}\n", "unknown parameter 'lrate'"),
    ("spaces: {}\n", "unknown top-level key 'spaces'"),
    ("space: [\n", "not valid YAML"),
])
def test_a_bad_space_file_is_named_with_its_mistake(tmp_path, text, message):
    path = tmp_path / "space.yaml"
    path.write_text(text)
    with pytest.raises((ValueError, KeyError)) as err:
        space_for("ppo", str(path))
    assert message in str(err.value) and str(path) in str(err.value)


def test_an_algorithm_without_a_space_needs_a_file(tmp_path):
    with pytest.raises(ValueError, match="no search space for algorithm 'bc'"):
        space_for("bc")
    path = tmp_path / "space.yaml"
    path.write_text("space:\n  lr: {low: 0.0001, high: 0.01, log: true, key: policy.learn.lr}\n")
    space = space_for("bc", str(path))
    assert space.overrides({"lr": 0.001}, None, 100) == {"policy.learn.lr": 0.001}


def test_a_written_config_file_loads_back_as_overrides(tmp_path):
    path = str(tmp_path / "best.yaml")
    write_train_config(path, {"entry": "cartpole-ppo", "seed": 3},
                       {"policy.learn.lr": 0.002, "policy.model.hidden": (64, 64),
                        "policy.model.activation": "relu", "max_env_step": 2000}, "a header")
    spec = load_train_config(path)
    assert spec["name"] == "cartpole-ppo" and spec["seed"] == 3
    cfg = get_entry("cartpole-ppo").resolve({}, spec["overrides"])
    assert cfg.policy.learn.lr == 0.002 and tuple(cfg.policy.model.hidden) == (64, 64)
    assert cfg.policy.model.activation == "relu" and cfg.max_env_step == 2000


def test_dotted_keys_in_a_config_file(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("algo: ppo\nenv: CartPole-v1\nconfig:\n  policy.learn.lr: 0.003\n"
                    "  env: {n_envs: 4}\n")
    spec = load_train_config(str(path))
    assert spec["algo"] == "ppo" and spec["env"] == "CartPole-v1" and spec["name"] is None
    assert sorted(spec["overrides"]) == ["env.n_envs=4", "policy.learn.lr=0.003"]


@pytest.mark.parametrize("algo, entry", [("dqn", "cartpole-dqn"), ("sac", "pendulum-sac")])
def test_warm_up_stays_within_half_the_budget_and_the_replay(algo, entry):
    space, base = space_for(algo), get_entry(entry).resolve({})
    short = space.overrides({"learning_starts": 20_000}, base, budget=3000)
    assert short["replay.min_samples"] == short["policy.collect.random_collect_size"] == 1500
    small = space.overrides({"learning_starts": 20_000, "buffer_size": 10_000}, base, 100_000)
    assert small["replay.min_samples"] == 10_000  # learning could never start above it
