"""GPU architecture families: the level of the fit between a hardware class and a device (docs/PHYSICS.md
section 4, "Architecture families").

A hardware class groups devices by memory technology (GDDR, HBM, unified memory); devices of one class still
differ by generation in what an engine realises of the datasheet: Apple M1 and M2 Ultra GPUs read their
unified memory through a die-to-die fabric and realise less of it than an M3 or M4, the M5 dispatches a
layer's kernels faster, and RDNA4's matrix cores run a prompt faster than RDNA3's at the same bandwidth. A
family is what a new device of that generation shares with the data, whatever publication measured it:
each `hardware.toml` entry names its family (`family = ...`), and the fit (`fitting.families_fit`) learns
one offset per family from its publications, shrunk toward 0 where they are few. CPUs have no family: the
cores that run them are named by their own entries.

Each family's source says which products the vendor builds on that architecture.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Final

from tokometer.domain.specs import Efficiency

FAMILIES: Final[dict[str, str]] = {
    "nvidia-pascal": "NVIDIA Pascal (GP10x): GeForce GTX 10 series, TITAN Xp, Tesla P100 "
    "(https://www.nvidia.com/en-us/data-center/tesla-p100/)",
    "nvidia-volta": "NVIDIA Volta (GV100): Tesla V100, TITAN V (https://www.nvidia.com/en-us/data-center/v100/)",
    "nvidia-turing": "NVIDIA Turing (TU10x/TU11x): GeForce RTX 20 and GTX 16 series, TITAN RTX, Quadro RTX, T4 "
    "(https://www.nvidia.com/en-us/geforce/turing/)",
    "nvidia-ampere": "NVIDIA Ampere (GA10x, GA100): GeForce RTX 30 series, RTX A-series, A10/A30/A40/A100, "
    "Jetson AGX Orin (https://www.nvidia.com/en-us/data-center/ampere-architecture/)",
    "nvidia-ada": "NVIDIA Ada Lovelace (AD10x): GeForce RTX 40 series, RTX Ada Generation, L4, L40, L40S "
    "(https://www.nvidia.com/en-us/geforce/ada-lovelace-architecture/)",
    "nvidia-hopper": "NVIDIA Hopper (GH100): H100, H200, H20, H800, GH200 "
    "(https://www.nvidia.com/en-us/data-center/technologies/hopper-architecture/)",
    "nvidia-blackwell": "NVIDIA Blackwell data-center parts (sm_100/sm_103): B200, B300, GB200, GB300 "
    "(https://www.nvidia.com/en-us/data-center/technologies/blackwell-architecture/)",
    "nvidia-blackwell-thor": "NVIDIA Blackwell in Jetson Thor (sm_110, an SoC GPU on LPDDR5X): Jetson AGX Thor "
    "(https://www.nvidia.com/en-us/autonomous-machines/embedded-systems/jetson-thor/)",
    "nvidia-blackwell-rtx": "NVIDIA Blackwell client and workstation parts (sm_120/sm_121): GeForce RTX 50 "
    "series, RTX PRO Blackwell, GB10 (DGX Spark) (https://www.nvidia.com/en-us/geforce/graphics-cards/50-series/)",
    "amd-gcn": "AMD GCN (Polaris, Vega): Radeon RX 580, Radeon Vega iGPUs (https://www.amd.com/en/products/graphics/desktops/radeon.html)",
    "amd-rdna1": "AMD RDNA (Navi 1x): Radeon RX 5000 series (https://www.amd.com/en/technologies/rdna)",
    "amd-rdna2": "AMD RDNA 2 (Navi 2x): Radeon RX 6000 series, Radeon 660M/680M iGPUs (https://www.amd.com/en/technologies/rdna)",
    "amd-rdna3": "AMD RDNA 3 (Navi 3x): Radeon RX 7000 series (https://www.amd.com/en/technologies/rdna)",
    "amd-rdna3.5": "AMD RDNA 3.5: Radeon 890M and 8060S iGPUs of Ryzen AI 300 and Ryzen AI Max "
    "(https://www.amd.com/en/products/processors/laptop/ryzen/ai-300-series.html)",
    "amd-rdna4": "AMD RDNA 4 (Navi 4x): Radeon RX 9000 series, Radeon AI PRO R9700 (https://www.amd.com/en/technologies/rdna)",
    "amd-cdna2": "AMD CDNA 2: Instinct MI210, MI250, MI250X (https://www.amd.com/en/technologies/cdna.html)",
    "amd-cdna3": "AMD CDNA 3: Instinct MI300X, MI325X (https://www.amd.com/en/technologies/cdna.html)",
    "amd-cdna4": "AMD CDNA 4: Instinct MI350X, MI355X (https://www.amd.com/en/technologies/cdna.html)",
    "intel-xe-hpg": "Intel Xe-HPG (Alchemist): Arc A-series "
    "(https://www.intel.com/content/www/us/en/products/docs/discrete-gpus/arc/desktop/a-series/overview.html)",
    "intel-xe2": "Intel Xe2 (Battlemage): Arc B-series, Arc Pro B-series "
    "(https://www.intel.com/content/www/us/en/products/docs/discrete-gpus/arc/desktop/b-series/overview.html)",
    "intel-gaudi": "Intel Gaudi accelerators (not a GPU architecture): Gaudi 2, Gaudi 3 "
    "(https://www.intel.com/content/www/us/en/products/details/processors/ai-accelerators/gaudi.html)",
    "apple-m1": "Apple M1 family GPU (M1, M1 Pro, M1 Max, M1 Ultra) (https://www.apple.com/newsroom/2022/03/apple-unveils-m1-ultra-the-worlds-most-powerful-chip-for-a-personal-computer/)",
    "apple-m2": "Apple M2 family GPU (M2, M2 Pro, M2 Max, M2 Ultra) (https://www.apple.com/newsroom/2023/06/apple-introduces-m2-ultra/)",
    "apple-m3": "Apple M3 family GPU with Dynamic Caching (M3, M3 Pro, M3 Max, M3 Ultra) "
    "(https://www.apple.com/newsroom/2023/10/apple-unveils-m3-m3-pro-and-m3-max-the-most-advanced-chips-for-a-personal-computer/)",
    "apple-m4": "Apple M4 family GPU (M4, M4 Pro, M4 Max) (https://www.apple.com/newsroom/2024/10/apple-introduces-m4-pro-and-m4-max/)",
    "apple-m5": "Apple M5 family GPU with a Neural Accelerator in each core (M5, M5 Pro, M5 Max) "
    "(https://www.apple.com/newsroom/2025/10/apple-unleashes-m5-the-next-big-leap-in-ai-performance-for-apple-silicon/)",
}


def gpu_family(family: str | None, backend: str) -> str | None:
    """The family whose offset a prediction takes: the device's, unless a CPU backend runs it (its cores, not its GPU)."""
    return None if backend == "cpu" else family


