"""Engines fitted apart from the engine they are based on (`own_fit`, issue #25): mlx-vlm under mlx,
Ollama's own Go engine under Ollama (llama.cpp); how the reading picks the Ollama runner by architecture;
broken runs and runs paging past macOS's GPU working set left unscored with their reason."""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from tokometer.catalog import engine_catalog, hardware_catalog
from tokometer.catalog.efficiency import efficiency_for, fit_engine_id, group_key, lookup_keys
from tokometer.cli import cli
from tokometer.costmodel.layout import IDEAL
from tokometer.domain.specs import EngineSpec
from tokometer.errors import CatalogError
from tokometer.fitting.aliases import resolve_table
from tokometer.fitting.calibration import fit_table, lookup
from tokometer.fitting.features import Features, predicted_time
from tokometer.fitting.ollama_engine import OLLAMA_ENGINE, ollama_runner
from tokometer.fitting.rows import read_cases
from tokometer.fitting.validation import (
    estimate_kwargs,
    pages_past_working_set,
    predict_case,
    unsupported_setup,
)
from tokometer.usecases.estimate import estimate
from tokometer.usecases.request import EstimateRequest

HW = hardware_catalog().get("m3-max-40c-64gb")


class _Apart:
    """The engine catalog with `ids` fitted apart (`own_fit`), whatever engines.toml ships: the mechanism is
    tested on its own; whether the shipped fit uses it is a measured choice (docs/notes/notes_mlxvlm.md)."""

    def __init__(self, ids: tuple[str, ...]) -> None:
        self.ids = ids

    def _apart(self, found: EngineSpec | None) -> EngineSpec | None:
        return replace(found, own_fit=True) if found is not None and found.id in self.ids else found

    def find(self, name: str) -> EngineSpec | None:
        return self._apart(engine_catalog().find(name))

    def get(self, name: str) -> EngineSpec:
        found = self._apart(engine_catalog().get(name))
        assert found is not None
        return found


@pytest.fixture
def apart(monkeypatch: pytest.MonkeyPatch) -> _Apart:
    catalog = _Apart(("mlx-vlm", "ollama-engine"))
    monkeypatch.setattr("tokometer.catalog.efficiency.engine_catalog", lambda: catalog)
    return catalog
DATA = Path(__file__).resolve().parents[1] / "src" / "tokometer" / "calibration_data" / "published"
BASE = replace(IDEAL, bandwidth_fraction=0.8, layer_overhead_us=30.0, step_overhead_us=500.0)


def test_mlx_vlm_is_a_child_of_mlx() -> None:
    vlm = engine_catalog().get("mlx-vlm")
    assert vlm.based_on == "mlx"
    assert engine_catalog().find("MLX (mlx-vlm)") is vlm  # the published engine cell, before its "MLX" word
    if not vlm.own_fit:  # pooled with mlx (the shipped choice): its rows train and read mlx's entries
        assert group_key(vlm, HW) == "mlx/metal/apple"


def test_mlx_vlm_fitted_apart_has_its_own_keys(apart: _Apart) -> None:
    vlm = apart.get("mlx-vlm")
    assert group_key(vlm, HW) == "mlx-vlm/metal/apple"
    # a child that runs the parent's kernels still trains and reads the parent's entries
    assert fit_engine_id(engine_catalog().get("rapid-mlx")) == "mlx"
    assert group_key(engine_catalog().get("rapid-mlx"), HW) == "mlx/metal/apple"
    keys = lookup_keys(vlm, "metal", "apple")
    assert keys.index("mlx-vlm/*/*") < keys.index("mlx/metal/apple")


def test_ollama_engine_falls_back_through_ollama_to_llama_cpp(apart: _Apart) -> None:
    engine = apart.get(OLLAMA_ENGINE)
    assert engine.based_on == "ollama"
    assert fit_engine_id(engine_catalog().get("ollama")) == "llama-cpp"
    assert "llama-cpp/metal/apple" in lookup_keys(engine, "metal", "apple")
    # pooled (own_fit off), it trains and reads llama.cpp's entries through Ollama
    assert fit_engine_id(replace(engine, own_fit=False)) == "llama-cpp"


