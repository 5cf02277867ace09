"""One offline gradient step: d3rlpy's update against rlpipe's and a bare torch loop's.

    python benchmarks/offline_vs_library.py [--algos iql td3-bc cql] [--rounds 7]
        [--round-ms 1000] [--updates N] [--hidden 256 256] [--batch 256] [--compile]
        [--sampling]

d3rlpy is not a dependency of rlpipe: run this script with the interpreter of a venv where
`import d3rlpy` works beside rlpipe (docs/benchmarks.md, "Offline learners against d3rlpy");
with any other interpreter the library side is left out and said so, and the rlpipe and bare
sides still run.

For each of IQL, TD3+BC and CQL (continuous) the three sides learn from the same numpy arrays:
one fixed batch of `--batch` rows drawn from a small data set of random-action Pendulum-v1
episodes (actions mapped from [-2, 2] to [-1, 1] for d3rlpy, which takes them so; rlpipe's
policy and the bare loop map them inside the step).

- d3rlpy: `algo.update(batch)` on a `TransitionMiniBatch`, at d3rlpy's default config but for
  the networks (`--hidden`, d3rlpy's default is 256-256) and batch size: what `fit()` calls per
  step after sampling, i.e. the numpy-to-torch conversion of the batch, the algorithm's losses,
  backward passes and Adam steps (torch's default `Adam`), the target updates, and each loss
  read back as a float. TD3+BC gets a `StandardObservationScaler` of the data set's mean and
  std (d3rlpy's TD3+BC reproduction script sets it; the paper normalises observations), as
  rlpipe's TD3+BC normalises them.
- rlpipe: `policy.learn_mode.forward(batch)` with the policy set to the same networks and batch
  and d3rlpy's values of every setting that changes the work or the math (`D3RLPY_DEFAULTS`
  below; for CQL: 10 sampled actions from each of the 3 samplers, the Lagrange α' with
  threshold 10 as d3rlpy's default). `--compile` adds a side with `policy.learn.compile=True`.
  (CQL's target: d3rlpy takes π's mean action at s', rlpipe a sampled one; one actor pass each.)
- bare: the bare loop of benchmarks/learner_vs_bare.py at the same networks and batch (its
  CQL keeps α_cql fixed: it leaves out the Lagrange multiplier's scalar update that d3rlpy and
  rlpipe do).

Timing is this process's CPU time (`time.process_time`) with one torch thread, after a warm-up
of 5 updates per side; each round times N updates of every side (N fills about --round-ms on
the slowest side, unless --updates sets it), the order of the sides rotating by round; the
table shows each side's median ms per update over the rounds and the ratios. A ratio
library/rlpipe of 5 means rlpipe's step takes a fifth of d3rlpy's. `--sampling` adds a line
with the CPU ms of drawing one batch from the data set as each framework's offline loop does
before each update (not in the table's figures): rlpipe's `offline_data_fetcher` over an
`OfflineDataset`, d3rlpy's `sample_transition_batch` (what its `fit()` calls) over an
`MDPDataset` of the same episodes.
"""
from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import pathlib
import statistics
import sys
from typing import Any, Callable, Dict, List, NamedTuple, Sequence

import gymnasium as gym
import numpy as np
import torch

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import learner_vs_bare as lvb  # noqa: E402
from rlpipe.policies import get_policy  # noqa: E402

ALGOS = ("iql", "td3-bc", "cql")
OBS_DIM, ACT_DIM = 3, 1

