"""Which algorithm takes which action spaces: the table declared on the policy classes, the
refusals that quote it (policy build, `rlpipe train --algo --env`), `rlpipe list --spaces`."""
import gymnasium as gym
import pytest

from rlpipe.cli import main
from rlpipe.models import UnsupportedSpaceError
from rlpipe.policies import Policy, get_policy
from rlpipe.policies import registry
from rlpipe.policies.registry import action_space_table, spaces_line

ENVS = "tests.spaces.test_action_spaces_envs"
BUILT_IN = ["dqn", "ppo", "sac", "td3"]  # other tests may register more policies
LINE = ("ppo takes Discrete, MultiDiscrete, MultiBinary and Box actions; dqn Discrete; "
        "sac and td3 Box. Dict/Tuple action spaces: none yet — wrap the env to flatten them")


@pytest.fixture(autouse=True)
def only_built_in_policies():
    """Other tests register policies of their own; these tests see the built-in ones only."""
    saved = dict(registry._REGISTRY)
    registry._REGISTRY.clear()
    registry._REGISTRY.update({n: saved[n] for n in BUILT_IN + ["random"]})
    yield
    registry._REGISTRY.clear()
    registry._REGISTRY.update(saved)


def test_the_table_is_read_from_the_policy_classes():
    assert action_space_table(BUILT_IN) == {"dqn": ["Discrete"],
                                            "ppo": ["Discrete", "MultiDiscrete", "MultiBinary",
                                                    "Box"],
                                            "sac": ["Box"], "td3": ["Box"]}
    assert set(BUILT_IN) <= set(action_space_table())
    assert spaces_line(BUILT_IN).startswith(LINE)


@pytest.mark.parametrize("algo", ["dqn", "sac", "td3"])
def test_an_algorithm_refuses_multidiscrete_actions_in_one_cli_line(algo, tmp_path, monkeypatch,
                                                                   capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["train", "--algo", algo, "--env", f"{ENVS}:make_pick", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert f"{algo} needs a" in err and "MultiDiscrete([3 4], start=[1 0])" in err
    assert "use --algo ppo" in err and LINE in err
    assert not (tmp_path / "runs").exists()


def test_dict_actions_are_refused_by_every_algorithm_with_how_to_fix(tmp_path, monkeypatch,
                                                                      capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["train", "--algo", "ppo", "--env", f"{ENVS}:make_dict_actions",
                 "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "ppo needs a" in err and "no registered algorithm handles it" in err
    assert "Dict/Tuple action spaces: none yet — wrap the env to flatten them" in err


@pytest.mark.parametrize("algo", ["ppo", "dqn", "sac"])
def test_building_a_policy_for_tuple_actions_names_the_table(algo):
    space = gym.spaces.Tuple((gym.spaces.Discrete(2), gym.spaces.Discrete(3)))
    with pytest.raises(UnsupportedSpaceError) as info:
        get_policy(algo)({}, gym.spaces.Box(-1, 1, (2,)), space)
    message = str(info.value)
    assert "does not support the action space Tuple(" in message and LINE in message
    assert "\n" not in message


class _DictActor(Policy):
    """A user policy that declares Dict actions (never built here)."""

    pipeline = "on-policy"
    action_space_types = (gym.spaces.Dict, gym.spaces.Discrete)


def test_a_registered_policy_appears_in_the_table_and_the_line(monkeypatch, capsys):
    monkeypatch.setitem(registry._REGISTRY, "mine", _DictActor)
    assert action_space_table()["mine"] == ["Discrete", "Dict"]
    assert spaces_line().endswith("Dict/Tuple action spaces: mine")
    assert main(["list", "--spaces"]) == 0
    row = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("mine "))
    assert row.split() == ["mine", "yes", "-", "-", "-", "yes", "-"]


def test_list_spaces_prints_the_table_and_the_observation_spaces(capsys):
    assert main(["list", "--spaces"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = next(ln for ln in lines if ln.startswith("algorithm"))
    assert header.split() == ["algorithm", "Discrete", "MultiDiscrete", "MultiBinary", "Box",
                              "Dict", "Tuple"]
    start = lines.index(header) + 1
    rows = {ln.split()[0]: ln.split()[1:] for ln in lines[start:lines.index("", start)]
            if ln.split()[0] in BUILT_IN}
    assert rows == {"dqn": ["yes", "-", "-", "-", "-", "-"],
                    "ppo": ["yes", "yes", "yes", "yes", "-", "-"],
                    "sac": ["-", "-", "-", "yes", "-", "-"],
                    "td3": ["-", "-", "-", "yes", "-", "-"]}
    assert any(LINE in ln for ln in lines)
    kinds = [ln.split()[0] + (" " + ln.split()[1] if ln.split()[0] == "Box" else "")
             for ln in lines[lines.index(next(ln for ln in lines
                                               if ln.startswith("observation spaces"))) + 1:]]
    assert kinds == ["Box vector", "Box image", "Discrete", "MultiDiscrete", "Dict", "Tuple"]


def test_list_import_without_spaces_is_a_usage_error(capsys):
    assert main(["list", "--import", "json"]) == 2
    assert "--import only goes with --spaces" in capsys.readouterr().err


def _printed_table():
    """{algorithm: kinds} of `rlpipe list --spaces` in a fresh process (the registry without
    the policies other tests register)."""
    import os
    import pathlib
    import subprocess
    import sys

    root = pathlib.Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-m", "rlpipe.cli", "list", "--spaces"], check=True,
                         capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(root)}).stdout.splitlines()
    start = next(i for i, ln in enumerate(out) if ln.startswith("algorithm"))
    kinds = out[start].split()[1:]
    table = {}
    for line in out[start + 1:]:
        if not line.strip():
            break
        name, *cells = line.split()
        table[name] = [k for k, c in zip(kinds, cells) if c == "yes"]
    return table


@pytest.mark.parametrize("doc", ["spaces.md", "action_spaces.md"])
def test_the_docs_table_is_the_one_rlpipe_list_spaces_prints(doc):
    import pathlib

    path = pathlib.Path(__file__).resolve().parents[2] / "docs" / doc
    lines = path.read_text(encoding="utf-8").splitlines()
    header = next(ln for ln in lines if ln.startswith("| algorithm |"))
    kinds = [c.strip() for c in header.strip("|").split("|")][1:]
    rows = [ln.strip("|").split("|") for ln in lines[lines.index(header) + 2:]]
    documented = {}
    for cells in rows[:next((i for i, r in enumerate(rows) if len(r) == 1), len(rows))]:
        documented[cells[0].strip(" `")] = [k for k, c in zip(kinds, cells[1:])
                                            if c.strip() == "yes"]
    printed = _printed_table()
    assert len(printed) > len(BUILT_IN)  # the registry's every trainable algorithm
    assert documented == printed


def test_list_spaces_says_which_algorithm_takes_masks_for_which_action_space(capsys):
    from rlpipe.policies.registry import mask_table

    assert mask_table(BUILT_IN) == {"dqn": ["Discrete"], "ppo": ["Discrete", "MultiDiscrete"]}
    assert main(["list", "--spaces"]) == 0
    lines = capsys.readouterr().out.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("action masks")) + 1
    rows = {ln.split()[0]: ln.split(None, 1)[1] for ln in lines[start:lines.index("", start)]}
    assert rows == {"dqn": "Discrete", "ppo": "Discrete, MultiDiscrete"}
