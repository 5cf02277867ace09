"""The end of a run, through the CLI: the final weights are evaluated and reported, a human
summary on stderr and a strict JSON line last on stdout, each log line once, one env step per
evaluation in log.txt, metrics.jsonl and TensorBoard, the run folder in the Ctrl-C message."""
import json
import logging
import math
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rlpipe.middleware import load_checkpoint, read_metrics
from rlpipe.runs.create import attach_log_file
from rlpipe.pipelines.tail import format_summary, json_summary

ROOT = Path(__file__).resolve().parents[2]
EVAL_LINE = re.compile(r"(final eval|eval) at train_iter (\d+), env_step (\d+): mean return "
                       r"(-?[\d.]+)")
LATE_EVAL = ["--set", "policy.eval.evaluator.eval_freq=100000"]  # only the first and the final


def _cli_cmd(*args):
    return [sys.executable, "-m", "rlpipe.cli", *args]


def _env():
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def _cli(*args):
    return subprocess.run(_cli_cmd(*args), capture_output=True, text=True, env=_env(),
                          timeout=240)


def _strict_json(line):
    def refuse(constant):
        raise AssertionError(f"not strict JSON: {constant} in {line}")
    return json.loads(line, parse_constant=refuse)


def _evaluations(run_dir):
    """(kind, train_iter, env_step, mean return) of each eval line of log.txt."""
    text = (Path(run_dir) / "log.txt").read_text()
    return [(m[1], int(m[2]), int(m[3]), float(m[4])) for m in EVAL_LINE.finditer(text)]


