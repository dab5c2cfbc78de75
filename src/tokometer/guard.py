"""The guarded door: every outside byte enters through these few functions before anything parses it.

A user's catalog file, a config.json, a trace, a length file, an import, a web body: each is read
here with a size bound, refused when it is not a regular file (a FIFO would wait for a writer for
ever, `/dev/zero` never ends, a folder is not a file), decoded as UTF-8 (with or without a BOM; a
UTF-16 file or binary bytes are named as what they are), and bounded in nesting depth by a cheap
pre-scan before a recursive parser sees it. Numbers are checked where they enter (`finite`,
`whole`, `json_numbers`): downstream code never sees an `inf`, a `nan` or an astronomically large
count. Each plausibility limit lives next to the quantity it bounds (in the module that owns it),
passed in here; the two limits below are about the syntax itself, not about any quantity.

Every refusal is an `InputError` naming the door (which way the bytes came in), the field (file
and line, or a JSON path) and what was expected; the CLI prints it in a line or two and exits 2,
the web answers 400/422 with `{"error", "field"}`.
"""

from __future__ import annotations

import codecs
import math
import os
import re
import stat
from collections.abc import Mapping
from itertools import accumulate
from pathlib import Path
from typing import Any

from tokometer.errors import InputError

# No file or body tokometer reads nests deeper than 6 (a run export: run > levels > summary > stats);
# 32 leaves room for any honest file and keeps every recursive reader far below Python's 1,000 frames.
MAX_NESTING_DEPTH = 32
# The largest integer SQLite stores (a signed 64-bit INTEGER); any count beyond it is not a count.
MAX_INT64 = 2**63 - 1

