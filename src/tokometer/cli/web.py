"""`tokometer serve` (the local web app) and `tokometer feel` (speed feel in the terminal).

Starlette and uvicorn are imported inside `serve` only, so every other command stays quick.
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path
from urllib.parse import urlparse

import click

from tokometer.errors import InputError

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _bench_url(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> tuple[str, ...]:
    for value in values:
        parsed = urlparse(value)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise click.BadParameter(f"{value!r} is not an http(s) URL")
    return values


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to bind (keep the default: local only).")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(1, 65535), help="TCP port.")
@click.option(
    "--bench-url",
    "bench_urls",
    multiple=True,
    callback=_bench_url,
    help="An inference endpoint to list on the runs page (read-only; repeatable). The server never fetches URLs a page names.",
)
@click.option("--open", "open_browser", is_flag=True, help="Open the app in the default browser.")
@click.option("--log-level", default="warning", show_default=True, type=click.Choice(["critical", "error", "warning", "info", "debug"]))
def serve(host: str, port: int, bench_urls: tuple[str, ...], open_browser: bool, log_level: str) -> None:
    """Start the web app: calculators, plots, hardware panorama, speed feel and stored runs.

    Same library, same JSON as the CLI: GET or POST /api/estimate takes the arguments of
    `tokometer estimate` by their Python names (params_b, bits, bandwidth_gb_per_s, hw...).
    """
    import uvicorn

    from tokometer.web.app import LOOPBACK_NAMES, create_app

    # The Host header is checked on every bind: loopback answers only its own names; another
    # address also answers IP literals and this machine's names (a rebound DNS name never passes).
    names = list(LOOPBACK_NAMES) if host in LOOPBACK else [*LOOPBACK_NAMES, host, socket.gethostname(), socket.getfqdn()]
    app = create_app(bench_urls=bench_urls, allowed_hosts=names, allow_ip_literals=host not in LOOPBACK)
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{'localhost' if host == 'localhost' else shown}:{port}/"
    click.echo(f"tokometer web app on {url}  (Ctrl-C stops)")
    if host not in LOOPBACK:
        click.echo(f"warning: bound to {host}: anyone who can reach this machine can use the app", err=True)
    if open_browser:
        import webbrowser

        webbrowser.open(url)
    uvicorn.run(app, host=host, port=port, log_level=log_level)


@click.command()
@click.option("--rates", default="2,5,10,30,100", show_default=True, help="Token rates to compare, comma-separated, in tok/s.")
@click.option("--text", "text_file", type=click.Path(dir_okay=False, allow_dash=True, path_type=Path), help="A text to stream instead of the sample answer ('-' reads stdin).")
@click.option("--lang", default="en", show_default=True, type=click.Choice(["en", "fr"]), help="Language of the sample answer.")
@click.option("--seconds", default=10.0, show_default=True, type=float, help="How long to stream (and the 'shown after' column).")
@click.option("--animate/--no-animate", default=None, help="Stream in the terminal [default: when stdout is a terminal]; --no-animate prints the timing table without waiting.")
@click.option("--json", "as_json", is_flag=True, help="Print the timing table as JSON (no animation).")
def feel(rates: str, text_file: Path | None, lang: str, seconds: float, animate: bool | None, as_json: bool) -> None:
    """Feel token rates: the same answer streamed side by side at each rate.

    People read about 5-10 tok/s; below about 2-3 tok/s a streamed answer feels broken.
    Columns use plain ANSI cursor moves; in a dumb terminal one ticker line is redrawn instead.
    """
    from tokometer.api.feel import feel as feel_plan
    from tokometer.report.feel import animate as run_animation
    from tokometer.report.feel import render_plan

    body = None
    if str(text_file) == "-":
        body = sys.stdin.read()
    elif text_file is not None:
        try:
            body = text_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"cannot read {text_file}: {exc}") from None
    if body is not None and not body.strip():
        raise InputError("the text is empty")
    plan = feel_plan(rates, text=body, lang=lang, seconds=seconds)
    if as_json:
        click.echo(plan.to_json())
        return
    if animate is None:
        animate = sys.stdout.isatty()
    if animate:
        ansi = os.environ.get("TERM", "") not in ("", "dumb")
        try:
            run_animation(plan.text, [lane["rate_tok_s"] for lane in plan.plan["lanes"]], seconds, sys.stdout, ansi=ansi)
        except KeyboardInterrupt:
            click.echo("")
        click.echo("")
    click.echo(render_plan(dict(plan.plan)))
