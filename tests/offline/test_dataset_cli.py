"""`rlpipe dataset collect | list | info`, and replay rows chained back into episodes."""
import json

import numpy as np
import pytest

pytest.importorskip("minari")

from rlpipe.cli import main  # noqa: E402
from rlpipe.data import load_dataset  # noqa: E402
from rlpipe.data._chains import chronological, episodes_from_rows  # noqa: E402
from rlpipe.envs import EnvManager  # noqa: E402


def test_collect_random_then_list_and_info(minari_root, capsys):
    assert main(["dataset", "collect", "random", "--env", "CartPole-v1", "--episodes", "5",
                 "--id", "cartpole/random-v0", "--no-progress", "--n-envs", "2"]) == 0
    assert "cartpole/random-v0" in capsys.readouterr().out
    ds = load_dataset("cartpole/random-v0")
    assert ds.n_episodes == 5 and ds.rows(np.arange(len(ds)))["terminated"].sum() == 5
    assert main(["dataset", "list"]) == 0
    assert "cartpole/random-v0" in capsys.readouterr().out
    assert main(["dataset", "info", "cartpole/random-v0"]) == 0
    out = capsys.readouterr().out
    assert "episodes     5" in out and f"transitions  {len(ds)}" in out


def test_refusals_are_one_line(minari_root, capsys):
    args = ["dataset", "collect", "random", "--env", "Pendulum-v1", "--episodes", "1",
            "--id", "pendulum/r-v0", "--no-progress"]
    assert main(args + ["--eps", "0.1"]) == 2
    assert "use --noise" in capsys.readouterr().err
    assert main(args + ["--noise", "0.2"]) == 0
    capsys.readouterr()
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert "already exists" in err and "--overwrite" in err and "\n" not in err
    assert main(args + ["--overwrite"]) == 0
    assert main(["dataset", "info", "pendulum/none-v0"]) == 2
    err = capsys.readouterr().err.strip()
    assert "pendulum/r-v0" in err and str(minari_root) in err and "\n" not in err


def test_run_folder_and_replay_export(minari_root, tmp_path, capsys):
    run = tmp_path / "run"
    assert main(["train", "cartpole-dqn", "--max-env-steps", "600", "--run-dir", str(run),
                 "--no-progress", "--set", "policy.eval.evaluator.n_episode=2"]) == 0
    capsys.readouterr()
    assert main(["dataset", "collect", str(run), "--episodes", "4", "--eps", "0.3",
                 "--id", "cartpole/dqn-v0", "--no-progress"]) == 0
    assert "cartpole-dqn" in capsys.readouterr().out
    assert load_dataset("cartpole/dqn-v0").n_episodes == 4
    assert main(["dataset", "collect", "--from-replay", str(run), "--id", "cartpole/replay-v0"]) == 0
    assert "fragments" in capsys.readouterr().out
    replay = load_dataset("cartpole/replay-v0")
    assert len(replay) == json.loads((run / "ckpt" / "latest.json").read_text())["env_step"]


def _interleaved(n_envs, steps, seed=0):
    """Rows as data_pusher pushes them (step by step, env by env) and the true episodes."""
    env = EnvManager("CartPole-v1", n_envs=n_envs, seed=seed)
    rng = np.random.default_rng(seed)
    obs, rows, truth = env.reset(), [], [[] for _ in range(n_envs)]
    current = [[] for _ in range(n_envs)]
    for _ in range(steps):
        action = rng.integers(0, 2, n_envs)
        r = env.step(action)
        for i in range(n_envs):
            rows.append((obs[i], action[i], r.reward[i], r.next_obs[i], r.terminated[i], r.truncated[i]))
            current[i].append(len(rows) - 1)
            if r.terminated[i] or r.truncated[i]:
                truth[i].append(current[i])
                current[i] = []
        obs = r.obs
    env.close()
    keys = ("obs", "action", "reward", "next_obs", "terminated", "truncated")
    data = {k: np.asarray([row[j] for row in rows]) for j, k in enumerate(keys)}
    return data, [ep for eps in truth for ep in eps], [c for c in current if c]


