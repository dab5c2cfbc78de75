"""A cache of parsed catalog files, so a quick CLI call does not re-parse ~165 kB of TOML.

Parsing the shipped catalogs with `tomllib` took about 80 ms of every `tokometer estimate`; the
parsed tables are plain data (dicts, lists, strings, numbers, booleans), which `marshal` stores
and loads in well under a millisecond. Only the TOML parse is cached: validation and the value
objects are still built from the data on every call, so a cached file is checked exactly like a
fresh one, and no class layout is frozen into the cache.

Each source file gets one cache file, named by a hash of its absolute path, holding
(format, package version, path, mtime_ns, size, data). A lookup whose stored key differs from the
file's current `stat()` (it was edited, replaced or upgraded) parses again and rewrites the entry.
Anything unreadable (a truncated or corrupt cache file, another format, a read-only or missing
folder) falls back to parsing: the cache can make a call faster, never wrong or failing.

Where: `$TOKOMETER_HOME/cache/` when TOKOMETER_HOME is set (tests point it at a temp folder),
else `$XDG_CACHE_HOME/tokometer/`, else `~/.cache/tokometer/`. TOKOMETER_CATALOG_CACHE=0 turns
it off (benchmarks/cli_startup.py uses that for its "before" figure).
"""

from __future__ import annotations

import marshal
import os
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tokometer import __version__

FORMAT = "tokometer-catalog-cache-1"


def cache_dir() -> Path:
    """The folder of the parsed-catalog cache (see the module docstring)."""
    home = os.environ.get("TOKOMETER_HOME")
    if home:
        return Path(home).expanduser() / "cache"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tokometer"


def enabled() -> bool:
    return os.environ.get("TOKOMETER_CATALOG_CACHE", "1").strip().lower() not in ("0", "false", "no", "off")


def _entry_path(source: Path) -> Path:
    digest = zlib.crc32(str(source).encode("utf-8", "surrogatepass"))
    return cache_dir() / f"{source.stem}-{digest:08x}.marshal"


def _key(source: Path) -> tuple[str, str, str, int, int]:
    stat = source.stat()
    return (FORMAT, __version__, str(source), stat.st_mtime_ns, stat.st_size)


def _read(entry: Path, key: tuple[str, str, str, int, int]) -> dict[str, Any] | None:
    try:
        stored = marshal.loads(entry.read_bytes())
    except (OSError, EOFError, ValueError, TypeError):
        return None
    if not (isinstance(stored, tuple) and len(stored) == 2 and stored[0] == key and isinstance(stored[1], dict)):
        return None
    data: dict[str, Any] = stored[1]
    return data


def _write(entry: Path, key: tuple[str, str, str, int, int], data: dict[str, Any]) -> None:
    try:
        blob = marshal.dumps((key, data))
    except ValueError:  # a value marshal cannot store (a TOML date): parse this file every time
        return
    tmp = entry.with_name(f"{entry.name}.{os.getpid()}.tmp")
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(blob)
        os.replace(tmp, entry)  # atomic: a reader sees the old entry or the new one, never half
    except OSError:
        try:
            tmp.unlink()
        except OSError:
            pass


def load_parsed(source: Path, parse: Callable[[Path], dict[str, Any]]) -> dict[str, Any]:
    """`parse(source)`, or its stored result when `source` has not changed since it was stored.

    `parse` raises for a malformed file; nothing is stored then, so the error repeats every call.
    """
    if not enabled():
        return parse(source)
    source = source.resolve()
    try:
        key = _key(source)
    except OSError:
        return parse(source)  # let the parser report the missing or unreadable file
    entry = _entry_path(source)
    cached = _read(entry, key)
    if cached is not None:
        return cached
    data = parse(source)
    _write(entry, key, data)
    return data
