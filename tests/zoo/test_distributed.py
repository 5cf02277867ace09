"""Distributed zoo runs on Ray: learning with 2 collectors, collector restarts, learner death and
--resume, Ctrl-C, and no Ray process left behind; clear errors without Ray."""
import importlib.util
import os
import signal
import subprocess
import sys
import time

import pytest

from rlpipe.engine import parallel
from rlpipe.middleware import load_checkpoint
from rlpipe.zoo import get_entry, list_entries
from rlpipe.training import resume, train
from rlpipe.pipelines.distributed import run_distributed
from rlpipe.runs.create import write_config

from . import distributed_mains
from ._waiting import wait_for_periodic_checkpoint

HAS_RAY = importlib.util.find_spec("ray") is not None
needs_ray = pytest.mark.skipif(not HAS_RAY, reason='needs Ray: pip install "rlpipe[ray]"')
SMALL = ["policy.collect.random_collect_size=256", "replay.min_samples=256",
         "policy.eval.evaluator.n_episode=2", "policy.eval.evaluator.eval_freq=64",
         "policy.learn.update_per_collect=16", "policy.model.hidden=(32, 32)",
         "env.stop_value=1e9", "ckpt.train_freq=32"]


def ray_processes(session, since):
    """(pid, name) of raylet / gcs_server / ray:: worker processes of `session` started at or
    after `since` (seconds since boot)."""
    tick = os.sysconf("SC_CLK_TCK")
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        started = int(stat[19]) / tick
        if int(stat[3]) == session and started >= since and (
                "raylet" in cmd or "gcs_server" in cmd or cmd.startswith("ray::")):
            found.append((int(pid), cmd[:60]))
    return found


def uptime():
    with open("/proc/uptime") as f:
        return float(f.read().split()[0])


def wait_until_gone(session, since, timeout=15.0):
    deadline = time.time() + timeout
    while ray_processes(session, since) and time.time() < deadline:
        time.sleep(0.5)
    return ray_processes(session, since)


@pytest.fixture(scope="module")
def ray_local():
    """One local Ray for this module's in-process runs (launch() uses it and leaves it up)."""
    import ray

    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    since = uptime() - 1
    ray.init(num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False,
             configure_logging=False, _system_config={"worker_niceness": 0})
    try:
        yield
    finally:
        ray.shutdown()
    assert wait_until_gone(os.getsid(0), since) == []


# ---- without Ray, and entries that cannot run distributed ----------------------------------

