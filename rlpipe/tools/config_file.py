"""Training from a YAML file (`rlpipe train --config FILE`), the file `rlpipe tune` writes as
best.yaml. Like rl-zoo's hyperparameter files, it names what to train and the values that
differ from its defaults:

```yaml
entry: cartpole-ppo          # a zoo entry; or `algo: ppo` and `env: CartPole-v1` (+ `imports`)
seed: 0                      # optional (--seed wins)
max_env_steps: 50000         # optional (--max-env-steps wins)
config:                      # config keys, nested or dotted, as `--set` takes them
  policy:
    learn: {lr: 0.001, gamma: 0.98}
```
`--set` on the command line applies on top of the file's `config`."""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional

from rlpipe.runs import atomic_write_text

FILE_KEYS = ("entry", "algo", "env", "imports", "seed", "max_env_steps", "config")


def read_yaml(path: str, flag: str = "--config") -> Dict[str, Any]:
    """A YAML file that holds a mapping; one-line errors for a missing or malformed file."""
    import yaml

    try:
        with open(path, encoding="utf-8") as f:
            data = yaml.safe_load(f)
    except (FileNotFoundError, IsADirectoryError):
        raise FileNotFoundError(f"{flag} {path}: no such file") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = f" at line {mark.line + 1}" if mark is not None else ""
        raise ValueError(f"{flag} {path}: not valid YAML{line}: "
                         f"{getattr(err, 'problem', None) or err}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{flag} {path}: expected a YAML mapping (key: value lines), got "
                         f"{type(data).__name__}")
    return data


def flatten(config: Mapping[str, Any], prefix: str = "") -> Dict[str, Any]:
    """{"a": {"b": 1}} → {"a.b": 1} (a dotted key stays as it is)."""
    out: Dict[str, Any] = {}
    for key, value in config.items():
        full = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out.update(flatten(value, full + "."))
        else:
            out[full] = value
    return out


def as_override(key: str, value: Any) -> str:
    """`key=value` as `--set` parses it back to `value` (a string is taken as it is)."""
    if isinstance(value, str):
        return f"{key}={value}"
    if isinstance(value, list):
        value = tuple(value)
    return f"{key}={value!r}"


def load_train_config(path: str) -> Dict[str, Any]:
    """What `rlpipe train --config PATH` trains: {name, algo, env, imports, seed,
    max_env_steps, overrides}.
    Unknown file keys and unknown or ill-typed config keys are one-line errors naming the key
    and the file."""
    data = read_yaml(path)
    for key in data:
        if key not in FILE_KEYS:
            raise ValueError(f"--config {path}: unknown key {key!r} (a config file has "
                             f"{', '.join(FILE_KEYS)}; config values go under `config:`)")
    name, algo, env = data.get("entry"), data.get("algo"), data.get("env")
    if not name and not (algo and env):
        raise ValueError(f"--config {path}: name what to train: `entry: NAME` (a zoo entry) "
                         f"or `algo: ALGO` with `env: ENV`")
    config = data.get("config") or {}
    if not isinstance(config, Mapping):
        raise ValueError(f"--config {path}: `config` must be a mapping of config keys, got "
                         f"{type(config).__name__}")
    seed, steps = data.get("seed"), data.get("max_env_steps")
    for key, value in (("seed", seed), ("max_env_steps", steps)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise ValueError(f"--config {path}: {key} must be an integer, got {value!r}")
    if steps is not None and steps <= 0:
        raise ValueError(f"--config {path}: max_env_steps must be positive, got {steps}")
    imports = data.get("imports") or []
    imports = [imports] if isinstance(imports, str) else list(imports)
    return dict(name=name, algo=algo, env=env, imports=imports, seed=seed, max_env_steps=steps,
                overrides=[as_override(k, v) for k, v in flatten(config).items()])


def check_train_config(path: str, spec: Mapping[str, Any], extra: List[str]) -> None:
    """Resolve the file's entry with its config and `extra` (--set): a ConfigError is re-raised
    with the file's name, before any run folder exists."""
    from rlpipe.config import ConfigError

    from rlpipe.zoo.registry import find_entry

    entry = find_entry(spec["name"], spec["algo"], spec["env"], list(spec["imports"]))
    try:
        entry.resolve({}, spec["overrides"])
    except ConfigError as err:
        raise ValueError(f"--config {path}: {err}") from None
    entry.resolve({}, [*spec["overrides"], *extra])  # a --set error is the command line's


def write_train_config(path: str, spec: Mapping[str, Any], config: Mapping[str, Any],
                       header: Optional[str] = None) -> None:
    """Write a file `load_train_config` reads: `spec` (entry or algo/env, imports, seed,
    max_env_steps) and
    `config` ({dotted key: value}), nested; `header`: comment lines on top."""
    import yaml

    nested: Dict[str, Any] = {}
    for dotted, value in sorted(config.items()):
        node = nested
        *parents, last = dotted.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = list(value) if isinstance(value, tuple) else value
    body = {k: spec[k] for k in FILE_KEYS[:-1] if spec.get(k) not in (None, [], "")}
    body["config"] = nested
    text = yaml.safe_dump(body, sort_keys=False, default_flow_style=False)
    comments = "".join(f"# {line}\n" for line in (header or "").splitlines())
    atomic_write_text(path, comments + text)