def test_catalog_rejects_own_fit_without_a_parent(tmp_path: Path) -> None:
    from tokometer.catalog import _make_engine

    raw = {
        "name": "x", "source": "s", "runtime_overhead_gb": 0.5, "usable_memory_fraction": 0.9, "kv_allocation": "contiguous",
        "own_fit": True, "efficiency": {"bandwidth_fraction": 0.8, "layer_overhead_us": 1.0, "step_overhead_us": 1.0,
                                        "prefill_efficiency_max": 0.5, "prefill_half_tokens": 1.0},
    }
    with pytest.raises(CatalogError, match="own_fit needs based_on"):
        _make_engine("x", raw, "engines.toml")


def test_unseen_child_borrows_the_parent_fit_with_a_band_widened_for_an_unseen_engine(apart: _Apart) -> None:
    vlm = apart.get("mlx-vlm")
    parent = replace(BASE, bandwidth_fraction=0.7, residual_log_sd=0.1, source="fitted")
    meta = {"unseen_engine_log_sd": 0.3}
    borrowed = efficiency_for(vlm, HW, entries={"mlx/metal/apple": parent}, meta=meta)
    assert borrowed.bandwidth_fraction == 0.7
    assert borrowed.residual_log_sd == pytest.approx((0.1**2 + 0.3**2) ** 0.5)
    assert "no measured rows for this engine" in borrowed.source
    # the parent engine itself reads its own entry unwidened
    mlx = efficiency_for(engine_catalog().get("mlx"), HW, entries={"mlx/metal/apple": parent}, meta=meta)
    assert mlx.residual_log_sd == pytest.approx(0.1)
    # once the child has rows of its own, it reads them
    own = replace(parent, bandwidth_fraction=0.35)
    found = efficiency_for(vlm, HW, entries={"mlx/metal/apple": parent, "mlx-vlm/*/*": own}, meta=meta)
    assert found.bandwidth_fraction == 0.35


@dataclass(frozen=True)
class _Row:
    metric: str = "tg"
    source: str = "S"

    def text(self, key: str) -> str:
        return self.source if key == "source_id" else ""


def _rows(engine: str, slowdown: float, n: int, seed: int) -> list[Features]:
    rng = random.Random(seed)
    truth = replace(BASE, bandwidth_fraction=0.8 / slowdown, step_overhead_us=500.0 * slowdown)
    rows = []
    for _ in range(n):
        f = Features(
            case=_Row(),  # type: ignore[arg-type]
            group=f"{engine}/metal/apple", engine_id=engine, backend="metal", hardware_id="m3-max-40c-64gb",
            prior=BASE, t_measured_s=1.0, memory_s=rng.uniform(2e-3, 5e-2), n_layers=rng.choice([28, 40, 60]),
        )
        rows.append(replace(f, t_measured_s=predicted_time(f, truth) * rng.uniform(0.97, 1.03)))
    return rows


