"""`rlpipe train --collectors 2 --evaluator` on two Ray nodes of this machine: a node lost mid-run
and joining again.

Collector 1 is placed on the second node by a custom resource (`parallel.resources`), collector
0 and the evaluator on the head. The second node's processes are killed by pid mid-run: the run
goes on with collector 0 (one warning line in log.txt, `collect/lost_workers` 1 and
`collect/workers` 1 in metrics.jsonl); a fresh node with the same resource is started: Ray
re-creates collector 1 there, whose samples reach the learner again (`collect/workers` 2). The
driver is then stopped with SIGINT: it exits 130 and its summary names the lost collector and
that it came back. With its only collector on the second node, the run stops when that node is
lost: the final checkpoint is written, and the summary says why and how to resume. No process of
the test's cluster is left.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Tuple

import pytest

from rlpipe.middleware import load_checkpoint

from .nodes import Node, alive, free_port, processes

pytest.importorskip("ray")
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
PLACES = "{'collector 0': 'head_node', 'collector 1': 'worker_node', 'evaluator': 'head_node'}"
SETTINGS = ["policy.learn.update_per_collect=8", "policy.collect.n_sample=64",
            "policy.collect.random_collect_size=256", "replay.min_samples=256",
            "policy.eval.evaluator.n_episode=2", "policy.eval.evaluator.eval_freq=64",
            "policy.model.hidden=(32, 32)", "env.stop_value=1e9"]
LOST = "lost 1 collector(s) (collector 1)"
PATIENCE_S = 300  # the most each step may take: Ray starts slowly on a loaded 2-core machine
BACK = "collector(s) back: collector 1"


def wait_for(what: str, check: Callable[[], bool], log: Path, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + PATIENCE_S
    while not check():
        tail = log.read_text()[-3000:] if log.exists() else "(no log)"
        assert proc.poll() is None, f"{what}: the run ended (rc {proc.returncode}); log:\n{tail}"
        assert time.monotonic() < deadline, f"{what}: not within {PATIENCE_S} s; log:\n{tail}"
        time.sleep(0.3)


def rows(run_dir: Path) -> List[Dict[str, Any]]:
    """The rows of metrics.jsonl that count collectors (evaluation rows do not)."""
    path = run_dir / "metrics.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return [row for row in map(json.loads, filter(str.strip, lines))
            if "collect/workers" in row]


@contextmanager
def two_nodes(tmp_path: Path
              ) -> Iterator[Tuple[List[Node], Callable[[], Node], Dict[str, str], int]]:
    """A head node (3 CPUs, resource `head_node`) and a second node (1 CPU, `worker_node`):
    yields the nodes, a function that starts another second node, the env and the head's port;
    stops every node by pid at the end and checks that none of their processes is left."""
    port = free_port()
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0", RAY_AUTH_MODE="token",
               RAY_AUTH_TOKEN=secrets.token_hex(32), PYTHONPATH=str(ROOT))
    ray_bin = str(Path(sys.executable).with_name("ray"))
    temp = [Path(f"/tmp/rlpipe-ln-{port}-{i}") for i in (0, 1, 2)]  # short: socket paths
    for t in temp:
        t.mkdir()
    nodes: List[Node] = []
    left: List[int] = []

    def second_node() -> Node:
        nodes.append(Node(ray_bin, env, str(temp[len(nodes)]), port, head=False,
                          resources='{"worker_node": 1}'))
        return nodes[-1]

    try:
        # the head holds the learner, collector 0 and the evaluator (1 CPU each)
        nodes.append(Node(ray_bin, env, str(temp[0]), port, head=True, num_cpus=3,
                          resources='{"head_node": 1}'))
        nodes[0].wait_listening(port)
        second_node()
        yield nodes, second_node, env, port
    finally:
        ours: Dict[int, str] = {}
        for node in nodes:
            ours.update(node.kill())
        left = alive(ours) + [p for p, (_, cmd) in processes().items()
                              if any(str(t) in cmd for t in temp)]
        for t in temp:
            shutil.rmtree(t, ignore_errors=True)
    assert not left, f"processes of this test's cluster left: {left}"


def train(run_dir: Path, port: int, env: Dict[str, str], collectors: int,
          places: str) -> subprocess.Popen:
    sets = [a for s in SETTINGS + [f"parallel.resources={places}"] for a in ("--set", s)]
    return subprocess.Popen(
        [sys.executable, "-m", "rlpipe.cli", "train", "cartpole-dqn", "--collectors",
         str(collectors), "--evaluator", "--ray-address", f"127.0.0.1:{port}", "--run-dir",
         str(run_dir), "--max-env-steps", "100000000", "--no-progress", *sets],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=run_dir.parent)


def stopped(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.communicate()


def test_a_lost_node_s_collector_is_counted_lost_and_comes_back(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    log = run_dir / "log.txt"
    with two_nodes(tmp_path) as (nodes, second_node, env, port):
        proc = train(run_dir, port, env, 2, PLACES)
        try:
            wait_for("collector 1's samples", lambda: log.exists() and
                     "first samples from collector collector_1" in log.read_text(), log,
                     proc)
            assert any("Collector" in cmd for cmd in nodes[1].snapshot().values()), \
                "collector 1 is not a process of the second node"

            nodes[1].kill()  # the second node dies mid-run
            wait_for("the lost collector's warning", lambda: LOST in log.read_text(), log,
                     proc)
            lost_at = rows(run_dir)[-1]
            wait_for("training on collector 0 alone", lambda: any(
                r.get("collect/lost_workers") == 1 and r["collect/workers"] == 1
                and r["collect/samples_from/collector_0"]
                > lost_at["collect/samples_from/collector_0"] for r in rows(run_dir)), log,
                proc)

            back = second_node()  # the node joins again
            wait_for("collector 1 back", lambda: BACK in log.read_text(), log, proc)
            wait_for("collector 1's samples after its return", lambda: any(
                r["collect/workers"] == 2 and r.get("collect/samples_from/collector_1", 0)
                > lost_at["collect/samples_from/collector_1"] for r in rows(run_dir)), log,
                proc)
            assert any("Collector" in cmd for cmd in back.snapshot().values()), \
                "collector 1 was not re-created on the new node"

            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=PATIENCE_S)
        finally:
            stopped(proc)
    assert proc.returncode == 130, err[-3000:]
    text = log.read_text()
    assert text.count(LOST) == 1 and text.count(BACK) == 1
    # once every process has shown it runs, none is said to be "not started" (under load a
    # slow start may rightly be warned about before that)
    up = max(text.index(mark) for mark in ("first samples from collector collector_0",
                                           "first samples from collector collector_1",
                                           "evaluator process)"))
    assert "not started after" not in text[up:]
    assert "lost: collector 1 (back: collector 1)" in err.splitlines()
    last = rows(run_dir)[-1]
    assert last["collect/lost_workers"] == 1 and last["collect/workers"] == 2


def test_a_run_whose_every_collector_is_lost_stops_resumable(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    log = run_dir / "log.txt"
    with two_nodes(tmp_path) as (nodes, _, env, port):
        proc = train(run_dir, port, env, 1,
                     "{'collector 0': 'worker_node', 'evaluator': 'head_node'}")
        try:
            wait_for("collector 0's samples", lambda: log.exists() and
                     "first samples from collector collector_0" in log.read_text(), log,
                     proc)
            nodes[1].kill()  # the node of the only collector dies
            out, err = proc.communicate(timeout=PATIENCE_S)
        finally:
            stopped(proc)
    assert proc.returncode == 0, err[-3000:]
    text = log.read_text()
    assert text.count("every collector is lost (collector 0)") == 1
    assert (f"run ended: every collector lost (collector 0); resume with `rlpipe train --resume "
            f"{run_dir}`") in err.splitlines()
    final = load_checkpoint(str(run_dir), which="final")["meta"]["env_step"]
    assert final == json.loads(out.strip().splitlines()[-1])["env_step"] > 0
