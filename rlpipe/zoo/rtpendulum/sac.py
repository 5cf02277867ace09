"""SAC on the real-time pendulum: a mean eval return of -400 or more within 10k time steps.

The env (`rlpipe/RTPendulum-v0`) is rtgym's elastic clock over Pendulum physics advanced by the
wall clock: 20 time steps a second, each 0.05 s of pendulum time as in Pendulum-v1 (so the
physics runs at wall-clock speed, `time_scale` 1), the action applied one time step after it is
chosen. At 50 Hz (`--set env.env_kwargs.hz=50`, pendulum time 2.5x the wall clock) a run takes
200 s instead of 500 s, but a time step late by more than 20 ms is an overrun: on the loaded
2-core test machine that was 6% of them (docs/realtime.md). SAC sees the observation flattened: [cos θ, sin θ, θ̇]
and the action buffer (the torque that acts during the next time step), which makes the delayed
problem Markov again.

By default the run is distributed on the local backend: the learner in this process, one
collector and the evaluator in child processes at full priority (`parallel.child_nice=0`), so
the learner never holds the collector's GIL and the collector keeps its clock. The overruns of
the collector's env are logged as `collect/overrun_rate`. `main(cfg)` called directly (no
`--collectors`) runs everything in one process; see docs/realtime.md.
"""
import copy
from typing import Any, Dict

from rlpipe.middleware import overrun_meter
from rlpipe.policies import SACPolicy
from rlpipe.pipelines.offpolicy import run_offpolicy
from rlpipe.zoo.pendulum import sac as pendulum_sac
from rlpipe.zoo.registry import Entry


# pendulum-sac's settings (networks, optimisers, one update per env step, 1000 warm-up steps)
config: Dict[str, Any] = copy.deepcopy(pendulum_sac.config)
config.update(
    max_env_step=10_000,
    # the env's defaults: hz=20, act_buf_len=1, ep_max_length=200, time_step_timeout_factor=1
    # (rtgym's), wait_on_done=True; change them with --set env.env_kwargs.<key>=<value>
    env=dict(id="rlpipe/RTPendulum-v0", n_envs=1, eval_n_envs=5, stop_value=-400),
    parallel=dict(collectors=1, evaluator=True, backend="local", child_nice=0),
)
config["policy"]["eval"] = dict(evaluator=dict(eval_freq=1000, n_episode=5))


def main(cfg: Any) -> Dict[str, Any]:
    return run_offpolicy(cfg, SACPolicy, after_learner=[overrun_meter()])


ENTRY = Entry(name="rtpendulum-sac", policy_cls=SACPolicy, config=config,
              main=main, requires={"rtgym": "realtime"}, doc=__doc__)


if __name__ == "__main__":
    print(ENTRY.run(ENTRY.resolve()))
