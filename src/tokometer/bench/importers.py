"""Import other tools' results into tokometer's run shape, normalised to the formulas in metrics.py.

- `llama-bench -o json` (or `-o jsonl`): one request per repetition sample. `tg N` samples give
  decode speed (llama-bench's `N / t`: N tokens over N single-token steps, in-process: no HTTP, no
  sampling); `pp N` samples give prefill speed, and their time stands in for TTFT. `-d` depths
  become levels. Build, CPU/GPU, backend, model size and the rest are kept as server identity.
- `vllm bench serve --save-result` JSON: with `--save-detailed` the per-request `ttfts`, `itls`,
  `input_lens`, `output_lens` and `errors` are rebuilt into token timestamps and summarised by
  tokometer's own formulas; otherwise the file's medians are taken as they are.
- tokometer's own `runs export --format json` output (one run or a list), for moving runs.

A file is checked before it is converted: at most `MAX_IMPORT_BYTES`, valid JSON, every number a
number of the right sign, and no speed outside (0, `MAX_STREAM_TOK_S`]; anything else is one
`InputError` naming the file and the field, never a traceback and never a stored impossibility.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tokometer.bench.client import RequestRecord
from tokometer.bench.metrics import DEFINITIONS, stats
from tokometer.bench.plausibility import MAX_STREAM_TOK_S
from tokometer.bench.summary import summarize_levels, summarize_records
from tokometer.bench.trace import MAX_TOKENS_PER_REQUEST
from tokometer.errors import InputError
from tokometer.guard import MAX_INT64

_LLAMA_BENCH_IDENTITY = (
    "build_commit", "build_number", "cpu_info", "gpu_info", "backends", "model_filename", "model_type",
    "model_size", "model_n_params", "n_batch", "n_ubatch", "n_threads", "type_k", "type_v", "n_gpu_layers",
    "split_mode", "main_gpu", "flash_attn", "devices", "use_mmap", "embeddings",
)  # fmt: skip


MAX_IMPORT_BYTES = 512 << 20


def read_any(path: Path) -> Any:
    """The parsed JSON (or JSON Lines) of an import file, through the guarded door: a regular UTF-8
    file of at most `MAX_IMPORT_BYTES`, nested at most `guard.MAX_NESTING_DEPTH` deep, every number
    finite and every integer within 64 bits (SQLite's INTEGER)."""
    from tokometer.guard import check_nesting, decode_text, json_numbers, read_bytes

    raw = read_bytes(path, door="import", limit_bytes=MAX_IMPORT_BYTES, what="llama-bench, vllm bench or tokometer JSON")
    text = decode_text(raw, str(path), door="import", what="llama-bench, vllm bench or tokometer JSON (UTF-8)")
    check_nesting(text, str(path), door="import")
    data = _parse(path, text)
    json_numbers(data, f"{path}: this file is not a run", door="import")
    return data


def _parse(path: Path, text: str) -> Any:
    try:
        return json.loads(text)
    except RecursionError:
        raise InputError(f"{path}: JSON nested too deeply") from None
    except json.JSONDecodeError as exc:
        if text.lstrip().startswith("{") and "\n{" not in text.strip():
            raise InputError(f"{path} is not valid JSON (truncated?): {exc.msg} at line {exc.lineno}, column {exc.colno}") from None
    except ValueError as exc:  # an integer of more than 4,300 digits
        raise InputError(f"{path}: this file is not a run: {exc}") from None
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except (ValueError, RecursionError):
                raise InputError(f"{path}: line {number} is not JSON (expected llama-bench or vllm bench JSON)") from None
    return rows


def detect_format(data: Any) -> str:
    if isinstance(data, list) and data and all(isinstance(d, dict) for d in data):
        if all("samples_ts" in d or "avg_ts" in d for d in data):
            return "llama-bench"
        if all("summary" in d and "started_at" in d for d in data):
            return "tokometer"
    if isinstance(data, dict):
        if "summary" in data and "started_at" in data:
            return "tokometer"
        if "completed" in data and any(k in data for k in ("median_ttft_ms", "request_throughput", "ttfts")):
            return "vllm-bench"
    raise InputError("unrecognised file: expected `llama-bench -o json`, `vllm bench serve` JSON or a tokometer export")


class _Bad(ValueError):
    pass


def _number(value: Any, where: str, *, positive: bool = False, optional: bool = False) -> float | None:
    """A finite number >= 0 (> 0 when `positive`); None allowed when `optional`."""
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value or abs(value) == float("inf"):
        raise _Bad(f"{where} is {value!r}, expected a number")
    if value < 0 or (positive and value == 0):
        raise _Bad(f"{where} is {value!r}, expected a number {'above' if positive else 'of at least'} 0")
    return float(value)


def _speed(value: Any, where: str) -> None:
    speed = _number(value, where, positive=True)
    assert speed is not None
    if speed > MAX_STREAM_TOK_S:
        raise _Bad(f"{where} is {speed:,.0f} tok/s, beyond any hardware (over {MAX_STREAM_TOK_S:,.0f})")


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise _Bad(f"{where} is {type(value).__name__}, expected a list")
    return value


def _count(value: Any, where: str) -> None:
    """A token count: a whole number from 0 to `MAX_TOKENS_PER_REQUEST` (None: not given)."""
    if value is None:
        return
    _number(value, where)
    if value > MAX_TOKENS_PER_REQUEST or value != int(value):
        raise _Bad(f"{where} is {value!r}, expected a whole number of tokens of at most {MAX_TOKENS_PER_REQUEST:,}")


def check_llama_bench(tests: list[dict[str, Any]]) -> None:
    """Refuse a llama-bench file whose counts, times or speeds are not possible."""
    for i, test in enumerate(tests):
        for key in ("n_prompt", "n_gen", "n_depth"):
            _count(test.get(key), f"test {i} {key}")
        samples = test.get("samples_ts")
        for j, ts in enumerate(_list(samples, f"test {i} samples_ts") if samples is not None else [test.get("avg_ts")]):
            _speed(ts, f"test {i} samples_ts[{j}]")
        times = test.get("samples_ns")
        for j, ns in enumerate(_list(times, f"test {i} samples_ns") if times is not None else []):
            _number(ns, f"test {i} samples_ns[{j}]", positive=True)


def check_vllm_bench(result: dict[str, Any]) -> None:
    """Refuse a vllm bench file whose counts, times or speeds are not possible."""
    for key in ("completed", "failed", "num_prompts", "duration", "output_throughput", "request_throughput"):
        _number(result.get(key), key, optional=True)
    concurrency = result.get("max_concurrency")
    if concurrency is not None:
        _number(concurrency, "max_concurrency", positive=True)
    rate = result.get("request_rate")
    if rate is not None and rate not in ("inf", "Infinity"):
        if isinstance(rate, str):
            raise _Bad(f"request_rate is {rate!r}, expected a number or \"inf\"")
        _number(rate, "request_rate", positive=True)
    median_tpot = result.get("median_tpot_ms")
    if median_tpot is not None and _number(median_tpot, "median_tpot_ms", positive=True) is not None:
        _speed(1000.0 / median_tpot, "1000 / median_tpot_ms")
    if "ttfts" not in result and "itls" not in result:
        return
    ttfts = _list(result.get("ttfts"), "ttfts")
    itls = _list(result.get("itls"), "itls")
    outputs = result.get("output_lens")
    for name in ("output_lens", "input_lens", "errors", "start_times"):
        if result.get(name) is not None:
            _list(result[name], name)
    errors = result.get("errors") or []
    for i, ttft in enumerate(ttfts):
        failed = i < len(errors) and bool(errors[i])
        if failed:
            continue
        _number(ttft, f"ttfts[{i}]", optional=True)
        gaps = _list(itls[i], f"itls[{i}]") if i < len(itls) and itls[i] is not None else []
        total = 0.0
        for j, gap in enumerate(gaps):
            total += _number(gap, f"itls[{i}][{j}]") or 0.0
        out = outputs[i] if isinstance(outputs, list) and i < len(outputs) else None
        tokens = _number(out, f"output_lens[{i}]", optional=True)
        if gaps and total <= 0:
            raise _Bad(f"itls[{i}] adds up to {total!r} s over {len(gaps)} gaps, expected a positive time")
        if gaps:
            _speed(((tokens or len(gaps) + 1) - 1) / total, f"request {i}'s decode speed")
    for i, start in enumerate(result.get("start_times") or []):
        _number(start, f"start_times[{i}]")


def import_file(path: Path) -> list[dict[str, Any]]:
    """Runs (tokometer's stored shape) from one results file; a bad file is one InputError."""
    data = read_any(path)
    kind = detect_format(data)
    try:
        if kind == "llama-bench":
            check_llama_bench(data)
            runs = [from_llama_bench(data, source_file=path.name)]
        elif kind == "vllm-bench":
            check_vllm_bench(data)
            runs = [from_vllm_bench(data, source_file=path.name)]
        else:
            runs = data if isinstance(data, list) else [data]
            for run in runs:
                run.pop("id", None)
        for i, run in enumerate(runs):
            check_run(run, f"run {i}" if len(runs) > 1 else "")
    except _Bad as exc:
        raise InputError(f"{path}: this file is not a run: field {exc} (not imported)", field=str(path), door="import") from None
    except (TypeError, ValueError, KeyError, AttributeError, IndexError, OverflowError) as exc:
        raise InputError(f"{path}: not a valid {kind} file ({type(exc).__name__}: {exc})", field=str(path), door="import") from None
    return runs


# The columns of a stored request row (store.migrations) and the JSON types each takes: what the
# store writes into SQLite must be of its column's type, and a count must fit its INTEGER.
_REQUEST_FIELDS: dict[str, tuple[type, ...]] = {
    "seq": (int,), "phase": (str,), "label": (str,), "group": (int,), "ok": (bool,), "error_kind": (str,),
    "error": (str,), "t0_s": (int, float), "output_tokens": (int,), "output_tokens_source": (str,),
    "prompt_tokens": (int,), "cached_tokens": (int,), "finish_reason": (str,), "event_times_s": (list,),
    "event_tokens": (list,), "server_timings": (dict,), "metrics": (dict,), "params": (dict,), "decode": (dict,),
}
_RUN_OBJECTS = ("config", "server", "prediction", "grading", "definitions")
_RUN_TEXTS = ("started_at", "finished_at", "status", "url", "model", "mode", "protocol", "hardware", "source")


def _typed(value: Any, types: tuple[type, ...], where: str) -> None:
    if value is None:
        return
    if isinstance(value, bool) and bool not in types:
        raise _Bad(f"{where} is {value!r}, expected {' or '.join(t.__name__ for t in types)}")
    if not isinstance(value, types):
        shown = repr(value) if isinstance(value, int | float | str) else f"a {type(value).__name__}"
        raise _Bad(f"{where} is {shown[:40]}, expected {' or '.join('an object' if t is dict else t.__name__ for t in types)}")


def check_run(run: Any, where: str) -> None:
    """A run in tokometer's shape (imported or converted): every part of the type the store writes.

    `summary`, a level's `summary` and a request must be objects, a request needs its `seq` and
    `phase`, counts are whole numbers within `MAX_TOKENS_PER_REQUEST`; then `RunRecord.from_dict`
    must accept it. Each failure names the field by its JSON path.
    """
    at = f"{where}." if where else ""
    if not isinstance(run, dict):
        raise _Bad(f"{where or 'the run'} is a {type(run).__name__}, expected an object")
    for key in _RUN_TEXTS:
        _typed(run.get(key), (str,), f"{at}{key}")
    for key in _RUN_OBJECTS:
        _typed(run.get(key), (dict,), f"{at}{key}")
    _check_summary(run.get("summary"), f"{at}summary")
    _typed(run.get("notes"), (list,), f"{at}notes")
    for i, note in enumerate(run.get("notes") or []):
        _typed(note, (str,), f"{at}notes[{i}]")
    _typed(run.get("levels"), (list,), f"{at}levels")
    for i, level in enumerate(run.get("levels") or []):
        _typed(level, (dict,), f"{at}levels[{i}]")
        _check_summary(level.get("summary"), f"{at}levels[{i}].summary")
        _typed(level.get("label"), (str,), f"{at}levels[{i}].label")
    _typed(run.get("requests"), (list,), f"{at}requests")
    for i, row in enumerate(run.get("requests") or []):
        here = f"{at}requests[{i}]"
        _typed(row, (dict,), here)
        for key in ("seq", "phase", "ok"):
            if row.get(key) is None:
                raise _Bad(f"{here}.{key} is missing")
        for key, types in _REQUEST_FIELDS.items():
            _typed(row.get(key), types, f"{here}.{key}")
        if not 0 <= row["seq"] <= MAX_INT64:
            raise _Bad(f"{here}.seq is {row['seq']}, expected a whole number from 0")
        for key in ("output_tokens", "prompt_tokens", "cached_tokens"):
            _count(row.get(key), f"{here}.{key}")
        for key, types in (("event_times_s", (int, float)), ("event_tokens", (int,))):
            for j, item in enumerate(row.get(key) or []):
                _typed(item, types, f"{here}.{key}[{j}]")
    from tokometer.domain.runrecord import RunRecord

    try:
        RunRecord.from_dict(run).to_dict()
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        raise _Bad(f"{where or 'the run'}: {exc}") from None


def _check_summary(summary: Any, where: str) -> None:
    _typed(summary, (dict,), where)
    for key, value in (summary or {}).items():
        if key.endswith(("_tps", "_ms")) and key not in ("ttft_prompt_tokens",):
            _typed(value, (dict, int, float), f"{where}.{key}")
        if isinstance(value, dict) and key in ("finish_reasons", "errors"):
            for name, count in value.items():
                _typed(count, (int,), f"{where}.{key}.{name}")
        elif isinstance(value, dict):
            for name, number in value.items():
                _typed(number, (int, float), f"{where}.{key}.{name}")
        elif key.startswith("requests_"):
            _typed(value, (int,), f"{where}.{key}")


def _summary_from_rates(decode: Sequence[float], prefill: Sequence[float], prefill_ms: Sequence[float], prompt_tokens: float | None) -> dict[str, Any]:
    summary = summarize_records([])
    summary.update(
        {
            "requests_ok": len(decode) + len(prefill),
            "requests_total": len(decode) + len(prefill),
            "decode_tps": stats(decode),
            "prefill_tps": stats(prefill),
            "ttft_ms": stats(prefill_ms),
            "ttft_prompt_tokens": prompt_tokens,
            "output_tokens_source": "llama-bench",
        }
    )
    decode_stats = summary["decode_tps"]
    if decode_stats["median"]:
        summary["decode_spread_fraction"] = (decode_stats["max"] - decode_stats["min"]) / decode_stats["median"]
        summary["tpot_ms"] = stats(1000.0 / v for v in decode if v)
    return summary


def from_llama_bench(tests: list[dict[str, Any]], *, source_file: str = "") -> dict[str, Any]:
    requests: list[dict[str, Any]] = []
    depths = sorted({int(t.get("n_depth") or 0) for t in tests})
    seq = 0
    for test in tests:
        n_prompt, n_gen, depth = int(test.get("n_prompt") or 0), int(test.get("n_gen") or 0), int(test.get("n_depth") or 0)
        name = ("pp" + str(n_prompt) if n_prompt and not n_gen else "tg" + str(n_gen) if n_gen and not n_prompt else f"pp{n_prompt}+tg{n_gen}")
        name += f" @ d{depth}" if depth else ""
        phase = "decode" if n_gen and not n_prompt else "ttft" if n_prompt and not n_gen else "combined"
        samples_ts = test.get("samples_ts") or [test.get("avg_ts")]
        samples_ns = test.get("samples_ns") or [test.get("avg_ns")] * len(samples_ts)
        for ts, ns in zip(samples_ts, samples_ns, strict=False):
            if ts is None:
                continue
            metrics: dict[str, Any] = {"decode_tps": ts if phase == "decode" else None}
            if phase == "ttft":
                metrics.update({"prefill_tps": ts, "ttft_ms": ns / 1e6 if ns else None})
            requests.append(
                {
                    "seq": seq,
                    "phase": phase,
                    "label": f"depth={depth}" if len(depths) > 1 else "",
                    "ok": True,
                    "output_tokens": n_gen or None,
                    "output_tokens_source": "llama-bench",
                    "prompt_tokens": n_prompt or None,
                    "params": {"test": name, "n_depth": depth, "sample_ns": ns, "sample_ts": ts},
                    "metrics": metrics,
                }
            )
            seq += 1

    def summary_for(rows: list[dict[str, Any]]) -> dict[str, Any]:
        decode = [r["metrics"]["decode_tps"] for r in rows if r["phase"] == "decode"]
        pre = [r for r in rows if r["phase"] == "ttft"]
        prompt = statistics.median([r["prompt_tokens"] for r in pre]) if pre else None
        return _summary_from_rates(decode, [r["metrics"]["prefill_tps"] for r in pre], [r["metrics"]["ttft_ms"] for r in pre if r["metrics"]["ttft_ms"]], prompt)

    first = tests[0] if tests else {}
    levels = []
    if len(depths) > 1:
        for depth in depths:
            rows = [r for r in requests if r["params"]["n_depth"] == depth]
            levels.append({"label": f"depth={depth}", "depth": depth, "summary": summary_for(rows)})
    base = [r for r in requests if r["params"]["n_depth"] == depths[0]] if depths else requests
    model = first.get("model_type") or Path(str(first.get("model_filename") or "model")).name
    return {
        "started_at": first.get("test_time") or "",
        "finished_at": tests[-1].get("test_time") if tests else None,
        "status": "complete",
        "source": "llama-bench",
        "url": None,
        "model": model,
        "mode": "depth" if len(depths) > 1 else "speed",
        "protocol": "llama-bench",
        "config": {"imported_from": source_file, "tests": sorted({r["params"]["test"] for r in requests})},
        "server": {"engine": "llama.cpp (llama-bench, in-process)", "identity": {k: first[k] for k in _LLAMA_BENCH_IDENTITY if k in first}},
        "summary": summary_for(base),
        "levels": levels,
        "notes": [
            "imported from llama-bench: decode = tg samples (N tokens / N steps, in-process, no HTTP or sampling); "
            "TTFT = pp prompt-processing time (no first decode step)"
        ],
        "definitions": DEFINITIONS,
        "requests": requests,
    }


def from_vllm_bench(result: dict[str, Any], *, source_file: str = "") -> dict[str, Any]:
    ttfts = result.get("ttfts")
    itls = result.get("itls")
    rate = result.get("request_rate")
    concurrency = result.get("max_concurrency")
    if concurrency:
        label = f"concurrency={int(concurrency)}"
        mode = "concurrency"
    else:
        label = f"rate={float(rate)}" if isinstance(rate, int | float) else "rate=inf"
        mode = "rate"
    scalars = {k: v for k, v in result.items() if not isinstance(v, list | dict)}
    notes = []
    records: list[RequestRecord] = []
    if isinstance(ttfts, list) and isinstance(itls, list):
        errors = result.get("errors") or [""] * len(ttfts)
        outputs = result.get("output_lens") or [None] * len(ttfts)
        inputs = result.get("input_lens") or [None] * len(ttfts)
        starts = result.get("start_times") or [0.0] * len(ttfts)
        for i, (ttft, gaps) in enumerate(zip(ttfts, itls, strict=False)):
            ok = not (errors[i] if i < len(errors) else "") and ttft is not None and ttft > 0
            times: list[float] = []
            if ok:
                t0 = float(starts[i] if i < len(starts) else 0.0)
                t = t0 + float(ttft)
                times.append(t)
                for gap in gaps or []:
                    t += float(gap)
                    times.append(t)
            else:
                t0 = float(starts[i] if i < len(starts) else 0.0)
            out = outputs[i] if i < len(outputs) else None
            records.append(
                RequestRecord(
                    seq=i,
                    phase="concurrency" if concurrency else "rate",
                    label=label,
                    ok=ok,
                    t0=t0,
                    error=(errors[i] or "failed") if not ok and i < len(errors) else None,
                    error_kind="imported" if not ok else None,
                    t_end=times[-1] if times else None,
                    event_times=tuple(times),
                    events_total=len(times),
                    output_tokens=int(out) if out is not None and ok else None,
                    output_tokens_source="usage" if out is not None else "events",
                    prompt_tokens=inputs[i] if i < len(inputs) else None,
                )
            )
        summary = summarize_records(records)
        levels = summarize_levels(records)
        if "start_times" not in result:
            notes.append("vllm bench gave no start times: throughput and duration come from the file, not from timestamps")
            summary["duration_s"] = result.get("duration")
            summary["output_throughput_tps"] = result.get("output_throughput")
            summary["request_throughput_rps"] = result.get("request_throughput")
            for level in levels:
                level["summary"].update({k: summary[k] for k in ("duration_s", "output_throughput_tps", "request_throughput_rps")})
    else:
        notes.append("vllm bench result without --save-detailed: medians taken from the file")
        summary = summarize_records([])
        median_tpot = result.get("median_tpot_ms")
        completed = int(result.get("completed") or 0)
        failed = int(result.get("failed") or max(0, int(result.get("num_prompts") or completed) - completed))
        summary.update(
            {
                "requests_ok": completed,
                "requests_failed": failed,
                "requests_total": completed + failed,
                "decode_tps": _from_file(result, "tpot", invert=True),
                "ttft_ms": _from_file(result, "ttft"),
                "tpot_ms": _from_file(result, "tpot"),
                "itl_ms": _from_file(result, "itl"),
                "e2el_ms": _from_file(result, "e2el"),
                "duration_s": result.get("duration"),
                "output_throughput_tps": result.get("output_throughput"),
                "request_throughput_rps": result.get("request_throughput"),
                "output_tokens_source": "usage",
            }
        )
        if median_tpot is None:
            summary["decode_tps"] = stats([])
        levels = [{"label": label, label.split("=")[0]: concurrency or rate, "summary": dict(summary)}]
    for level in levels:
        level["summary"]["aggregate_tps"] = stats([result.get("output_throughput")])
    return {
        "started_at": _vllm_date(str(result.get("date") or "")),
        "finished_at": None,
        "status": "complete",
        "source": "vllm-bench",
        "url": result.get("base_url"),
        "model": result.get("model_id"),
        "mode": mode,
        "protocol": result.get("backend"),
        "config": {"imported_from": source_file, **{k: v for k, v in scalars.items() if not k.startswith(("mean_", "median_", "std_", "p9", "p5"))}},
        "server": {"engine": "vllm bench serve", "identity": {k: scalars[k] for k in ("backend", "tokenizer_id", "version") if k in scalars}},
        "summary": summary,
        "levels": levels,
        "notes": notes,
        "definitions": DEFINITIONS,
        "requests": [r.to_dict() for r in records],
    }


def _from_file(result: dict[str, Any], metric: str, *, invert: bool = False) -> dict[str, Any]:
    """vLLM's mean/median/std/p99 of one metric (ms), or their tok/s inverse for TPOT."""

    def get(stat: str) -> float | None:
        value = result.get(f"{stat}_{metric}_ms")
        if not isinstance(value, int | float):
            return None
        return (1000.0 / value if value else None) if invert else float(value)

    data = {"n": int(result.get("completed") or 0), "median": get("median"), "mean": get("mean"), "std": None if invert else get("std"), "min": None, "max": None, "p90": get("p90"), "p99": get("p99")}
    if invert:  # a high percentile of TPOT is a low percentile of speed
        data["p90"] = data["p99"] = None
    return data


def _vllm_date(text: str) -> str:
    """vLLM's `20250424-115851` -> ISO 8601 (UTC assumed)."""
    if len(text) == 15 and text[8] == "-":
        return f"{text[0:4]}-{text[4:6]}-{text[6:8]}T{text[9:11]}:{text[11:13]}:{text[13:15]}+00:00"
    return text