def test_replay_rows_of_interleaved_envs_chain_back_into_their_episodes():
    data, finished, open_ = _interleaved(3, 120)
    episodes, fragments = episodes_from_rows(data, np.arange(len(data["reward"])), "test")
    assert fragments == len(open_) and len(episodes) == len(finished) + len(open_)
    got = sorted((e["observations"][:-1].tobytes(), e["actions"].tobytes(),
                  e["terminations"].tobytes()) for e in episodes)
    want = sorted((data["obs"][ep].tobytes(), data["action"][ep].tobytes(),
                   data["terminated"][ep].tobytes()) for ep in finished + open_)
    assert got == want
    for e in episodes:  # each chain is consistent: next obs is the following obs
        assert len(e["observations"]) == len(e["rewards"]) + 1
        assert e["terminations"][-1] or e["truncations"][-1]


def test_a_wrapped_ring_buffer_is_read_oldest_first():
    state = {"size": 5, "capacity": 5, "position": 2}
    assert chronological(state).tolist() == [2, 3, 4, 0, 1]
    assert chronological({"size": 3, "capacity": 5, "position": 3}).tolist() == [0, 1, 2]


def test_action_noise_is_epsilon_random_or_gaussian_in_half_ranges():
    import gymnasium as gym

    from rlpipe.tools._dataset_collect import Noise

    eps = Noise(gym.spaces.Discrete(4), eps=0.5, noise=0.0, seed=0)
    out = eps(np.zeros(4000, np.int64), None)
    assert 0.3 < (out != 0).mean() < 0.45  # half random, 3 of 4 random actions differ
    box = gym.spaces.Box(-2.0, 2.0, (1,), np.float32)
    gauss = Noise(box, eps=0.0, noise=0.1, seed=0)(np.zeros((4000, 1), np.float32), None)
    assert gauss.dtype == np.float32 and abs(gauss.std() - 0.2) < 0.02  # 0.1 half-ranges of 4
    wide = Noise(box, eps=0.0, noise=10.0, seed=0)(np.zeros((100, 1), np.float32), None)
    assert wide.min() >= -2.0 and wide.max() <= 2.0
    masked = Noise(gym.spaces.Discrete(3), eps=1.0, noise=0.0, seed=0)
    mask = np.array([[False, True, False]] * 50)
    assert (masked(np.zeros(50, np.int64), mask) == 1).all()


def test_collected_data_sets_repeat_at_the_same_seed_and_a_policy_must_take_the_masks():
    from rlpipe.tools._dataset_collect import Noise, collect

    def roll(seed):
        with EnvManager("CartPole-v1", n_envs=2, seed=seed) as env:
            return collect(env, None, 3, Noise(env.action_space, 0.0, 0.0, seed), progress=False)

    first, again, other = roll(0), roll(0), roll(1)
    assert [len(ep["rewards"]) for ep in first] == [len(ep["rewards"]) for ep in again]
    for a, b in zip(first, again):
        for key in a:
            np.testing.assert_array_equal(a[key], b[key])
    assert any(not np.array_equal(a["observations"], b["observations"])
               for a, b in zip(first, other))

    class MaskBlind:
        def forward(self, obs, **kwargs):
            return {"action": np.zeros(len(obs), np.int64)}

    with EnvManager("rlpipe/MaskedGrid-v0", n_envs=2, seed=0) as env:
        with pytest.raises(ValueError, match="does not take them"):
            collect(env, MaskBlind(), 2, Noise(env.action_space, 0.0, 0.0, 0), progress=False)


def test_a_recurrent_policy_collects_with_its_hidden_state():
    from rlpipe.tools._dataset_collect import Noise, collect
    from tests.recurrent.fakes import CountingPolicy, ForgetfulPolicy

    with EnvManager("rlpipe/RememberFirst-v0", n_envs=2, seed=0, mode="sync") as env:
        policy = CountingPolicy(env.observation_space, env.action_space)
        episodes = collect(env, policy.eval_mode, 10, Noise(env.action_space, 0.0, 0.0, 0),
                           progress=False)
        forgetful = ForgetfulPolicy(env.observation_space, env.action_space)
        guessed = collect(env, forgetful.eval_mode, 40, Noise(env.action_space, 0.0, 0.0, 0),
                          progress=False)
    # naming the first observation's cue at the last step needs the state carried per env
    assert [float(ep["rewards"].sum()) for ep in episodes] == [1.0] * 10
    assert 0.2 < np.mean([ep["rewards"].sum() for ep in guessed]) < 0.8
