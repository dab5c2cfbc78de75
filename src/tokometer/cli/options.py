"""Options shared by the commands that predict, derived from `EstimateRequest`'s fields.

Each field's metadata gives its flag, help and group; an option's destination is the field's name,
so `**options` passes straight into the request, and `flag_names` maps a parameter back to its flag.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

F = Callable[..., Any]


def request_options(group: str) -> Callable[[F], F]:
    """The click options of one group of `EstimateRequest` fields, in the order the request lists them."""

    def decorate(f: F) -> F:
        from tokometer.api.request import request_fields

        chosen = [fld for fld in request_fields() if fld.metadata.get("group") == group]
        for fld in reversed(chosen):
            f = _option(fld)(f)
        return f

    return decorate


def _option(fld: Any) -> Callable[[F], F]:
    meta = fld.metadata
    names = [n for n in (meta["short"], meta["flag"]) if n]
    kind = meta["kind"]
    kwargs: dict[str, Any] = {"help": meta["help"]}
    if meta["choices"]:
        kwargs["type"] = click.Choice(list(meta["choices"]))
    elif kind in ("float", "int"):
        kwargs["type"] = float if kind == "float" else int
    if meta["show_default"]:
        kwargs["default"] = fld.default
        kwargs["show_default"] = True
    return click.option(*names, fld.name, **kwargs)


model_options = request_options("model")
hardware_options = request_options("hardware")
engine_options = request_options("engine")
workload_options = request_options("workload")


def flag_names(command: click.Command) -> dict[str, str]:
    """Parameter name -> the flag a user types (`bits` -> `--bits`), for `InputError.render`."""
    names: dict[str, str] = {}
    commands = [command, *getattr(command, "commands", {}).values()]
    for cmd in commands:
        for param in cmd.params:
            if isinstance(param, click.Option) and param.name:
                names.setdefault(param.name, max(param.opts, key=len))
    return names


json_option = click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")


speculative_options = request_options("speculative")  # JSON: `speculative.*`
parallel_options = request_options("parallel")  # JSON: `parallel.*`
offload_options = request_options("offload")  # JSON: `offload.*`


def lever_options(f: F) -> F:
    """Speculative decoding, parallelism and CPU offload (docs/PHYSICS.md section 7); all off by default."""
    return speculative_options(parallel_options(offload_options(f)))


plot_option = click.option(
    "--plot",
    "plot_path",
    type=click.Path(dir_okay=False, writable=True),
    help="Write a figure (.png, .svg or .pdf): decode vs context, vs batch, a roofline, the offload curve.",
)
