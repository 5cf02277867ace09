"""The `Context` base: a dataclass whose fields are the only names middleware may set."""
from __future__ import annotations

import dataclasses
import difflib
from typing import Any, ClassVar, FrozenSet, Iterable, Tuple


class ContextFieldError(AttributeError):
    """Raised when code sets (or keeps) a field that the context class does not declare."""

    def __init__(self, name: str, ctx_cls: type, action: str = "set") -> None:
        declared = sorted(field_names(ctx_cls))
        close = difflib.get_close_matches(name, declared, n=3, cutoff=0.6)
        hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        super().__init__(
            f"cannot {action} field {name!r} on {ctx_cls.__name__}: it is not a declared field.{hint} "
            f"To add a field, subclass {ctx_cls.__name__} as a @dataclasses.dataclass and declare it "
            f"there. Declared fields: {', '.join(declared)}."
        )
        self.field = name
        self.context_class = ctx_cls
        self.close_matches = close


def field_names(ctx_cls: type) -> FrozenSet[str]:
    """The declared field names of a context class (cached on the class)."""
    cached = ctx_cls.__dict__.get("_field_cache")
    if cached is None:
        cached = frozenset(f.name for f in dataclasses.fields(ctx_cls))
        setattr(ctx_cls, "_field_cache", cached)  # type.__setattr__: not guarded
    return cached


class _ClassKept:
    """`ctx._kept` of a context that holds no kept set of its own yet: its class's `KEEP` set.

    A non-data descriptor, so a set stored in the instance wins; keeps `keep()` working in a
    subclass `__post_init__` that never called `super().__post_init__()`, at no cost to the
    other attribute reads (a `__getattr__` would slow every one of them)."""

    def __get__(self, obj: Any, owner: type) -> FrozenSet[str]:
        return class_kept(owner)


@dataclasses.dataclass
class Context:
    """Messenger between middleware. Subclass it (as a dataclass) to declare fields.

    Only declared fields can be set; `keep()` marks fields that survive `renew()` for the whole
    run. Kept fields should hold small values (counters, floats), never tensors or modules.
    """

    total_step: int = 0
    """How many iterations (renews) this run has completed."""

    _private: ClassVar[Tuple[str, ...]] = ("_kept",)
    _kept = _ClassKept()  # until keep() or renew() stores a set in the instance
    KEEP: ClassVar[Tuple[str, ...]] = ("total_step",)
    """Fields this class keeps; a subclass lists its own and inherits its parents' (the kept
    set of a fresh instance is the union over the class's MRO, whatever `__post_init__` does)."""

    def __post_init__(self) -> None:
        """Nothing to do here: the kept set comes from `KEEP`. A subclass may call `keep()` in
        its own `__post_init__`, with or without `super().__post_init__()`."""


    def __setattr__(self, name: str, value: Any) -> None:
        if name not in field_names(type(self)):
            raise ContextFieldError(name, type(self))
        object.__setattr__(self, name, value)

    def keep(self, *names: str) -> None:
        """Mark fields that are carried into every later `renew()` of this run."""
        declared = field_names(type(self))
        for name in names:
            if name not in declared:
                raise ContextFieldError(name, type(self), action="keep")
        object.__setattr__(self, "_kept", self._kept | frozenset(names))

    @property
    def kept(self) -> FrozenSet[str]:
        """The names of the kept fields."""
        return self._kept

    def renew(self) -> "Context":
        """A fresh instance of the same class with kept values carried and `total_step` + 1."""
        cls = type(self)
        template = _template(cls)
        if template is None:  # a subclass with its own __post_init__: build it the slow way
            new = cls()
        else:
            new = cls.__new__(cls)
            state = new.__dict__
            state.update(template.values)
            for name, factory in template.factories:
                state[name] = factory()
        state = new.__dict__
        state["_kept"] = new._kept | self._kept
        for name in self._kept:
            state[name] = self.__dict__[name]
        state["total_step"] = self.total_step + 1
        return new

    def kept_state(self) -> dict:
        """The kept fields as a plain dict (for checkpoints)."""
        return {name: getattr(self, name) for name in sorted(self._kept)}

    def load_kept_state(self, state: dict) -> None:
        """Restore kept fields saved by `kept_state()`; the names are kept from now on."""
        self.keep(*state)
        for name, value in state.items():
            setattr(self, name, value)

    def has_attr(self, name: str) -> bool:
        """Whether `name` is a declared field of this context (DI-engine's spelling of the
        question; a declared field always holds a value, its default until set)."""
        return name in field_names(type(self))

    def has_default(self, name: str) -> bool:
        """Whether `name` is declared with a default that a reader can use (anything but None)."""
        for f in dataclasses.fields(self):
            if f.name == name:
                if f.default is not dataclasses.MISSING:
                    return f.default is not None
                return f.default_factory is not dataclasses.MISSING
        return False


@dataclasses.dataclass(frozen=True)
class _Template:
    """What a fresh instance of a context class holds: plain defaults, factories, kept set."""

    values: dict
    factories: tuple


def _template(ctx_cls: type) -> "_Template | None":
    """A cached fresh-instance template, or None when the class runs its own __post_init__
    (a user subclass may do more there than keep(), so it must really be constructed)."""
    if "_renew_template" in ctx_cls.__dict__:
        return ctx_cls.__dict__["_renew_template"]
    template = None
    if ctx_cls.__post_init__.__module__.startswith(__name__.rsplit(".", 1)[0]):
        fresh = ctx_cls()
        values, factories = {}, []
        for f in dataclasses.fields(ctx_cls):
            if f.default_factory is not dataclasses.MISSING:
                factories.append((f.name, f.default_factory))
            else:
                values[f.name] = fresh.__dict__[f.name]
        values["_kept"] = fresh._kept
        template = _Template(values, tuple(factories))
    setattr(ctx_cls, "_renew_template", template)
    return template


def class_kept(ctx_cls: type) -> FrozenSet[str]:
    """The fields a class keeps from the start: the union of `KEEP` over its MRO (cached)."""
    cached = ctx_cls.__dict__.get("_class_kept_cache")
    if cached is None:
        names = {n for klass in ctx_cls.__mro__ for n in klass.__dict__.get("KEEP", ())}
        declared_names = field_names(ctx_cls)
        unknown = sorted(names - declared_names)
        if unknown:  # a ValueError, not an AttributeError: it must not fall into __getattr__
            raise ValueError(
                f"{ctx_cls.__name__}.KEEP names {', '.join(repr(n) for n in unknown)}, which "
                f"{ctx_cls.__name__} does not declare as a field. Fix: declare the field in the "
                f"dataclass, or drop the name from KEEP. Declared fields: "
                f"{', '.join(sorted(declared_names))}.")
        cached = frozenset(names)
        setattr(ctx_cls, "_class_kept_cache", cached)
    return cached


def declared(ctx_cls: type) -> Iterable[dataclasses.Field]:
    """The declared fields of a context class, in order."""
    return dataclasses.fields(ctx_cls)
