"""maskedgrid-dqn / maskedgrid-ppo through the CLI: with masks they solve the grid and
`rlpipe eval` (which hands masks to the eval face) gets the full return."""
import json

import pytest

from rlpipe.cli import main


def last_json(capsys):
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.parametrize("entry", ["maskedgrid-dqn", "maskedgrid-ppo"])
def test_masked_entries_solve_the_grid_and_eval_respects_masks(entry, tmp_path, capsys):
    run_dir = tmp_path / entry
    assert main(["train", entry, "--run-dir", str(run_dir), "--no-progress",
                 "--max-env-steps", "6000"]) == 0
    result = last_json(capsys)
    assert result["solved"] and result["best_eval_value"] >= 0.99
    assert main(["eval", str(run_dir), "--episodes", "4"]) == 0
    assert last_json(capsys)["mean_return"] == pytest.approx(1.0)


@pytest.mark.slow
def test_without_masks_ppo_does_visibly_worse_on_the_same_budget(tmp_path, capsys):
    # seeds 0-4 without masks: 3 reach 1.0 at some evaluation and 1 ends there (with masks all
    # 5 end at 1.0), so the bar counts the seeds of three that end solved
    solved = {True: 0, False: 0}
    for seed in range(3):
        for expose in (True, False):
            run_dir = tmp_path / f"{expose}-{seed}"
            assert main(["train", "maskedgrid-ppo", "--run-dir", str(run_dir), "--no-progress",
                         "--max-env-steps", "3000", "--seed", str(seed),
                         "--set", f"env.env_kwargs.expose_mask={expose}"]) == 0
            solved[expose] += last_json(capsys)["eval_value"] >= 0.99
    assert solved[True] == 3 and solved[False] <= 1, solved


def test_config_switch_ignores_the_masks_and_a_mask_function_can_be_named(tmp_path, capsys):
    run_dir = tmp_path / "off"
    assert main(["train", "maskedgrid-dqn", "--run-dir", str(run_dir), "--no-progress",
                 "--max-env-steps", "300", "--set", "env.action_masks=False"]) == 0
    assert json.loads((run_dir / "config.json").read_text())["config"]["env"]["action_masks"] \
        is False
    capsys.readouterr()
    assert main(["train", "maskedgrid-dqn", "--run-dir", str(tmp_path / "fn"), "--no-progress",
                 "--max-env-steps", "300",
                 "--set", "env.action_mask_fn=tests.spaces.test_masks_env:only_left_if_even"]) != 0
    assert "shape [n_envs, n_actions]" in capsys.readouterr().err


@pytest.mark.parametrize("entry, policy_cls, key", [
    ("maskedgrid-dqn", "DQNPolicy", "next_action_mask"),
    ("maskedgrid-ppo", "PPOPolicy", "action_mask"),
])
def test_the_zoo_pipelines_hand_the_masks_to_the_learner(entry, policy_cls, key, tmp_path,
                                                         monkeypatch):
    import rlpipe.policies as policies

    cls = getattr(policies, policy_cls)
    learn, seen = cls._forward_learn, []

    def spy(self, batch):
        seen.append(set(batch))
        return learn(self, batch)

    monkeypatch.setattr(cls, "_forward_learn", spy)
    assert main(["train", entry, "--run-dir", str(tmp_path / "run"), "--no-progress",
                 "--max-env-steps", "600", "--set", "env.stop_value=2"]) == 0
    assert seen and all(key in keys for keys in seen)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["local", "ray"])
def test_masks_cross_the_exchange_of_a_distributed_run(backend, tmp_path, capsys, monkeypatch):
    # collectors in other processes (child processes or Ray actors) ship the masks with the
    # transitions; the learner's DQN target and the evaluator then use them as in one process
    if backend == "ray":
        pytest.importorskip("ray", reason='needs Ray: pip install "rlpipe[ray]"')
        monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "0")
    run_dir = tmp_path / backend
    assert main(["train", "maskedgrid-dqn", "--collectors", "1", "--backend", backend,
                 "--run-dir", str(run_dir), "--no-progress", "--max-env-steps", "6000"]) == 0
    assert last_json(capsys)["solved"]
    assert main(["eval", str(run_dir), "--episodes", "4"]) == 0
    assert last_json(capsys)["mean_return"] == pytest.approx(1.0)