def test_a_child_fitted_apart_no_longer_pulls_its_parents_entries(apart: _Apart) -> None:
    mlx = _rows("mlx", 1.0, 60, 1)
    vlm = _rows("mlx-vlm", 2.0, 60, 2)
    alone = fit_table(mlx)
    both = fit_table(mlx + vlm)
    assert both["mlx/metal/apple"].bandwidth_fraction == pytest.approx(alone["mlx/metal/apple"].bandwidth_fraction, rel=1e-6)
    # the child's own entry reads its rows (about 2x slower) and predicts them
    child = lookup(both, "mlx-vlm/metal/apple")
    parent = lookup(both, "mlx/metal/apple")
    assert child is not None and parent is not None
    ratio = [predicted_time(f, child) / predicted_time(f, parent) for f in vlm]
    assert 1.7 < sorted(ratio)[len(ratio) // 2] < 2.3
    errors = sorted(abs(predicted_time(f, child) / f.t_measured_s - 1) for f in vlm)
    assert errors[len(errors) // 2] < 0.05
    # a table without the child's rows still answers for it, with the parent's entry
    assert lookup(alone, "mlx-vlm/metal/apple") is alone["mlx/metal/apple"]


@pytest.mark.parametrize(
    ("model_type", "version", "date", "want"),
    [
        ("gemma4_text", "0.20.0", "", OLLAMA_ENGINE),  # gemma4 joined OllamaEngineRequired in v0.20.0
        ("gemma4_text", "0.19.0", "", "ollama"),
        ("qwen3_5_moe_text", "0.19.0", "", OLLAMA_ENGINE),  # qwen35moe since v0.17.1
        ("qwen3_moe", "", "2025-09-06", "ollama"),  # before v0.12.2 (2025-09-24), no version stated
        ("qwen3_moe", "", "2025-10-01", OLLAMA_ENGINE),
        ("qwen3_moe", "", "", "ollama"),  # neither version nor date: kept as stated
        ("llama", "0.23.1", "", "ollama"),  # llama runs on llama.cpp's runner
        (None, "0.23.1", "", "ollama"),
        # ollama/ollama PR #16031: from v0.30.0 every GGUF model runs on upstream llama-server, no Go engine
        ("qwen3_moe", "0.24.0", "", OLLAMA_ENGINE),
        ("qwen3_moe", "0.30.0", "", "ollama"),
        ("qwen3_5_moe_text", "0.32.15", "", "ollama"),
        ("gemma4_text", "", "2026-05-31", OLLAMA_ENGINE),  # no version: the date against v0.30.0's (2026-06-01)
        ("gemma4_text", "", "2026-06-01", "ollama"),
        ("gemma4_text", "not stated", "2026-09-14", "ollama"),
        ("gemma4_text", "", "2026-08", "ollama"),  # a month alone is read as the Go engine's own dates are
    ],
)
def test_ollama_runner_by_architecture_and_version(model_type: str | None, version: str, date: str, want: str) -> None:
    assert ollama_runner("ollama", model_type, version, date) == want


def test_ollama_runner_leaves_other_engines_alone() -> None:
    assert ollama_runner("llama-cpp", "gemma4_text", "0.23.1", "") == "llama-cpp"


def _case(tmp_path: Path, **cells: str) -> object:
    row = {
        "row_id": "T-1", "source_id": "T", "engine": "Ollama", "engine_version": "0.23.1", "hardware_id": "m3-max-40c-64gb",
        "n_devices": "1", "model": "gemma4:26b", "quant": "Q4_K_M", "batch_size": "1", "prompt_tokens": "512",
        "gen_tokens": "128", "metric": "tg", "unit": "tok/s", "value": "40", "measured_date": "2026-05-06",
    }
    row.update(cells)
    path = tmp_path / "rows.csv"
    path.write_text(",".join(row) + "\n" + ",".join(row.values()) + "\n", encoding="utf-8")
    return read_cases(path)[0]


def test_reading_names_ollamas_own_engine_for_its_architectures(tmp_path: Path) -> None:
    assert estimate_kwargs(_case(tmp_path))["engine"] == OLLAMA_ENGINE  # type: ignore[arg-type]
    assert estimate_kwargs(_case(tmp_path, engine_version="0.19.0"))["engine"] == "ollama"  # type: ignore[arg-type]
    assert estimate_kwargs(_case(tmp_path, model="llama-3.1-8b"))["engine"] == "ollama"  # type: ignore[arg-type]


def test_mlx_vlm_rows_read_as_mlx_vlm(tmp_path: Path) -> None:
    case = _case(tmp_path, engine="MLX (mlx-vlm)", engine_version="0.4.3", model="gemma-4-31b", quant="MLX 4bit")
    assert estimate_kwargs(case)["engine"] == "mlx-vlm"  # type: ignore[arg-type]


def test_listed_broken_runs_are_unscored_with_their_reason() -> None:
    cases = {c.row_id: c for c in read_cases(DATA / "ASLB-M3MAX.csv")}
    reason = unsupported_setup(cases["ASLB-M3MAX-0901"])
    assert reason is not None and reason.startswith("broken run:") and "14-57" in reason
    # the same setup at a shorter prompt stopped normally, but mlx-vlm's decode rows of this harness count
    # words, not tokens ([[unscorable_rows]]), so it is unscored for that reason, not as a broken run
    shorter = unsupported_setup(cases["ASLB-M3MAX-0892"])
    assert shorter is not None and "not tokens" in shorter and not shorter.startswith("broken run:")


def test_broken_run_entries_are_checked(tmp_path: Path) -> None:
    bad = tmp_path / "RESOLVE.toml"
    bad.write_text('[[broken_run]]\nsource = "A"\nrows = ["B-1"]\nreason = "r"\n', encoding="utf-8")
    with pytest.raises(CatalogError, match="not of A"):
        resolve_table(bad)
    bad.write_text('[[broken_run]]\nsource = "A"\nreason = "r"\n', encoding="utf-8")
    with pytest.raises(CatalogError, match="needs source, rows and reason"):
        resolve_table(bad)


def test_weights_past_the_default_gpu_working_set_are_not_scored_as_engine_speed() -> None:
    over = estimate(EstimateRequest(model="qwen3-coder-next", hw=HW, quant="q4_k_m"))  # 48.7 GB of a 48 GB set
    under = estimate(EstimateRequest(model="qwen3-coder-next", hw=HW, quant="mlx-4bit", engine="mlx"))
    reason = pages_past_working_set(over)
    assert reason is not None and "48.0 of 64 GB" in reason and "iogpu.wired_limit_mb" in reason
    assert pages_past_working_set(under) is None
    raised = estimate(EstimateRequest(model="qwen3-coder-next", hw=replace(HW, gpu_memory_limit_gb=56.0), quant="q4_k_m"))
    assert pages_past_working_set(raised) is None
    # not an Apple GPU: no working set of macOS's
    assert pages_past_working_set(estimate(EstimateRequest(model="qwen3-coder-next", hw=hardware_catalog().get("h100-sxm"), quant="q4_k_m"))) is None


def test_paging_rows_of_the_evidence_are_unscored_with_that_reason() -> None:
    cases = {c.row_id: c for c in read_cases(DATA / "ASLB-M3MAX.csv")}
    paging = predict_case(cases["ASLB-M3MAX-0370"])  # llama-server, Qwen3-Coder-Next Q4_K_M, 3.1 tok/s
    assert paging.predicted is not None and paging.reason is not None and "working set" in paging.reason
    fine = predict_case(cases["ASLB-M3MAX-0316"])  # mlx-lm, the 4-bit MLX checkpoint (44.8 GB) of the same model
    assert fine.reason is None


def test_estimate_warns_a_user_whose_model_exceeds_the_working_set() -> None:
    result = CliRunner().invoke(cli, ["estimate", "qwen3-coder-next", "--hw", "m3-max-40c-64gb", "-q", "q4_k_m"])
    assert result.exit_code == 0, result.output
    assert "DOES NOT FIT" in result.output
    assert "48.0 GB of the 64 GB" in result.output and "sudo sysctl iogpu.wired_limit_mb" in result.output
    raised = CliRunner().invoke(cli, ["estimate", "qwen3-coder-next", "--hw", "m3-max-40c-64gb", "-q", "q4_k_m", "--memory-gb", "58"])
    assert raised.exit_code == 0 and "DOES NOT FIT" not in raised.output


RTX3090 = hardware_catalog().get("rtx-3090")


def test_exllamav3_is_fitted_apart_from_exllamav2() -> None:
    """EXL3 (QTIP trellis) and EXL2 are different kernels: ExLlamaV3's rows train and read their own entries."""
    exl3 = engine_catalog().get("exllamav3")
    assert exl3.based_on == "exllamav2" and exl3.own_fit
    assert group_key(exl3, RTX3090) == "exllamav3/cuda/gddr-gpu"
    assert group_key(engine_catalog().get("exllamav2"), RTX3090) == "exllamav2/cuda/gddr-gpu"


def test_exllamav3_without_rows_reads_exllamav2_with_its_own_trellis_decode_work() -> None:
    exl3 = engine_catalog().get("exllamav3")
    documented = exl3.efficiency.decode_alu_flops_per_weight
    assert documented > 2.0  # more shader work per weight than one FMA: the trellis decode
    parent = replace(BASE, decode_alu_flops_per_weight=12.0, source="fitted")
    borrowed = efficiency_for(exl3, RTX3090, entries={"exllamav2/cuda/gddr-gpu": parent}, meta={})
    assert borrowed.decode_alu_flops_per_weight == documented
    assert borrowed.bandwidth_fraction == parent.bandwidth_fraction  # the rest is ExLlamaV2's fit
    assert "shader ops per weight" in borrowed.source
    # ExLlamaV2 itself reads its entry as fitted
    exl2 = efficiency_for(engine_catalog().get("exllamav2"), RTX3090, entries={"exllamav2/cuda/gddr-gpu": parent}, meta={})
    assert exl2.decode_alu_flops_per_weight == 12.0
    # a parent already costlier than the documented floor is kept
    heavy = replace(parent, decode_alu_flops_per_weight=documented * 2)
    assert efficiency_for(exl3, RTX3090, entries={"exllamav2/cuda/gddr-gpu": heavy}, meta={}).decode_alu_flops_per_weight == documented * 2
    # once ExLlamaV3 has rows of its own, its fitted entry is read as it is
    own = replace(parent, decode_alu_flops_per_weight=30.0)
    found = efficiency_for(exl3, RTX3090, entries={"exllamav2/cuda/gddr-gpu": parent, "exllamav3/*/*": own}, meta={})
    assert found.decode_alu_flops_per_weight == 30.0


def test_exllamav3_decodes_slower_than_exllamav2_on_the_same_card() -> None:
    """The documented trellis work makes an estimate of ExLlamaV3 on an RTX 3090 slower than ExLlamaV2's."""
    exl2 = estimate(EstimateRequest(model="llama-3.1-8b", hw=RTX3090, engine="exllamav2", bits=4.0))
    exl3 = estimate(EstimateRequest(model="llama-3.1-8b", hw=RTX3090, engine="exllamav3", bits=4.0))
    assert exl3.estimate_tok_s < 0.85 * exl2.estimate_tok_s


def test_a_pooled_engine_never_measured_reads_its_parents_entry_with_a_widened_band() -> None:
    """oMLX runs mlx-lm's kernels (pooled with mlx, not fitted apart) but its own server: a fit without any
    oMLX row says so with the engine level's spread, and the engines it did see read the entry as fitted."""
    from tokometer.fitting.calibration import fit_with_bands

    omlx = engine_catalog().get("omlx")
    assert not omlx.own_fit and omlx.based_on == "mlx"
    rows = [replace(f, row_engine="mlx") for f in _rows("mlx", 1.0, 40, 3)]
    table = fit_with_bands(rows)
    entry = table["mlx/metal/apple"]
    assert entry.engines_seen == ("mlx",)
    meta = {"unseen_engine_log_sd": 0.3}
    mlx = efficiency_for(engine_catalog().get("mlx"), HW, entries=table, meta=meta)
    assert mlx.residual_log_sd == pytest.approx(entry.residual_log_sd)
    unseen = efficiency_for(omlx, HW, entries=table, meta=meta)
    assert unseen.bandwidth_fraction == entry.bandwidth_fraction  # the parent's values...
    assert unseen.residual_log_sd == pytest.approx((entry.residual_log_sd**2 + 0.3**2) ** 0.5)  # ...a wider band
    assert "no measured rows for this engine" in unseen.source
    # once oMLX rows train the entry, oMLX reads it unwidened
    seen = fit_with_bands(rows + [replace(f, row_engine="omlx") for f in _rows("mlx", 1.0, 10, 4)])
    assert seen["mlx/metal/apple"].engines_seen == ("mlx", "omlx")
    assert efficiency_for(omlx, HW, entries=seen, meta=meta).residual_log_sd == pytest.approx(seen["mlx/metal/apple"].residual_log_sd)
    # a table that did not record its engines (older efficiency.toml) widens nothing
    old = {"mlx/metal/apple": replace(entry, engines_seen=())}
    assert efficiency_for(omlx, HW, entries=old, meta=meta).residual_log_sd == pytest.approx(entry.residual_log_sd)


def test_engines_seen_round_trips_through_the_table_file(tmp_path: Path) -> None:
    from tokometer.catalog.efficiency import fitted_table
    from tokometer.fitting.tablefile import write_table

    path = tmp_path / "efficiency.toml"
    entry = replace(BASE, source="fitted", engines_seen=("mlx", "mlx-vlm"))
    write_table(path, {"mlx/metal/apple": entry}, {"fitted_on": "2026-12-05"}, {})
    assert fitted_table(path).entries["mlx/metal/apple"].engines_seen == ("mlx", "mlx-vlm")