def _assert_one_step_per_evaluation(run_dir, evals, every_one=True):
    """Each evaluation of the metrics file and TensorBoard is in log.txt at the same env step.
    `every_one` False: two evaluations that reached the learner in one iteration (an evaluator
    process's) share its row, which holds the later one."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    rows = [(r["env_step"], round(r["eval/return_mean"], 2)) for r in read_metrics(run_dir)
            if "eval/return_mean" in r]
    logged = [(step, value) for _, _, step, value in evals]
    if every_one:
        assert rows == logged
    else:
        assert set(rows) <= set(logged) and rows[-1] == logged[-1]
        assert sorted({step for step, _ in rows}) == sorted({step for step, _ in logged})
    board = EventAccumulator(str(Path(run_dir) / "tb"))
    board.Reload()
    tb = [(e.step, round(e.value, 2)) for e in board.Scalars("eval/return_mean")]
    assert tb == rows


def _assert_no_line_twice(run_dir):
    # drop the timestamp: the same message twice is a duplicated handler, whatever the time
    messages = [line.split(" ", 2)[2] for line in
                (Path(run_dir) / "log.txt").read_text().splitlines()]
    assert len(messages) == len(set(messages)), messages


def test_final_weights_are_evaluated_and_summarised(tmp_path):
    run_dir = tmp_path / "run"
    done = _cli("train", "cartpole-dqn", "--max-env-steps", "1500", "--no-progress",
                "--run-dir", str(run_dir), *LATE_EVAL)
    assert done.returncode == 0, done.stderr
    summary = _strict_json(done.stdout.strip().splitlines()[-1])
    # the eval_freq is far beyond the budget: before, the summary reported the untrained policy
    assert summary["train_iter"] > 0 and summary["final_eval_iter"] == summary["train_iter"]
    evals = _evaluations(run_dir)
    assert evals[0][:2] == ("eval", 0)
    assert evals[-1] == ("final eval", summary["train_iter"], summary["env_step"],
                         summary["eval_value"])
    assert summary["best_eval_value"] == max(e[3] for e in evals)
    _assert_one_step_per_evaluation(run_dir, evals)
    _assert_no_line_twice(run_dir)
    best = load_checkpoint(str(run_dir), which="best")["meta"]["eval_value"]
    assert best == summary["best_eval_value"]
    assert load_checkpoint(str(run_dir), which="latest")["meta"]["eval_value"] == \
        summary["eval_value"]  # final.pt carries the final evaluation
    err = done.stderr
    assert f"cartpole-dqn: run folder {run_dir}" in err  # at the start
    assert "run ended: budget reached (max_env_step=1500, rounded up to 1504 env steps: whole " \
           "vector steps of 8 envs)" in err
    assert f"final eval return {summary['eval_value']:.2f} (at train_iter " \
           f"{summary['train_iter']})" in err
    assert "profile:" in err and "FinalEvaluation" in err and "OffPolicyLearner" in err
    assert f"evaluate it: rlpipe eval {run_dir}" in err
    assert "run ended" not in done.stdout  # stdout: only the JSON line


def test_a_resumed_runs_best_covers_the_sessions_before(tmp_path):
    run_dir = tmp_path / "run"
    first = _cli("train", "cartpole-dqn", "--max-env-steps", "1000", "--no-progress",
                 "--run-dir", str(run_dir), "--set", "ckpt.train_freq=16")
    assert first.returncode == 0, first.stderr
    before = _strict_json(first.stdout.strip().splitlines()[-1])["best_eval_value"]
    again = _cli("train", "--resume", str(run_dir), "--max-env-steps", "1300", "--no-progress")
    assert again.returncode == 0, again.stderr
    summary = _strict_json(again.stdout.strip().splitlines()[-1])
    assert summary["best_eval_value"] >= before
    assert summary["best_eval_value"] == load_checkpoint(str(run_dir), which="best")["meta"][
        "eval_value"]


@pytest.mark.slow  # 8-16 s on two busy cores
def test_local_backend_run_reports_the_evaluator_processes_final_evaluation(tmp_path):
    run_dir = tmp_path / "run"
    done = _cli("train", "cartpole-dqn", "--async", "--max-env-steps", "1500", "--no-progress",
                "--run-dir", str(run_dir), *LATE_EVAL)
    assert done.returncode == 0, done.stderr
    summary = _strict_json(done.stdout.strip().splitlines()[-1])
    assert summary["train_iter"] > 0 and summary["final_eval_iter"] == summary["train_iter"]
    evals = _evaluations(run_dir)
    # printed once, by the learner, with its env steps (the evaluator process logs none);
    # which weights the evaluator process gets first depends on timing (even the last ones:
    # then no final request is needed)
    iters = [e[1] for e in evals]
    assert iters == sorted(set(iters))
    assert evals[-1][1:] == (summary["train_iter"], summary["env_step"], summary["eval_value"])
    assert len(EVAL_LINE.findall(done.stderr)) == len(evals)
    _assert_one_step_per_evaluation(run_dir, evals, every_one=False)
    _assert_no_line_twice(run_dir)
    assert "did not stop" not in done.stderr


def _signal_a_training_run(run_dir, signum):
    """`rlpipe train cartpole-dqn` sent `signum` once it has trained: (exit code, out, err)."""
    proc = subprocess.Popen(_cli_cmd("train", "cartpole-dqn", "--max-env-steps", "1000000",
                                     "--no-progress", "--run-dir", str(run_dir), *LATE_EVAL),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
    try:
        deadline = time.monotonic() + 120
        metrics = run_dir / "metrics.jsonl"
        while not (metrics.exists() and any(r["train_iter"] > 0 for r in read_metrics(run_dir))):
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.2)
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, out, err


@pytest.mark.slow  # 8-16 s on two busy cores
def test_ctrl_c_names_the_run_folder_and_summarises_the_final_weights(tmp_path):
    run_dir = tmp_path / "run"
    code, out, err = _signal_a_training_run(run_dir, signal.SIGINT)
    assert code == 130, err
    assert f"the run folder {run_dir} holds a final checkpoint" in err
    assert f"--resume {run_dir}`" in err and "RUN_DIR" not in err
    assert "run ended: stopped by SIGINT" in err
    assert "the run ended after iteration" in (run_dir / "log.txt").read_text()
    summary = _strict_json(out.strip().splitlines()[-1])
    assert summary["train_iter"] > 0 and summary["final_eval_iter"] == summary["train_iter"]


@pytest.mark.slow  # 8-16 s on two busy cores
def test_sigterm_checkpoints_without_a_final_evaluation(tmp_path):
    # a scheduler's SIGTERM is followed by SIGKILL after its grace period: the final checkpoint
    # is written without first evaluating the final weights, and the summary says whose
    # return it reports
    run_dir = tmp_path / "run"
    code, out, err = _signal_a_training_run(run_dir, signal.SIGTERM)
    assert code == 143, err
    assert "without a final evaluation" in err and "run ended: stopped by SIGTERM" in err
    assert f"the run folder {run_dir} holds a final checkpoint" in err
    summary = _strict_json(out.strip().splitlines()[-1])
    assert summary["final_eval_iter"] == 0 < summary["train_iter"]  # the first evaluation only
    assert "last eval (not of the final weights) return" in err
    assert not [e for e in _evaluations(run_dir) if e[0] == "final eval"]
    final = load_checkpoint(str(run_dir), which="final")
    assert final["meta"]["train_iter"] == summary["train_iter"]


def test_json_summary_is_strict_without_any_evaluation():
    result = {"eval_value": -math.inf, "best_eval_value": None, "final_eval_iter": -1,
              "solved": False, "env_step": 0, "train_iter": 0, "wall_time": 0.5,
              "run_dir": None, "profile": None}
    line = json.dumps(json_summary(result), allow_nan=False)
    assert _strict_json(line)["eval_value"] is None
    text = format_summary(result)
    assert "final eval return none" in text and "best none" in text
    assert "rlpipe eval" not in text  # no folder, nothing to evaluate


def test_summary_says_solved_or_stopped():
    result = {"eval_value": 480.0, "best_eval_value": 500.0, "final_eval_iter": 9,
              "solved": True, "stop_value": 475, "env_step": 10, "train_iter": 9,
              "wall_time": 2.0, "run_dir": "runs/x/1"}
    assert format_summary(result).startswith("run ended: solved: best eval return reached "
                                             "stop_value 475")
    assert format_summary(result, "SIGTERM").startswith("run ended: stopped by SIGTERM")
    pruned = {**result, "solved": False, "ended_by": "pruned by tune at evaluation 3"}
    assert format_summary(pruned).startswith("run ended: pruned by tune at evaluation 3\n")


def test_a_run_folders_log_is_attached_once_per_process(tmp_path):
    logger = logging.getLogger("rlpipe")
    first = attach_log_file(str(tmp_path))
    second = attach_log_file(str(tmp_path))  # the local backend's learner, in the same process
    try:
        assert first is not None and second is None
        logging.getLogger("rlpipe.test").warning("written once")
    finally:
        logger.removeHandler(first)
        first.close()
    assert (tmp_path / "log.txt").read_text().count("written once") == 1


def test_a_ray_learner_without_a_console_gets_one(tmp_path):
    from rlpipe.pipelines.distributed import _has_console

    logger = logging.getLogger("rlpipe.test.console")
    parent = logging.getLogger("rlpipe.test")
    parent.propagate = False  # as in a Ray actor: no handler anywhere up the chain
    file_only = logging.FileHandler(tmp_path / "log.txt")
    try:
        parent.addHandler(file_only)
        assert not _has_console(logger)  # log.txt is no console
        console = logging.StreamHandler()
        parent.addHandler(console)
        assert _has_console(logger)
        parent.removeHandler(console)
    finally:
        parent.removeHandler(file_only)
        file_only.close()
        parent.propagate = True


def test_log_reads_in_time_order_and_eval_reports_the_checkpoints_counters(tmp_path, capsys):
    from rlpipe.cli import main

    run_dir = tmp_path / "run"
    # evaluations every 100 train iterations: the last iteration (train_iter 512 -> 640) has a
    # periodic evaluation of the weights of 512 and then the final one of 640
    assert main(["train", "cartpole-dqn", "--max-env-steps", "2048", "--no-progress",
                 "--run-dir", str(run_dir), "--set", "policy.eval.evaluator.eval_freq=100"]) == 0
    evals = _evaluations(run_dir)
    iters = [train_iter for _, train_iter, _, _ in evals]
    assert len(iters) > 2 and iters == sorted(iters)
    assert [kind for kind, *_ in evals].count("final eval") == 1 and evals[-1][0] == "final eval"
    _assert_one_step_per_evaluation(run_dir, evals)
    capsys.readouterr()
    for which in ("best", "final"):
        meta = load_checkpoint(str(run_dir), which=which)["meta"]
        target = run_dir / "ckpt" / f"{which}.pt"
        assert main(["eval", str(target), "--episodes", "1"]) == 0
        result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        assert (result["train_iter"], result["env_step"]) == (meta["train_iter"],
                                                              meta["env_step"])
        assert result["env_step"] > 0


def test_summary_names_lost_collectors_and_those_back():
    result = {"eval_value": 20.0, "best_eval_value": 30.0, "final_eval_iter": 9, "env_step": 10,
              "train_iter": 9, "wall_time": 2.0, "run_dir": None}
    assert "lost" not in format_summary(result)
    lines = format_summary({**result, "lost": ["collector 1", "collector 2"],
                            "back": ["collector 2"]}).splitlines()
    assert "lost: collector 1, collector 2 (back: collector 2)" in lines
    lines = format_summary({**result, "lost": ["collector 1"], "back": []}).splitlines()
    assert "lost: collector 1 (not back)" in lines