def family_scaled(eff: Efficiency, offsets: Mapping[str, Mapping[str, float]] | None, family: str | None) -> Efficiency:
    """`eff` on a device of `family`, with that family's fitted offsets (`fitting.families_fit.family_offsets`:
    u = log(predicted / measured time) of its publications' rows under their class's entry, shrunk toward 0).

    Decode: every fitted term of a step's time is multiplied by m = exp(-u_tg): the memory terms through the shares
    of bandwidth (eta_bw, eta_kv, and the KV stream cap C_kv divided by m), the fixed and ALU terms directly (tau_layer,
    tau_step, tau_expert, k_alu, s_dec, e_ecc). Prefill: the matmul and attention efficiencies are divided by
    p = exp(-u_pp) and the unfused score bytes multiplied by it (its fixed costs follow decode's m). Terms the engine
    documents rather than the fit (host sampling, launches) are left as they are. No offset: `eff` unchanged.
    """
    if not offsets or not family:
        return eff
    u_tg, u_pp = (offsets.get(metric, {}).get(family, 0.0) for metric in ("tg", "pp"))
    if not u_tg and not u_pp:
        return eff
    m, p = math.exp(-u_tg), math.exp(-u_pp)
    return replace(
        eff,
        bandwidth_fraction=eff.bandwidth_fraction / m,
        quantized_bandwidth_fraction=None if eff.quantized_bandwidth_fraction is None else eff.quantized_bandwidth_fraction / m,
        kv_bandwidth_fraction=None if eff.kv_bandwidth_fraction is None else eff.kv_bandwidth_fraction / m,
        kv_stream_gb_per_s=None if eff.kv_stream_gb_per_s is None else eff.kv_stream_gb_per_s / m,
        layer_overhead_us=eff.layer_overhead_us * m,
        step_overhead_us=eff.step_overhead_us * m,
        expert_overhead_us=eff.expert_overhead_us * m,
        decode_alu_flops_per_weight=eff.decode_alu_flops_per_weight * m,
        decode_score_bytes=eff.decode_score_bytes * m,
        inline_ecc_overhead=eff.inline_ecc_overhead * m,
        prefill_efficiency_max=eff.prefill_efficiency_max / p,
        quantized_prefill_efficiency_max=(
            None if eff.quantized_prefill_efficiency_max is None else eff.quantized_prefill_efficiency_max / p
        ),
        prefill_attention_fraction=None if eff.prefill_attention_fraction is None else eff.prefill_attention_fraction / p,
        attention_score_bytes=eff.attention_score_bytes * p,
        family_time_scales=(m, p),
        source=eff.source if round(1 / m, 2) == round(1 / p, 2) == 1.0 else
        f"{eff.source}; {family} family x{1 / m:.2f} decode, x{1 / p:.2f} prefill speed",
    )
