"""An estimate's warnings in words: each `usecases.notices` value as the line the CLI and JSON print.

The web page translates these lines by message id (web/static/i18n/messages.json), so a change of
wording here is a change there too.
"""

from __future__ import annotations

from tokometer.usecases.notices import (
    AssumedAcceptance,
    BareAllReduce,
    CpuSideShort,
    DoesNotFit,
    ExpertOffloadEngine,
    FormatSubstituted,
    LlamaCppRowSplit,
    MacosWorkingSet,
    Notice,
    PastContextLimit,
    UnevenHeads,
)


def notice_text(notice: Notice | str) -> str:
    """One warning as a sentence; a note that is already text is kept as it is."""
    match notice:
        case str():
            return notice
        case MacosWorkingSet(gpu_gb, ram_gb):
            return (
                f"macOS lets the GPU use about {gpu_gb:.1f} GB of the {ram_gb:g} GB by default "
                "(its working-set limit); after raising it with sudo sysctl iogpu.wired_limit_mb, pass --memory-gb"
            )
        case AssumedAcceptance(acceptance):
            return (
                f"acceptance {acceptance:g} assumed for speculative decoding; it depends on the text "
                "(code, JSON, low temperature: higher) - measure yours and pass --acceptance"
            )
        case DoesNotFit(need_gb, available_gb, devices, hardware_name, engine_name):
            where = f"{devices} x {hardware_name}" if devices > 1 else hardware_name
            return (
                f"does not fit: needs {need_gb:.1f} GB, {where} offers {available_gb:.1f} GB "
                f"to {engine_name}; the speed shown assumes it did"
            )
        case PastContextLimit(context_tokens, model_name, limit_tokens):
            return (
                f"{context_tokens:,} tokens of context is past {model_name}'s limit of {limit_tokens:,} tokens: "
                "the model cannot attend that far, so the speed there is only arithmetic"
            )
        case CpuSideShort(need_gb, available_gb, cpu_name):
            return f"the CPU side needs {need_gb:.1f} GB, {cpu_name} offers {available_gb:.1f} GB"
        case FormatSubstituted(engine_name, format_name, model_name, substitute_name):
            return (
                f"{engine_name} does not run {format_name} (the default format for {model_name}): "
                f"{substitute_name} assumed (pass --quant to choose)"
            )
        case ExpertOffloadEngine(engine_name):
            return (
                "expert offload is modelled as llama.cpp runs it (--n-cpu-moe, experts computed on the CPU); "
                f"{engine_name} may not offer it"
            )
        case UnevenHeads(n_heads, tp):
            return f"{n_heads} attention heads do not split evenly over --tp {tp} (vLLM refuses this)"
        case LlamaCppRowSplit():
            return "llama.cpp splits across GPUs by layer by default (that is --pp); --tp models its row split (-sm row)"
        case BareAllReduce():
            return "bare model: no hidden size, so all-reduces cost their latency only"
    raise TypeError(f"no words for {notice!r}")
