"""Write a state dict (nested dicts of JSON values and numpy arrays) to one .npz file and back.

Arrays go into the archive as `a0, a1, ...`; everything else goes into a JSON header that
records where each array sits. No pickle: files load with `allow_pickle=False`.

A buffer's arrays can be most of the machine's memory, so `load_state(path, lazy=True)` leaves
each array in the file as a `StoredArray` until it is read, and `fill(dest, value)` streams one
into the array that will hold it: a load then needs the buffer's memory once, not twice.
"""
from __future__ import annotations

import json
import os
import tempfile
import zipfile
from typing import IO, Any, Dict, List, Tuple, Union

import numpy as np
import numpy.lib.format as npy

_HEADER = "__rlpipe_state__"
_CHUNK = 8 << 20  # bytes read at a time when streaming an array into place

Source = Union[str, "os.PathLike[str]", IO[bytes]]


class StoredArray:
    """One array of a state file, not yet read: `shape`, `dtype` and `len()` as an ndarray's;
    `np.asarray(a)` reads it whole, and `fill(out, a)` reads it straight into `out`."""

    def __init__(self, source: Source, member: str, shape: Tuple[int, ...], dtype: np.dtype,
                 fortran_order: bool) -> None:
        self.source, self.member = source, member
        self.shape, self.dtype, self.fortran_order = tuple(shape), np.dtype(dtype), fortran_order

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d stored array")
        return self.shape[0]

    def __repr__(self) -> str:
        return f"StoredArray({self.member!r}, shape={self.shape}, dtype={self.dtype})"

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = np.empty(self.shape, self.dtype, order="F" if self.fortran_order else "C")
        self.read_into(out)
        return out if dtype is None else out.astype(dtype, copy=False)

    def fits(self, out: np.ndarray) -> bool:
        """Whether `out` has this array's shape and dtype and is contiguous in its order."""
        order_ok = out.flags.f_contiguous if self.fortran_order else out.flags.c_contiguous
        return out.shape == self.shape and out.dtype == self.dtype and order_ok

    def read_into(self, out: np.ndarray) -> None:
        """Read the array's bytes from the file into `out`, which `fits` it, in chunks of 8 MB."""
        if not self.fits(out):
            raise ValueError(f"{self!r}.read_into: the target has shape {out.shape} and dtype "
                             f"{out.dtype}, or is not contiguous in the stored order; pass an "
                             f"array of the stored shape and dtype")
        flat = out.reshape(-1, order="A").view(np.uint8)
        with zipfile.ZipFile(self.source) as archive, archive.open(self.member) as f:
            _read_header(f, self.member)
            for start in range(0, flat.size, _CHUNK):
                part = flat[start:start + _CHUNK]
                if f.readinto(memoryview(part)) != part.size:
                    raise ValueError(f"{self.member!r} in {self.source!r} ends before its "
                                     f"{self.nbytes} bytes; the file is truncated")


def fill(dest: np.ndarray, value: Any) -> None:
    """`dest[...] = value`, streaming `value` from its file when it is a `StoredArray` of
    `dest`'s shape and dtype (no second copy in memory)."""
    if isinstance(value, StoredArray) and value.fits(dest):
        value.read_into(dest)
    else:
        dest[...] = np.asarray(value)


def _read_header(f: IO[bytes], member: str) -> Tuple[Tuple[int, ...], bool, np.dtype]:
    version = npy.read_magic(f)
    if version == (1, 0):
        shape, fortran_order, dtype = npy.read_array_header_1_0(f)
    elif version == (2, 0):
        shape, fortran_order, dtype = npy.read_array_header_2_0(f)
    else:
        raise ValueError(f"{member!r} is a .npy of format {version}, which rlpipe does not "
                         "write; load the file with np.load")
    if dtype.hasobject:
        raise ValueError(f"{member!r} holds Python objects, which load only with pickle; rlpipe "
                         "state files hold none, so the file was not written by rlpipe")
    return shape, fortran_order, dtype


def _split(node: Any, arrays: List[np.ndarray]) -> Any:
    if isinstance(node, np.ndarray):
        arrays.append(node)
        return {"__array__": len(arrays) - 1}
    if isinstance(node, dict):
        return {k: _split(v, arrays) for k, v in node.items()}
    if isinstance(node, (list, tuple)):
        return [_split(v, arrays) for v in node]
    if isinstance(node, np.generic):
        return node.item()
    return node


def _join(node: Any, archive: Any) -> Any:
    if isinstance(node, dict):
        if set(node) == {"__array__"}:
            return archive[f"a{node['__array__']}"]
        return {k: _join(v, archive) for k, v in node.items()}
    if isinstance(node, list):
        return [_join(v, archive) for v in node]
    return node


def save_state(state: Dict[str, Any], path: str) -> None:
    """Write atomically: a temp file in the same folder, then `os.replace`."""
    arrays: List[np.ndarray] = []
    header = json.dumps(_split(state, arrays))
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".npz", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **{_HEADER: np.array(header)}, **{f"a{i}": a for i, a in enumerate(arrays)})
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def load_state(path: Source, lazy: bool = False) -> Dict[str, Any]:
    """The state `save_state` wrote; with `lazy=True` its arrays are `StoredArray`s, read
    when used (the file must stay in place until then)."""
    with np.load(path, allow_pickle=False) as archive:
        if _HEADER not in archive.files:
            raise ValueError(f"{path!r} is not an rlpipe state file (no {_HEADER} entry); it was not "
                             "written by ReplayBuffer.save")
        header = json.loads(str(archive[_HEADER]))
        if not lazy:
            return _join(header, {name: archive[name] for name in archive.files})
    with zipfile.ZipFile(path) as archive:
        stored = {}
        for info in archive.infolist():
            name = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
            if name == _HEADER:
                continue
            with archive.open(info) as f:
                shape, fortran_order, dtype = _read_header(f, info.filename)
            stored[name] = StoredArray(path, info.filename, shape, dtype, fortran_order)
    return _join(header, stored)
