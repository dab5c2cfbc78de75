"""`tokometer hardware|models|quants|engines list|show`: browse the sourced catalogs."""

from __future__ import annotations

from typing import Any

import click

from tokometer.cli.options import json_option


def _emit(data: Any, as_json: bool, text: str) -> None:
    from tokometer.domain.jsontext import to_json

    click.echo(to_json(data) if as_json else text)


@click.group()
def hardware() -> None:
    """Accelerators and memory systems, with datasheet numbers and their sources."""


@hardware.command("list")
@click.option("--vendor", help="Only this vendor (nvidia, amd, intel, apple, generic).")
@click.option("--segment", help="Only this segment (desktop, laptop, workstation, datacenter, soc, server).")
@click.option("--sort", "sort_key", type=click.Choice(["id", "bandwidth", "memory", "year"]), default="id", show_default=True)
@json_option
def hardware_list(vendor: str | None, segment: str | None, sort_key: str, as_json: bool) -> None:
    """List hardware entries."""
    from tokometer.api.catalogs import list_catalog
    from tokometer.report.text import num, table

    listing = list_catalog("hardware", vendor=vendor, segment=segment, sort=sort_key)
    items = listing.items
    rows = [
        [h.id, h.name, num(h.memory_gb), num(h.memory_bandwidth_gb_per_s), num(h.fp16_tflops), h.segment]
        for h in items
    ]
    _emit(
        listing.to_dict()["hardware"],
        as_json,
        table(rows, ["id", "name", "memory GB", "bandwidth GB/s", "fp16 TFLOPS", "segment"]),
    )


@hardware.command("show")
@click.argument("name")
@json_option
def hardware_show(name: str, as_json: bool) -> None:
    """Show one hardware entry with every number and its source."""
    from tokometer.api.catalogs import show_hardware

    entry = show_hardware(name)
    text = "\n".join(f"{k}: {v}" for k, v in entry.data.items() if v not in (None, (), []))
    click.echo(entry.to_json() if as_json else text)


@click.group()
def models() -> None:
    """Model presets (Hugging Face config fields) and models read from files or the Hub."""


@models.command("list")
@json_option
def models_list(as_json: bool) -> None:
    """List model presets."""
    from tokometer.api.catalogs import list_catalog
    from tokometer.report.text import num, table

    listing = list_catalog("models")
    rows = []
    for p in listing.items:
        spec = p.spec
        rows.append(
            [p.id, p.name, spec.architecture, num(spec.total_params / 1e9), num(spec.active_params() / 1e9), str(spec.max_context_tokens or "-")]
        )
    _emit(listing.to_dict()["models"], as_json, table(rows, ["id", "name", "arch", "params B", "read/token B", "max ctx"]))


@models.command("show")
@click.argument("name")
@click.option("--kv-dtype", default="fp16", show_default=True, help="KV-cache dtype for the per-token figures.")
@json_option
def models_show(name: str, kv_dtype: str, as_json: bool) -> None:
    """Resolved architecture and accounting of a preset, config.json, folder, GGUF, safetensors or Hub id.

    NAME is a catalog name, a config.json, a model folder, a .gguf or .safetensors file, a
    model.safetensors.index.json, or a Hugging Face Hub id (owner/name[@revision]). Weight bytes
    are exact when read from files; otherwise parameters x the published format.
    """
    from tokometer.api.catalogs import show_model
    from tokometer.report.models import render_model_report

    entry = show_model(name, kv_dtype=kv_dtype)
    click.echo(entry.to_json() if as_json else render_model_report(dict(entry.data)))


@click.group()
def quants() -> None:
    """Weight and KV-cache formats with their bits per weight, scales included."""


@quants.command("list")
@json_option
def quants_list(as_json: bool) -> None:
    """List quantization formats."""
    from tokometer.api.catalogs import list_catalog
    from tokometer.report.text import table

    listing = list_catalog("quants")
    rows = [[q.id, q.name, f"{q.bits_per_weight:.4g}", q.usage, q.kind] for q in listing.items]
    _emit(listing.to_dict()["quants"], as_json, table(rows, ["id", "name", "bits/weight", "usage", "kind"]))


@click.group()
def engines() -> None:
    """Inference engines and their efficiency parameters."""


@engines.command("list")
@json_option
def engines_list(as_json: bool) -> None:
    """List engines with their default efficiency and the weight formats they run."""
    from tokometer.api.catalogs import list_catalog
    from tokometer.report.text import table

    listing = list_catalog("engines")
    items = listing.items
    rows = [
        [
            e.id,
            e.name,
            f"{e.efficiency.bandwidth_fraction:.0%}",
            f"{e.efficiency.layer_overhead_us:g}",
            f"{e.efficiency.step_overhead_us:g}",
            e.kv_allocation,
            ", ".join([*e.weight_formats, *(f"{f} (experimental)" for f in e.experimental_formats)]),
        ]
        for e in items
    ]
    _emit(
        listing.to_dict()["engines"],
        as_json,
        table(rows, ["id", "name", "bandwidth", "us/layer", "us/step", "KV", "weight formats"]),
    )
