"""Mains for the local-backend tests (module level, so a spawned child can import them)."""
import os
import signal

from rlpipe.engine import Role, parallel, task


def count_items(n_items):
    """Each collector pushes `n_items` numbers; the learner pops them all and returns them with
    what it saw of the run."""
    link = parallel.link()
    if link.role is Role.COLLECTOR:
        for i in range(n_items):
            link.push("numbers", [(link.index, i)], {"pushed": 1})
        return None
    if link.role is Role.EVALUATOR:
        return None
    got = []
    while len(got) < n_items * link.collectors:
        items = link.pop("numbers", None, 30.0)
        assert items, "nothing came: the run finished or 30 s passed"
        got.extend(items)
    return {"got": sorted(got), "roles": sorted(r.value for r in task.roles),
            "counters": link.state()["counters"], "pid": os.getpid()}


def collector_raises(_):
    link = parallel.link()
    if link.role is Role.COLLECTOR:
        raise ValueError("the collector's own error, with its traceback")
    link.pop("never", None, None)  # waits until the failed child finishes the run
    return "learner returned"


def collector_dies_once(_):
    """Collector 0 kills itself on its first start; the learner waits for a message from the
    restarted one and returns the hub's state."""
    link = parallel.link()
    if link.role is Role.COLLECTOR:
        link.push("hello", [(link.index, link.attempt)])
        if link.index == 0 and link.attempt == 0:
            os.kill(os.getpid(), signal.SIGKILL)
        link.poll("never", 0, None)
        return None
    seen = []
    while (0, 1) not in seen:
        items = link.pop("hello", None, 30.0)
        assert items, "nothing came: the run finished or 30 s passed"
        seen.extend(items)
    return {"seen": seen, "state": link.state()}


def report_niceness(_):
    link = parallel.link()
    if link.role is not Role.LEARNER:
        link.push("nice", [(link.name, os.nice(0))])
        return None
    got = []
    while len(got) < link.collectors + int(link.evaluator):
        items = link.pop("nice", None, 30.0)
        assert items, "nothing came: the run finished or 30 s passed"
        got.extend(items)
    return {"learner": os.nice(0), **dict(got)}
