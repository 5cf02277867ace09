"""The hub of a distributed run and its links, in one process (no Ray); launch() without Ray."""
import subprocess
import sys
import threading
import time

import pytest

from rlpipe.engine import Role
from rlpipe.engine import parallel


@pytest.fixture
def links():
    learner, collectors, evaluator, close = parallel.local_links(collectors=2, evaluator=True,
                                                                 queue_size=2)
    yield learner, collectors, evaluator
    close()


def test_link_roles_and_names(links):
    learner, (c0, c1), evaluator = links
    assert learner.roles == {Role.LEARNER} and c1.roles == {Role.COLLECTOR}
    assert (c1.name, c1.index, evaluator.name) == ("collector 1", 1, "evaluator")
    alone, _, none, close = parallel.local_links(collectors=1)
    assert alone.roles == {Role.LEARNER, Role.EVALUATOR} and none is None
    close()
    assert parallel.link() is None  # this process was not started by launch()


def test_push_counts_and_pop_takes_in_order(links):
    learner, (c0, c1), _ = links
    assert c0.push("q", ["a"], {"env_step": 3}) and c1.push("q", ["b"], {"env_step": 4})
    assert learner.pop("q", max_items=1) == ["a"]
    assert learner.pop("q") == ["b"] and learner.pop("q") == []
    assert learner.state()["counters"] == {"env_step": 7}
    assert learner.add({"env_step": 1, "episodes": 2}) == {"env_step": 8, "episodes": 2}


def test_a_full_queue_makes_the_producer_wait_until_the_consumer_takes(links):
    learner, (c0, _), _ = links
    assert c0.push("q", [1]) and c0.push("q", [2])  # bound 2: full now
    done = []
    producer = threading.Thread(target=lambda: done.append(c0.push("q", [3])))
    producer.start()
    time.sleep(0.2)
    assert not done and learner.state()["queues"]["q"] == 2
    assert learner.pop("q", max_items=1) == [1]
    producer.join(timeout=5)
    assert done == [True] and learner.pop("q") == [2, 3]
    assert c0.push("q", [4], bound=1) and not c0.push("q", [5], bound=1, timeout=0.05)


def test_pop_waits_for_an_item_and_finish_wakes_every_waiter(links):
    learner, (c0, _), evaluator = links
    got = []
    consumer = threading.Thread(target=lambda: got.append(learner.pop("q", None, None)))
    consumer.start()
    time.sleep(0.1)
    c0.push("q", ["x"])
    consumer.join(timeout=5)
    assert got == [["x"]]
    waiters = [threading.Thread(target=lambda: got.append(learner.pop("q", None, None))),
               threading.Thread(target=lambda: got.append(evaluator.poll("w", 0, None).finished))]
    for w in waiters:
        w.start()
    time.sleep(0.1)
    c0.finish()
    for w in waiters:
        w.join(timeout=5)
    assert sorted(map(str, got[1:])) == ["True", "[]"]
    assert not c0.push("q", ["late"]) and learner.pop("q") == [] and learner.finished


def test_blobs_are_versioned_and_poll_returns_only_newer_ones(links):
    learner, (c0, _), evaluator = links
    first = c0.poll("weights")
    assert (first.version, first.value, first.finished) == (0, None, False)
    assert learner.publish("weights", {"w": 1}, {"train_iter": 5}) == 1
    assert learner.publish("weights", {"w": 2}, {"train_iter": 9}) == 2
    update = c0.poll("weights", have=0)
    assert (update.version, update.value, update.info) == (2, {"w": 2}, {"train_iter": 9})
    assert c0.poll("weights", have=2).value is None
    waiting = []
    t = threading.Thread(target=lambda: waiting.append(evaluator.poll("weights", 2, None)))
    t.start()
    time.sleep(0.1)
    learner.publish("weights", {"w": 3})
    t.join(timeout=5)
    assert waiting[0].version == 3 and waiting[0].value == {"w": 3}
    assert evaluator.poll("weights", 3, timeout=0.05).value is None


def test_hub_counts_restarts_by_process():
    import asyncio

    hub = parallel.Hub()
    asyncio.run(hub.note_restart("collector 1"))
    assert asyncio.run(hub.note_restart("collector 1")) == 2
    state = asyncio.run(hub.state())
    assert state["restarts"] == 2 and state["restarted"] == {"collector 1": 2}
    with pytest.raises(ValueError, match="queue_size"):
        parallel.Hub(queue_size=0)


def test_launch_checks_its_arguments():
    with pytest.raises(ValueError, match="collectors"):
        parallel.launch(print, collectors=0)  # 0 collectors only beside an evaluator process
    with pytest.raises(ValueError, match="collectors"):
        parallel.launch(print, collectors=-1, evaluator=True)
    with pytest.raises(TypeError, match="callable"):
        parallel.launch("main", collectors=1)


def test_without_ray_the_module_imports_and_launch_names_the_pip_command():
    code = (
        "import sys; sys.modules['ray'] = None\n"
        "from rlpipe.engine import parallel\n"
        "try:\n"
        "    parallel.launch(print, collectors=2)\n"
        "except parallel.RayNotInstalledError as err:\n"
        "    print(err)\n"
        "try:\n"
        "    parallel.require_ray()\n"
        "except ImportError as err:\n"
        "    print(err)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 2 and all('pip install "rlpipe[ray]"' in line for line in lines)


def test_placements_name_processes_of_the_run_only():
    from rlpipe.engine._ray import _placements

    placed = _placements(2, True, {"collector 1": "worker_node", "evaluator": "head_node"})
    assert placed == {"collector 1": {"resources": {"worker_node": 0.001}},
                      "evaluator": {"resources": {"head_node": 0.001}}}
    with pytest.raises(ValueError, match=r"'collector 2', which is no process of this run"):
        _placements(2, False, {"collector 2": "worker_node"})
    with pytest.raises(ValueError, match="'evaluator', which is no process"):
        _placements(1, False, {"evaluator": "head_node"})
    with pytest.raises(ValueError, match="name of a custom resource"):
        _placements(1, False, {"collector 0": ""})
    with pytest.raises(ValueError, match="backend='local'"):
        parallel.launch(print, collectors=1, backend="local", resources={"collector 0": "x"})
