import json
import subprocess
import sys

import pytest

from rlpipe.cli import main

FAST = ["--set", "policy.collect.random_collect_size=200", "--set", "replay.min_samples=200",
        "--set", "policy.eval.evaluator.n_episode=2", "--set", "policy.eval.evaluator.eval_freq=100"]


def test_list_prints_entries(capsys):
    assert main(["list"]) == 0
    assert "cartpole-dqn" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["train", "no-such-entry"], "unknown zoo entry 'no-such-entry'"),
    (["train", "cartpole-dqn", "--set", "policy.learn.lrr=1"], "policy.learn.lrr"),
    (["train", "cartpole-dqn", "--set", "novalue"], "key.path=value"),
    (["train", "cartpole-dqn", "--max-env-steps", "0"], "--max-env-steps"),
    (["eval", "/no/such/run"], "does not exist"),
])
def test_bad_input_exits_2_with_a_one_line_reason(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_train_writes_a_run_folder_and_eval_reads_it(tmp_path, capsys):
    run_dir = tmp_path / "run"
    code = main(["train", "cartpole-dqn", "--max-env-steps", "1024", "--run-dir", str(run_dir),
                 "--no-progress", *FAST])
    assert code == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["env_step"] >= 1024 and summary["run_dir"] == str(run_dir)
    for name in ("config.json", "metrics.jsonl", "log.txt", "ckpt/final.pt", "ckpt/latest.json"):
        assert (run_dir / name).exists(), name
    assert list((run_dir / "tb").iterdir())
    assert main(["eval", str(run_dir), "--episodes", "3"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["entry"] == "cartpole-dqn" and result["episodes"] == 3
    assert 8 <= result["mean_return"] <= 500


def test_console_script_runs():
    out = subprocess.run([sys.executable, "-m", "rlpipe.cli", "list"], capture_output=True,
                         text=True, check=True).stdout
    assert "acrobot-dqn" in out


def test_version_prints_the_package_version(capsys):
    import rlpipe

    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == f"rlpipe {rlpipe.__version__}"


def test_list_shows_whole_first_sentences(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.startswith("cartpole-dqn"))
    assert line.rstrip().endswith("within 50k env steps.")  # the sentence runs onto a 2nd line
    pong = next(ln for ln in out.splitlines() if ln.startswith("pong-dqn"))
    assert pong.count("(") == pong.count(")")
    from rlpipe.zoo.generic import trainable_names

    assert f"--algo {{{','.join(trainable_names('online'))}}} --env ENV" in out
    assert f"--algo {{{','.join(trainable_names('offline'))}}} --dataset ID" in out
    assert "ppo," in out and "bc," in out.split("--dataset")[0].splitlines()[-1]


def test_first_sentence_joins_lines_and_stops_at_the_full_stop():
    from rlpipe.cli import first_sentence

    assert first_sentence("DQN on X: solves\n(it) in 5k steps. More here.\n\nDetails.") == \
        "DQN on X: solves (it) in 5k steps."
    assert first_sentence("No full stop\nat all\n\nnext paragraph.") == "No full stop at all"
    assert first_sentence("As in Yu et al. 2022, e.g. the critic. Then more.") == \
        "As in Yu et al. 2022, e.g. the critic."


def test_list_reads_no_torch_and_no_env_packages():
    """`rlpipe list` prints names and docstrings: it imports neither torch nor gymnasium (a
    first command should answer at once)."""
    script = ("import sys\nfrom rlpipe.cli import main\nassert main(['list']) == 0\n"
              "print(sorted(m for m in ('torch', 'gymnasium', 'pettingzoo') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True).stdout
    assert "cartpole-dqn" in out and out.strip().splitlines()[-1] == "[]"


def test_list_aligns_descriptions_after_the_longest_name_and_keeps_et_al(capsys):
    from rlpipe.zoo import list_entries

    assert main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()[:len(list_entries())]
    longest = max(list_entries(), key=len)
    starts = {len(ln) - len(ln.split(maxsplit=1)[1]) for ln in lines}
    assert starts == {len(longest) + 2}  # one column, two spaces after the longest name
    ippo = next(ln for ln in lines if ln.startswith("simple-spread-ippo "))
    assert "(de Witt et al. 2020; parameters shared, with an agent id)." in ippo


def test_list_prints_the_registry_s_algorithms():
    """`rlpipe list` names the algorithms from a table (it does not import the policies);
    the table matches the policy registry's trainable ones and their pipelines."""
    from rlpipe.policies import get_policy
    from rlpipe.zoo.generic import trainable_names
    from rlpipe.zoo.registry import BUILT_IN_PIPELINES, listed_algorithms

    assert sorted(BUILT_IN_PIPELINES) == sorted(trainable_names())
    assert {n: get_policy(n).pipeline for n in BUILT_IN_PIPELINES} == BUILT_IN_PIPELINES
    for source in ("online", "offline"):
        assert listed_algorithms(source) == trainable_names(source)


def test_config_prints_every_key_with_its_meaning(capsys):
    assert main(["config", "pendulum-sac", "--set", "policy.learn.actor_lr=5e-4"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("# pendulum-sac")
    body = {ln.split("=")[0].strip(): ln for ln in lines[1:] if not ln.startswith("#")}
    assert "0.0005" in body["policy.learn.actor_lr"]
    assert "-200" in body["env.stop_value"]
    assert all("  # " in ln for ln in body.values()), [k for k, ln in body.items() if "#" not in ln]
    assert "Adam learning rate of the actor" in body["policy.learn.actor_lr"]


def test_config_of_an_unknown_entry_is_a_one_line_error(capsys):
    assert main(["config", "cartpole-dqm"]) == 2
    err = capsys.readouterr().err.strip()
    assert "cartpole-dqn" in err and len(err.splitlines()) == 1