# d3rlpy 2.8.1's defaults for each algorithm (its *Config dataclasses), as rlpipe's learn keys:
# {d3rlpy field: (value, [rlpipe learn keys that take it])}. The script checks them against the
# installed d3rlpy, so that a version with other defaults is not compared silently.
D3RLPY_DEFAULTS: Dict[str, Dict[str, tuple]] = {
    "iql": {"batch_size": (256, ["batch_size"]), "gamma": (0.99, ["gamma"]),
            "tau": (0.005, ["tau"]), "actor_learning_rate": (3e-4, ["actor_lr"]),
            # one Adam over Q's and V in d3rlpy; rlpipe gives V its own, at the same lr
            "critic_learning_rate": (3e-4, ["critic_lr", "value_lr"]),
            "expectile": (0.7, ["expectile"]), "weight_temp": (3.0, ["beta"]),
            "max_weight": (100.0, ["max_weight"])},
    "td3-bc": {"batch_size": (256, ["batch_size"]), "gamma": (0.99, ["gamma"]),
               "tau": (0.005, ["tau"]), "actor_learning_rate": (3e-4, ["actor_lr"]),
               "critic_learning_rate": (3e-4, ["critic_lr"]),
               "target_smoothing_sigma": (0.2, ["target_noise"]),
               "target_smoothing_clip": (0.5, ["target_noise_clip"]),
               "alpha": (2.5, ["alpha"]), "update_actor_interval": (2, ["policy_delay"])},
    "cql": {"batch_size": (256, ["batch_size"]), "gamma": (0.99, ["gamma"]),
            "tau": (0.005, ["tau"]), "actor_learning_rate": (1e-4, ["actor_lr"]),
            "critic_learning_rate": (3e-4, ["critic_lr"]),
            "temp_learning_rate": (1e-4, ["alpha_lr"]),
            "initial_temperature": (1.0, ["init_alpha"]),
            "alpha_learning_rate": (1e-4, ["alpha_prime_lr"]),
            "initial_alpha": (1.0, ["init_alpha_prime"]),
            "alpha_threshold": (10.0, ["lagrange_threshold"]),
            "conservative_weight": (5.0, ["cql_alpha"]),
            "n_action_samples": (10, ["cql_n_actions"]),
            "soft_q_backup": (False, ["backup_entropy"]),
            "max_q_backup": (False, ["max_q_backup"])},
}
NETS = {"iql": ("actor_hidden", "critic_hidden", "value_hidden"),
        "td3-bc": ("actor_hidden", "critic_hidden"), "cql": ("actor_hidden", "critic_hidden")}
BARE = {"iql": lvb.bare_iql, "td3-bc": lvb.bare_td3_bc, "cql": lvb.bare_cql}


def d3rlpy_available() -> bool:
    return importlib.util.find_spec("d3rlpy") is not None


def pendulum_episodes(episodes: int = 10, seed: int = 0) -> List[Dict[str, np.ndarray]]:
    """`episodes` random-action Pendulum-v1 episodes (200 steps each) as Minari stores them:
    observations (steps + 1 rows), actions, rewards, terminations, truncations."""
    env = gym.make("Pendulum-v1")
    env.action_space.seed(seed)
    out = []
    for ep in range(episodes):
        obs, _ = env.reset(seed=seed + ep)
        steps: Dict[str, List[Any]] = {k: [] for k in ("observations", "actions", "rewards",
                                                       "terminations", "truncations")}
        steps["observations"].append(obs)
        done = False
        while not done:
            action = env.action_space.sample()
            obs, reward, terminated, truncated, _ = env.step(action)
            for k, v in (("observations", obs), ("actions", action), ("rewards", reward),
                         ("terminations", terminated), ("truncations", truncated)):
                steps[k].append(v)
            done = terminated or truncated
        types = {"terminations": bool, "truncations": bool}
        out.append({k: np.asarray(v, dtype=types.get(k, np.float32)) for k, v in steps.items()})
    env.close()
    return out


def pendulum_data(episodes: int = 10, seed: int = 0,
                  stored: List[Dict[str, np.ndarray]] | None = None) -> Dict[str, np.ndarray]:
    """The transitions of `pendulum_episodes` (or of `stored` ones) as rows, with each row's
    next action (zero at an episode's end)."""
    stored = pendulum_episodes(episodes, seed) if stored is None else stored
    cat = lambda parts: np.concatenate(parts).astype(parts[0].dtype)  # noqa: E731
    return {"obs": cat([ep["observations"][:-1] for ep in stored]),
            "action": cat([ep["actions"] for ep in stored]),
            "reward": cat([ep["rewards"] for ep in stored]),
            "next_obs": cat([ep["observations"][1:] for ep in stored]),
            "terminated": cat([ep["terminations"] for ep in stored]),
            "truncated": cat([ep["truncations"] for ep in stored]),
            "next_action": cat([np.concatenate([ep["actions"][1:], ep["actions"][:1] * 0])
                                for ep in stored])}