_STRINGS = {
    "json": re.compile(r'"(?:[^"\\\n]|\\.)*"'),
    "toml": re.compile(r'"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'|"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'|#[^\n]*'),
}
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_BRACKET = re.compile(r"[\[\]{}]")
_NOT_NEWLINE = re.compile(r"[^\n]")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def refuse(door: str, where: str, problem: str, expected: str) -> InputError:
    """The one shape of a refusal: `where: problem; expected ...`, with its door and field attached."""
    return InputError(f"{where}: {problem}; expected {expected}", field=where, door=door, expected=expected)


def _kind_of(mode: int) -> str | None:
    """What a non-regular file is, in words (None: a regular file)."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe), which may never end"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device, which may never end"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def read_bytes(path: str | Path, *, door: str, limit_bytes: int, what: str = "a file") -> bytes:
    """The bytes of a regular file of at most `limit_bytes`; a FIFO, a device or a folder is refused.

    The file is opened without blocking (a FIFO with no writer would otherwise wait for ever) and
    checked on the open handle, so a path swapped between a check and the open cannot slip through.
    """
    where = str(path)
    try:
        fd = os.open(where, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except OSError as exc:
        if isinstance(exc, IsADirectoryError):
            raise refuse(door, where, "is a folder", what) from None
        raise refuse(door, where, f"cannot be read ({exc.strerror or exc})", what) from None
    try:
        info = os.fstat(fd)
        kind = _kind_of(info.st_mode)
        if kind is not None:
            raise refuse(door, where, f"is {kind}", what)
        if info.st_size > limit_bytes:
            raise refuse(door, where, f"is {info.st_size:,} bytes, over the {limit_bytes:,}-byte limit", f"{what} of at most {limit_bytes:,} bytes")
        with os.fdopen(fd, "rb", closefd=True) as handle:
            fd = -1
            # sized by the file, not the limit (read(n) allocates n bytes); one byte more tells it grew
            data = handle.read(info.st_size + 1)
            while len(data) <= limit_bytes and (more := handle.read(min(1 << 20, limit_bytes + 1 - len(data)))):
                data += more
    except OSError as exc:
        raise refuse(door, where, f"cannot be read ({exc.strerror or exc})", what) from None
    finally:
        if fd >= 0:
            os.close(fd)
    if len(data) > limit_bytes:
        raise refuse(door, where, f"grew past the {limit_bytes:,}-byte limit while being read", f"{what} of at most {limit_bytes:,} bytes")
    return data


def decode_text(data: bytes, where: str, *, door: str, what: str = "UTF-8 text") -> str:
    """UTF-8 text, a leading BOM dropped; a UTF-16/32 file or binary bytes are named as such."""
    for bom, name in ((codecs.BOM_UTF32_LE, "UTF-32"), (codecs.BOM_UTF32_BE, "UTF-32"), (codecs.BOM_UTF16_LE, "UTF-16"), (codecs.BOM_UTF16_BE, "UTF-16")):
        if data.startswith(bom):
            raise refuse(door, where, f"is saved as {name} (it starts with a {name} byte-order mark); save it as UTF-8", what)
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    nul = data.find(b"\0")
    if nul >= 0:
        head = data[:512]
        if len(head) >= 4 and head[1::2].count(0) >= len(head) // 4:
            raise refuse(door, where, "looks like UTF-16 without a byte-order mark (every other byte is zero); save it as UTF-8", what)
        line = data.count(b"\n", 0, nul) + 1
        raise refuse(door, f"{where}, line {line}", f"holds binary bytes (a zero byte at offset {nul:,})", what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise refuse(door, f"{where}, line {line}", f"byte 0x{data[exc.start]:02x} at offset {exc.start:,} is not UTF-8", what) from None


def read_text(path: str | Path, *, door: str, limit_bytes: int, what: str = "a UTF-8 text file") -> str:
    """`read_bytes` then `decode_text`: the one way a text file a user names comes in."""
    return decode_text(read_bytes(path, door=door, limit_bytes=limit_bytes, what=what), str(path), door=door, what=what)


def check_nesting(text: str, where: str, *, door: str, syntax: str = "json", limit: int = MAX_NESTING_DEPTH) -> None:
    """Refuse JSON or TOML nested deeper than `limit` brackets, before a recursive parser meets it.

    Strings (and TOML comments) are blanked first, so a bracket inside a string does not count; the
    scan is linear and runs in C except for one pass over the bracket characters.
    """
    if text.count("[") + text.count("{") <= limit:
        return
    blanked = _STRINGS[syntax].sub(lambda m: _NOT_NEWLINE.sub(" ", m.group()), text)
    brackets = _NOT_BRACKET.sub("", blanked)
    if max(accumulate(map(_STEP.__getitem__, brackets)), default=0) <= limit:
        return
    depth = 0
    for match in _BRACKET.finditer(blanked):
        depth += _STEP[match.group()]
        if depth > limit:
            line = f", line {blanked.count(chr(10), 0, match.start()) + 1}" if "\n" in blanked else ""
            raise refuse(door, f"{where}{line}", f"brackets nest more than {limit} deep", f"{syntax.upper()} nested at most {limit} deep")


def load_json(text: str, where: str, *, door: str) -> Any:
    """JSON after the nesting pre-scan; a syntax error names its line and column."""
    import json

    check_nesting(text, where, door=door, syntax="json")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise refuse(door, f"{where}, line {exc.lineno}", f"is not valid JSON ({exc.msg}, column {exc.colno})", "JSON") from None
    except (ValueError, RecursionError) as exc:  # int digit limits; a nesting the pre-scan missed
        raise refuse(door, where, f"is not usable JSON ({exc})", "JSON") from None


def load_toml(text: str, where: str, *, door: str) -> dict[str, Any]:
    """TOML after the nesting pre-scan; a syntax error names what tomllib found."""
    import tomllib

    check_nesting(text, where, door=door, syntax="toml")
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise refuse(door, where, f"is not valid TOML ({exc})", "TOML") from None
    except (ValueError, RecursionError) as exc:
        raise refuse(door, where, f"is not usable TOML ({exc})", "TOML") from None


def finite(value: Any, where: str, *, door: str, low: float = -math.inf, high: float = math.inf, unit: str = "", why: str = "") -> float:
    """A finite number (int or float, not a bool) within [low, high]; `why` says where a limit comes from."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise refuse(door, where, f"is {_shown(value)}", f"a number{_range(low, high, unit)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise refuse(door, where, f"is {value!r}", f"a finite number{_range(low, high, unit)}")
    if not low <= value <= high:
        reason = f" ({why})" if why else ""
        raise refuse(door, where, f"is {_shown(value)}{' ' + unit if unit else ''}, out of range{reason}", f"a number{_range(low, high, unit)}")
    return float(value)


def whole(value: Any, where: str, *, door: str, low: int = 0, high: int = MAX_INT64, unit: str = "", why: str = "") -> int:
    """A whole number (an int, or a float with no fraction) within [low, high]."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer() and abs(value) <= 2**63:
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise refuse(door, where, f"is {_shown(value)}", f"a whole number{_range(low, high, unit)}")
    if not low <= value <= high:
        reason = f" ({why})" if why else ""
        raise refuse(door, where, f"is {_shown(value)}{' ' + unit if unit else ''}, out of range{reason}", f"a whole number{_range(low, high, unit)}")
    return value


def json_numbers(value: Any, where: str, *, door: str, path: str = "$") -> None:
    """Every number in a parsed JSON value finite and every integer within 64 bits, or the JSON path at fault.

    Iterative (the depth is already bounded, but a wide file should not cost a frame per item).
    """
    stack: list[tuple[str, Any]] = [(path, value)]
    while stack:
        here, item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            raise refuse(door, f"{where}: field {here}", f"is {item!r}", "a finite number")
        if isinstance(item, int) and not isinstance(item, bool) and not -MAX_INT64 - 1 <= item <= MAX_INT64:
            raise refuse(door, f"{where}: field {here}", f"is {_shown(item)}, beyond a 64-bit integer", "a count that fits a 64-bit integer")
        if isinstance(item, Mapping):
            stack.extend((f"{here}.{k}", v) for k, v in item.items())
        elif isinstance(item, list | tuple):
            stack.extend((f"{here}[{i}]", v) for i, v in enumerate(item))


def _shown(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**15:
        return f"about 1e{len(str(abs(value))) - 1}" if abs(value) < 10**4000 else "a number of over 4,000 digits"
    if isinstance(value, str | int | float | bool) or value is None:
        text = repr(value)
        return text if len(text) <= 40 else text[:37] + "..."
    return f"a {type(value).__name__}" if not isinstance(value, Mapping) else "an object"


def _range(low: float, high: float, unit: str) -> str:
    suffix = f" {unit}" if unit else ""
    if low > -math.inf and high < math.inf:
        return f" from {low:,g} to {high:,g}{suffix}"
    if low > -math.inf:
        return f" of at least {low:,g}{suffix}"
    if high < math.inf:
        return f" of at most {high:,g}{suffix}"
    return suffix and f" in{suffix}"


__all__ = [
    "MAX_INT64", "MAX_NESTING_DEPTH", "check_nesting", "decode_text", "finite", "json_numbers", "load_json", "load_toml",
    "read_bytes", "read_text", "refuse", "whole",
]
