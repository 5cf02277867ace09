"""launch(backend="local"): the learner here, collectors and an evaluator as child processes."""
import multiprocessing
import os

import pytest

from rlpipe.engine import parallel, task
from rlpipe.engine.parallel import ProcessFailedError

from . import local_mains


def children():
    return multiprocessing.active_children()


@pytest.mark.parametrize("start_method", ["fork", "spawn"])
def test_every_item_of_two_collectors_reaches_the_learner(start_method):
    result = parallel.launch(local_mains.count_items, collectors=2, backend="local",
                             args=(5,), start_method=start_method)
    assert result["got"] == [(c, i) for c in range(2) for i in range(5)]
    assert result["counters"]["pushed"] == 10
    assert result["pid"] == os.getpid()  # the learner ran in this process ...
    assert result["roles"] == ["evaluator", "learner"]  # ... and evaluated (no evaluator process)
    assert task.roles == frozenset() and parallel.link() is None  # both restored afterwards
    assert children() == []


def test_an_evaluator_process_takes_the_evaluator_role_off_the_learner():
    result = parallel.launch(local_mains.count_items, collectors=1, evaluator=True,
                             backend="local", args=(3,))
    assert result["roles"] == ["learner"]
    assert children() == []


def test_an_error_in_a_child_is_raised_here_with_the_childs_traceback():
    with pytest.raises(ProcessFailedError) as info:
        parallel.launch(local_mains.collector_raises, collectors=1, backend="local", args=(0,))
    text = str(info.value)
    assert "collector 0 raised" in text
    assert "ValueError: the collector's own error, with its traceback" in text
    assert "local_mains.py" in text
    assert children() == []


def test_a_killed_child_is_restarted_and_counted():
    result = parallel.launch(local_mains.collector_dies_once, collectors=2, backend="local",
                             args=(0,))
    assert (0, 0) in result["seen"] and (0, 1) in result["seen"]
    assert result["state"]["restarts"] == 1
    assert children() == []


def test_bad_backend_and_start_method_are_clear_errors():
    with pytest.raises(ValueError, match="backend='threads'.*'ray'.*'local'"):
        parallel.launch(local_mains.count_items, collectors=1, backend="threads", args=(1,))
    with pytest.raises(ValueError, match="start_method='forkserver'.*'fork' or 'spawn'"):
        parallel.launch(local_mains.count_items, collectors=1, backend="local", args=(1,),
                        start_method="forkserver")
    assert children() == []


def test_children_run_at_the_asked_lower_priority():
    result = parallel.launch(local_mains.report_niceness, collectors=1, evaluator=True,
                             backend="local", args=(0,), child_nice=5)
    assert result["collector 0"] == result["evaluator"] == min(19, result["learner"] + 5)
    with pytest.raises(ValueError, match="child_nice=-1"):
        parallel.launch(local_mains.report_niceness, collectors=1, backend="local", args=(0,),
                        child_nice=-1)
    assert children() == []
