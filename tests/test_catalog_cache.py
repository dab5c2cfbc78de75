"""The parsed-catalog cache: a changed file is parsed again, a corrupt cache entry falls back to
parsing, and a cached load gives exactly what a fresh parse gives."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tokometer.catalog import DATA_DIR, clear_caches, hardware_catalog
from tokometer.catalog import cache as catalog_cache

CARD = '[my-card]\nname = "My card"\nvendor = "nvidia"\nkind = "gpu"\nsegment = "desktop"\nmemory_gb = 12\nmemory_bandwidth_gb_per_s = {bw}\nlaunch_year = 2024\nsource = "https://example.org/my-card"\n'


class CountingParser:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, path: Path) -> dict[str, Any]:
        import tomllib

        self.calls += 1
        return tomllib.loads(path.read_text())


def test_a_second_load_reads_the_cache_and_matches_a_fresh_parse(tmp_path: Path) -> None:
    source = tmp_path / "hardware.toml"
    source.write_text(CARD.format(bw=500))
    parse = CountingParser()
    first = catalog_cache.load_parsed(source, parse)
    second = catalog_cache.load_parsed(source, parse)
    assert parse.calls == 1
    assert second == first and second["my-card"]["memory_bandwidth_gb_per_s"] == 500
    assert any(catalog_cache.cache_dir().glob("hardware-*.marshal"))


def test_a_changed_file_is_parsed_again(tmp_path: Path) -> None:
    source = tmp_path / "hardware.toml"
    source.write_text(CARD.format(bw=500))
    parse = CountingParser()
    catalog_cache.load_parsed(source, parse)
    stat = source.stat()
    source.write_text(CARD.format(bw=1500))
    os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same mtime: the size still differs
    assert catalog_cache.load_parsed(source, parse)["my-card"]["memory_bandwidth_gb_per_s"] == 1500
    source.write_text(CARD.format(bw=800))  # same size, new mtime
    os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    assert catalog_cache.load_parsed(source, parse)["my-card"]["memory_bandwidth_gb_per_s"] == 800
    assert parse.calls == 3


@pytest.mark.parametrize("garbage", [b"", b"\x00\x01garbage", b"\xe3" + b"\xff" * 40])
def test_a_corrupt_cache_entry_falls_back_to_parsing_and_is_repaired(tmp_path: Path, garbage: bytes) -> None:
    source = tmp_path / "models.toml"
    source.write_text('[m]\nname = "M"\n')
    parse = CountingParser()
    catalog_cache.load_parsed(source, parse)
    (entry,) = catalog_cache.cache_dir().glob("models-*.marshal")
    entry.write_bytes(garbage)
    assert catalog_cache.load_parsed(source, parse) == {"m": {"name": "M"}}
    assert parse.calls == 2
    assert catalog_cache.load_parsed(source, parse) == {"m": {"name": "M"}}
    assert parse.calls == 2  # the fallback rewrote a good entry


def test_an_unwritable_cache_folder_still_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder would go")
    monkeypatch.setenv("TOKOMETER_HOME", str(blocker))
    source = tmp_path / "quants.toml"
    source.write_text('[q]\nname = "Q"\n')
    parse = CountingParser()
    assert catalog_cache.load_parsed(source, parse) == {"q": {"name": "Q"}}
    assert catalog_cache.load_parsed(source, parse) == {"q": {"name": "Q"}}
    assert parse.calls == 2


def test_the_user_catalog_follows_an_edit_through_the_cache(isolated_home: Path) -> None:
    user = isolated_home / "hardware.toml"
    user.write_text(CARD.format(bw=500))
    assert hardware_catalog().get("my-card").memory_bandwidth_gb_per_s == 500
    user.write_text(CARD.format(bw=1500))
    clear_caches()  # a new process: only the file cache is left
    assert hardware_catalog().get("my-card").memory_bandwidth_gb_per_s == 1500
    assert len(list(catalog_cache.cache_dir().glob("hardware-*.marshal"))) == 2  # shipped + user


def test_cached_shipped_catalogs_equal_the_parsed_files() -> None:
    import tomllib

    for path in sorted(DATA_DIR.glob("*.toml")):
        fresh = tomllib.loads(path.read_text(encoding="utf-8"))
        catalog_cache.load_parsed(path, CountingParser())
        assert catalog_cache.load_parsed(path, CountingParser()) == fresh, path.name


def test_the_cache_can_be_turned_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOKOMETER_CATALOG_CACHE", "0")
    source = tmp_path / "engines.toml"
    source.write_text('[e]\nname = "E"\n')
    parse = CountingParser()
    catalog_cache.load_parsed(source, parse)
    catalog_cache.load_parsed(source, parse)
    assert parse.calls == 2 and not catalog_cache.cache_dir().exists()