def test_collectors_without_ray_is_a_clear_error_with_the_pip_command():
    code = ("import sys; sys.modules['ray'] = None\n"
            "from rlpipe.cli import main\n"
            "sys.exit(main(['train', 'cartpole-dqn', '--collectors', '2', '--run-dir', sys.argv[1]]))")
    done = subprocess.run([sys.executable, "-c", code, "/tmp/never"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert 'pip install "rlpipe[ray]"' in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not os.path.exists("/tmp/never")


def test_bad_collector_counts_and_single_process_entries_are_refused(tmp_path):
    with pytest.raises(ValueError, match="--collectors"):
        train("cartpole-dqn", collectors=-1, run_dir=str(tmp_path / "a"))
    single = [n for n in list_entries() if "parallel" not in get_entry(n).resolve()]
    if single:
        with pytest.raises(ValueError, match="runs in one process only"):
            train(single[0], collectors=2, run_dir=str(tmp_path / "b"))


# ---- learning with 2 collectors ----------------------------------------------------------

@needs_ray
@pytest.mark.slow
def test_cartpole_dqn_solves_with_two_collectors(ray_local, tmp_path):
    started = time.time()
    result = train("cartpole-dqn", seed=2, collectors=2, run_dir=str(tmp_path / "run"),
                   progress=False)
    assert result["best_eval_value"] >= 475 and result["solved"], result  # eval_value: the final weights
    assert result["collectors"] == 2 and result["collector_restarts"] == 0
    assert result["env_step"] <= 50_000 + 2 * 256
    assert load_checkpoint(tmp_path / "run", which="final")["meta"]["env_step"] == result["env_step"]
    print(f"cartpole-dqn --collectors 2: solved at {result['env_step']} env steps, "
          f"{time.time() - started:.1f} s")


@needs_ray
@pytest.mark.slow
@pytest.mark.skipif("pendulum-sac" not in list_entries(), reason="pendulum-sac not in the zoo")
@pytest.mark.parametrize("evaluator", [False, True], ids=["", "evaluator"])
def test_pendulum_sac_solves_with_two_collectors(ray_local, tmp_path, evaluator):
    started = time.time()
    result = train("pendulum-sac", seed=0, collectors=2, evaluator=evaluator,
                   run_dir=str(tmp_path / "run"), progress=False)
    assert result["best_eval_value"] >= -200, result  # eval_value: the final weights
    assert result["collectors"] == 2 and result["env_step"] <= 20_000 + 2 * 32
    if evaluator:  # the evaluations came from the evaluator process
        assert "episodes, evaluator process)" in (tmp_path / "run" / "log.txt").read_text()
    print(f"pendulum-sac --collectors 2{' --evaluator' if evaluator else ''}: solved at "
          f"{result['env_step']} env steps, {time.time() - started:.1f} s")


# ---- faults -------------------------------------------------------------------------------

@needs_ray
@pytest.mark.slow
@pytest.mark.skipif("pendulum-sac" not in list_entries(), reason="pendulum-sac not in the zoo")
def test_a_killed_collector_is_restarted_and_the_run_reaches_its_goal(ray_local, tmp_path):
    entry = get_entry("pendulum-sac")
    cfg = entry.resolve({"parallel": {"collectors": 2}, "progress": False})
    cfg.run_dir = str(tmp_path / "run")
    result = run_distributed(entry.job(), cfg,
                             main=lambda j, c: distributed_mains.collector_dies_once(j, c, 1500))
    assert result["collector_restarts"] == 1
    assert result["best_eval_value"] >= -200, result  # eval_value: the final weights
    log = (tmp_path / "run" / "log.txt").read_text()
    assert "restarts in this run: 1 (collector 0: 1)" in log


@needs_ray
@pytest.mark.slow
def test_learner_death_stops_the_run_and_resume_continues(ray_local, tmp_path):
    run_dir = str(tmp_path / "run")
    entry = get_entry("cartpole-dqn")
    cfg = entry.resolve({"parallel": {"collectors": 2}, "progress": False,
                         "max_env_step": 200_000}, SMALL)
    cfg.run_dir = run_dir
    os.makedirs(run_dir)
    write_config(run_dir, entry.name, cfg)
    with pytest.raises(parallel.LearnerDiedError, match=f"--resume {run_dir}"):
        run_distributed(entry.job(), cfg,
                        main=lambda j, c: distributed_mains.learner_dies(j, c, 64))
    saved = load_checkpoint(run_dir, which="resumable")["meta"]["env_step"]
    result = resume(run_dir, max_env_step=saved + 1024, progress=False)
    assert result["collectors"] == 2
    assert saved < result["env_step"] <= saved + 1024 + 2 * 256


@needs_ray
@pytest.mark.slow
def test_ctrl_c_finishes_the_iteration_checkpoints_and_leaves_no_ray_process(tmp_path):
    run_dir = str(tmp_path / "run")
    cmd = [sys.executable, "-m", "rlpipe.cli", "train", "cartpole-dqn", "--collectors", "2",
           "--run-dir", run_dir, "--no-progress", "--max-env-steps", "200000"]
    for item in SMALL:
        cmd += ["--set", item]
    since = uptime() - 1
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True,
                            env={**os.environ, "RAY_USAGE_STATS_ENABLED": "0"})
    wait_for_periodic_checkpoint(proc, run_dir)
    assert ray_processes(proc.pid, since)  # the driver's session holds Ray's processes
    os.killpg(proc.pid, signal.SIGINT)  # as Ctrl-C in a terminal: the whole foreground group
    _, err = proc.communicate(timeout=90)
    assert proc.returncode == 130, err[-3000:]
    assert "--resume" in err
    assert load_checkpoint(run_dir, which="final")["resume"]
    assert wait_until_gone(proc.pid, since) == []