def fixed_batch(data: Dict[str, np.ndarray], rows: int, seed: int = 0) -> Dict[str, np.ndarray]:
    """`rows` transitions drawn uniformly from `data`: the batch every side learns from."""
    idx = np.random.default_rng(seed).integers(len(data["reward"]), size=rows)
    return {k: np.ascontiguousarray(v[idx]) for k, v in data.items()}


def rlpipe_batch(batch: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
    """The batch as rlpipe's learner middleware hands it to a policy (env units)."""
    return {k: batch[k] for k in ("obs", "action", "reward", "next_obs", "terminated",
                                  "truncated")}


def rlpipe_cfg(name: str, hidden: Sequence[int], batch_size: int, compile_: bool) -> Dict:
    learn: Dict[str, Any] = {key: value for value, keys in D3RLPY_DEFAULTS[name].values()
                             for key in keys}
    learn.update(batch_size=batch_size, compile=compile_)
    return {"seed": 0, "model": {net: tuple(hidden) for net in NETS[name]}, "learn": learn}


def rlpipe_policy(name: str, hidden: Sequence[int], batch_size: int, compile_: bool,
                  data: Dict[str, np.ndarray]) -> Any:
    policy = get_policy(name)(rlpipe_cfg(name, hidden, batch_size, compile_),
                              lvb.PENDULUM_OBS, lvb.PENDULUM_ACT)
    if name == "td3-bc":
        policy.set_obs_normalizer(data["obs"].mean(0), data["obs"].std(0))
    return policy


def optimized_params(optimizers: Sequence[torch.optim.Optimizer]) -> List[torch.Tensor]:
    return [p for opt in optimizers for group in opt.param_groups for p in group["params"]]


def policy_optimizers(policy: Any) -> List[torch.optim.Optimizer]:
    return [v for v in vars(policy).values() if isinstance(v, torch.optim.Optimizer)]


def squeezed_shapes(params: Sequence[torch.Tensor]) -> List[tuple]:
    """Parameter shapes without their unit dimensions, sorted: d3rlpy keeps a scalar such as
    log α as a (1, 1) tensor where rlpipe keeps it 0-dimensional."""
    return sorted(tuple(d for d in p.shape if d != 1) for p in params)


# ------------------------------------------------------------------------------------------------
# d3rlpy
# ------------------------------------------------------------------------------------------------
def check_d3rlpy_defaults(name: str, config: Any) -> None:
    for field, (value, _) in D3RLPY_DEFAULTS[name].items():
        if field == "batch_size":
            continue  # set from --batch
        found = getattr(config, field)
        if found != value:
            raise SystemExit(f"d3rlpy {name}: its default {field} is {found!r}, this script "
                             f"sets rlpipe to {value!r}; update D3RLPY_DEFAULTS in "
                             f"{pathlib.Path(__file__).name} for this d3rlpy version")


def d3rlpy_side(name: str, hidden: Sequence[int], batch_size: int,
                data: Dict[str, np.ndarray], batch: Dict[str, np.ndarray]):
    """(d3rlpy's algorithm, its parameters under an optimizer, one update on `batch`)."""
    import d3rlpy
    from d3rlpy.dataset import TransitionMiniBatch
    from d3rlpy.models.encoders import VectorEncoderFactory
    from d3rlpy.optimizers.optimizers import OptimizerWrapper
    from d3rlpy.preprocessing import StandardObservationScaler

    def nets(*roles: str) -> Dict[str, Any]:
        return {f"{role}_encoder_factory": VectorEncoderFactory(hidden_units=list(hidden))
                for role in roles}

    if name == "iql":
        config = d3rlpy.algos.IQLConfig(batch_size=batch_size,
                                        **nets("actor", "critic", "value"))
    elif name == "td3-bc":
        scaler = StandardObservationScaler(mean=data["obs"].mean(0), std=data["obs"].std(0))
        config = d3rlpy.algos.TD3PlusBCConfig(batch_size=batch_size, observation_scaler=scaler,
                                              **nets("actor", "critic"))
    else:
        config = d3rlpy.algos.CQLConfig(batch_size=batch_size, **nets("actor", "critic"))
    check_d3rlpy_defaults(name, config)
    algo = config.create(device="cpu:0")
    algo.create_impl((OBS_DIM,), ACT_DIM)
    modules = algo.impl.modules
    optimizers = [getattr(modules, f.name).optim for f in dataclasses.fields(modules)
                  if isinstance(getattr(modules, f.name), OptimizerWrapper)]
    column = lambda a: a.astype(np.float32).reshape(-1, 1)  # noqa: E731
    minibatch = TransitionMiniBatch(
        observations=batch["obs"], actions=batch["action"] / 2.0, rewards=column(batch["reward"]),
        next_observations=batch["next_obs"], next_actions=batch["next_action"] / 2.0,
        terminals=column(batch["terminated"]), intervals=np.ones((batch_size, 1), np.float32),
        transitions=[])
    return algo, optimized_params(optimizers), lambda: algo.update(minibatch)


# ------------------------------------------------------------------------------------------------
# the sides of one algorithm
# ------------------------------------------------------------------------------------------------
class Sides(NamedTuple):
    updates: Dict[str, Callable[[], object]]  # side name -> one gradient step
    policy: Any                               # rlpipe's eager policy
    bare: lvb.Case                            # the bare loop (its optimizers, its batch)
    library_params: List[torch.Tensor] | None  # d3rlpy's optimized parameters, if it ran


def build(name: str, hidden: Sequence[int], batch_size: int, compile_: bool = False,
          library: bool = True, data: Dict[str, np.ndarray] | None = None) -> Sides:
    data = pendulum_data() if data is None else data
    batch = fixed_batch(data, batch_size)
    ours = rlpipe_batch(batch)
    updates: Dict[str, Callable[[], object]] = {}
    library_params = None
    if library:
        _, library_params, updates["d3rlpy"] = d3rlpy_side(name, hidden, batch_size, data, batch)
    policy = rlpipe_policy(name, hidden, batch_size, False, data)
    updates["rlpipe"] = lambda: policy.learn_mode.forward(ours)
    if compile_:
        compiled = rlpipe_policy(name, hidden, batch_size, True, data)
        updates["compiled"] = lambda: compiled.learn_mode.forward(ours)
    bare = BARE[name](hidden=hidden, batch_size=batch_size)
    bare.batch.update(ours)  # its update reads this dict: same arrays as the other sides
    updates["bare"] = bare.update
    return Sides(updates, policy, bare, library_params)


def sampling_sides(stored: List[Dict[str, np.ndarray]], batch_size: int,
                   library: bool) -> Dict[str, Callable[[], object]]:
    """One batch drawn from the data set (and returned) as each framework's offline loop draws
    it per step: rlpipe's `offline_data_fetcher` over an `OfflineDataset`, d3rlpy's
    `ReplayBuffer.sample_transition_batch` (what `fit()` calls) over an `MDPDataset`."""
    from easydict import EasyDict

    from rlpipe.contexts import OfflineRLContext
    from rlpipe.data import OfflineDataset
    from rlpipe.middleware.offline import offline_data_fetcher

    dataset = OfflineDataset.from_episodes(stored, lvb.PENDULUM_OBS, lvb.PENDULUM_ACT)
    fetch = offline_data_fetcher(EasyDict(policy=dict(learn=dict(batch_size=batch_size))),
                                 dataset)
    ctx = OfflineRLContext()

    def draw() -> Any:
        fetch(ctx)
        return ctx.train_data

    sides: Dict[str, Callable[[], object]] = {"rlpipe": draw}
    if library:
        import logging

        import d3rlpy
        import structlog

        # d3rlpy logs an info line per inferred signature of a new data set; keep the table clean
        structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
        steps = sum(len(ep["rewards"]) for ep in stored)
        buffer = d3rlpy.dataset.MDPDataset(
            observations=np.concatenate([ep["observations"][:-1] for ep in stored]),
            actions=np.concatenate([ep["actions"] for ep in stored]) / 2.0,
            rewards=np.concatenate([ep["rewards"] for ep in stored]).reshape(steps, 1),
            terminals=np.concatenate([ep["terminations"] for ep in stored]).astype(np.float32),
            timeouts=np.concatenate([ep["truncations"] for ep in stored]).astype(np.float32))
        sides["d3rlpy"] = lambda: buffer.sample_transition_batch(batch_size)
    return sides


def check_shapes(name: str, sides: Sides) -> None:
    """The sides train parameters of the same shapes, or the comparison is void."""
    ours = squeezed_shapes(optimized_params(policy_optimizers(sides.policy)))
    others = {"bare": squeezed_shapes(optimized_params(sides.bare.optimizers))}
    if sides.library_params is not None:
        others["d3rlpy"] = squeezed_shapes(sides.library_params)
    for side, shapes in others.items():
        if shapes != ours:
            raise SystemExit(f"{name}: the {side} side trains parameters of shapes {shapes}, "
                             f"rlpipe's policy {ours}; make their networks the same "
                             f"(--hidden, NETS, learner_vs_bare's builders)")


def measure(updates: Dict[str, Callable[[], object]], rounds: int, n: int | None,
            round_ms: float) -> Dict[str, float]:
    """Median CPU ms per update of each side over `rounds` rounds of `n` updates each (None:
    about `round_ms` on the slowest side), the order of the sides rotating by round."""
    names = list(updates)
    for fn in updates.values():
        for _ in range(5):  # warm-up: allocator, optimizer state, compilation
            fn()
    if n is None:
        slowest = max(lvb.cpu_ms(fn, 3) for fn in updates.values())
        n = int(min(1000, max(3, round_ms / slowest)))
    times: Dict[str, List[float]] = {side: [] for side in names}
    for r in range(rounds):
        for side in names[r % len(names):] + names[:r % len(names)]:
            times[side].append(lvb.cpu_ms(updates[side], n))
    return {side: statistics.median(t) for side, t in times.items()}


def main(argv: List[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--algos", nargs="+", default=list(ALGOS), choices=ALGOS)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--updates", type=int, default=None,
                    help="updates per side per round (default: about --round-ms of CPU time)")
    ap.add_argument("--round-ms", type=float, default=1000.0,
                    help="CPU ms of the slowest side per round when --updates is not given")
    ap.add_argument("--hidden", type=int, nargs="+", default=[256, 256],
                    help="layers of every network (d3rlpy's default: 256 256)")
    ap.add_argument("--batch", type=int, default=256, help="rows per update (d3rlpy's: 256)")
    ap.add_argument("--compile", action="store_true",
                    help="add a side: rlpipe with policy.learn.compile=True")
    ap.add_argument("--sampling", action="store_true",
                    help="also time drawing one batch from the data set, as each framework's "
                         "offline loop does before each update")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    library = d3rlpy_available()
    if library:
        import d3rlpy
        print(f"d3rlpy {d3rlpy.__version__}, torch {torch.__version__}, one thread")
    else:
        print(f"d3rlpy is not importable by {sys.executable}: its side is left out (run this "
              f"script with a venv's interpreter that has it; docs/benchmarks.md, 'Offline "
              f"learners against d3rlpy')")
    print(f"networks {'-'.join(map(str, args.hidden))}, batch {args.batch}; "
          f"CPU ms per update, medians of {args.rounds} rounds")
    cols = ["d3rlpy", "rlpipe"] + (["compiled"] if args.compile else []) + ["bare"]
    ratios = ["d3rlpy/rlpipe"] + (["d3rlpy/compiled"] if args.compile else []) + \
        ["d3rlpy/bare", "rlpipe/bare"]
    print(f"{'algorithm':<10}" + "".join(f"{c:>10}" for c in cols)
          + "".join(f"{r:>16}" for r in ratios))
    stored = pendulum_episodes()
    data = pendulum_data(stored=stored)
    for name in args.algos:
        sides = build(name, args.hidden, args.batch, args.compile, library, data)
        check_shapes(name, sides)
        ms = measure(sides.updates, args.rounds, args.updates, args.round_ms)
        fig = lambda x: f"{x:>10.3f}" if x is not None else f"{'-':>10}"  # noqa: E731
        row = "".join(fig(ms.get(c)) for c in cols)
        for r in ratios:
            a, b = r.split("/")
            row += f"{ms[a] / ms[b]:>16.2f}" if a in ms and b in ms else f"{'-':>16}"
        print(f"{name:<10}{row}", flush=True)
    if args.sampling:
        ms = measure(sampling_sides(stored, args.batch, library), args.rounds, args.updates,
                     args.round_ms)
        print(f"drawing one batch of {args.batch} from the data set: "
              + ", ".join(f"{side} {t:.3f} ms" for side, t in ms.items()))


if __name__ == "__main__":
    main()
