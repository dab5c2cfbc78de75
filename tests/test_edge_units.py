"""NVIDIA SoC SMs issue memory loads at their clock, and a publication's own harness can name its engine (issue 25).

The AGX Orin's MODE_30W runs 8 SMs at 612 MHz, MAXN 16 at 1.3 GHz; llama.cpp's F16 decode reads about
7.5 GB/s per SM in both (AGXORIN 24.1 tok/s x 2.47 GB on 8 SMs, KEVINHE 47.3 tok/s on 16), so the SM
count alone makes MODE_30W's limit tie MAXN's down. Counted at their clock as Apple's cores are, the two
publications agree with one b_unit. KEVINHE's harness samples every token through llama-cpp-python
(llama.cpp's sampler chain on the host), which is llama-server's host work, not llama-bench's.
"""

from __future__ import annotations

import pytest

from tokometer.calibration_data import PUBLISHED_DIR
from tokometer.catalog import hardware_catalog
from tokometer.domain.specs import NVIDIA_SOC_FP32_LANES_PER_SM, REFERENCE_UNIT_CLOCK_GHZ
from tokometer.fitting import aliases, rows, validation


def test_nvidia_soc_sms_count_at_the_clock_read_back_from_their_fp32_peak() -> None:
    cat = hardware_catalog()
    mode, maxn, spark = cat.get("jetson-agx-orin-64gb-30w"), cat.get("jetson-agx-orin-64gb"), cat.get("dgx-spark")
    assert mode.unit_clock_ghz == pytest.approx(0.612, rel=0.01)  # nvpmodel MODE_30W GPU MAX_FREQ
    assert maxn.unit_clock_ghz == pytest.approx(1.3, rel=0.01)  # MAXN
    assert mode.stream_units == pytest.approx(8 * mode.unit_clock_ghz / REFERENCE_UNIT_CLOCK_GHZ)
    assert (maxn.stream_units or 0) / (mode.stream_units or 1) == pytest.approx(16 * 1.3 / (8 * 0.612), rel=0.01)
    assert spark.unit_clock_ghz == pytest.approx(31.0e3 / (48 * NVIDIA_SOC_FP32_LANES_PER_SM * 2))
    for hw in cat:  # every NVIDIA SoC reads back the clock of a shipping part; discrete cards keep their SM count
        if hw.vendor == "nvidia" and hw.compute_units:
            if hw.kind == "apu":
                assert hw.unit_clock_ghz is not None and 0.5 < hw.unit_clock_ghz < 3.0, hw.id
            else:
                assert hw.unit_clock_ghz is None and hw.stream_units == hw.compute_units, hw.id


def _cases(name: str) -> list[rows.Case]:
    return rows.read_cases(PUBLISHED_DIR / name)


@pytest.mark.skipif(not (PUBLISHED_DIR / "KEVINHE-ORIN.csv").is_file(), reason="published evidence not shipped")
def test_kevinhe_rows_sample_on_the_host_as_llama_server_does() -> None:
    case = next(c for c in _cases("KEVINHE-ORIN.csv") if c.metric == "tg")
    assert aliases.source_engine_for(case) == "llama-server"
    request = validation.case_request(case, validation.resolve_case_hardware(case))
    assert request.engine == "llama-server"
    result = validation.predict_case(case)
    assert result.scored, result.reason


@pytest.mark.skipif(not (PUBLISHED_DIR / "AGXORIN-DEVKIT.csv").is_file(), reason="published evidence not shipped")
def test_a_source_specific_engine_entry_does_not_reach_other_publications() -> None:
    """AGXORIN's llama-bench rows name llama.cpp too; only KEVINHE's own RESOLVE entry reads it as llama-server."""
    case = next(c for c in _cases("AGXORIN-DEVKIT.csv") if "llama.cpp" in c.text("engine"))
    assert aliases.source_engine_for(case) is None
    assert validation.case_request(case, validation.resolve_case_hardware(case)).engine == "llama-cpp"
