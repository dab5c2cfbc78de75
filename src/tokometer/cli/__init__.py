"""The `tokometer` command: a click group whose subcommands load lazily, so a quick call stays quick.

Every user error (`TokometerError`) becomes at most `MAX_ERROR_LINES` lines on stderr and exit code
2, never a traceback; an `InputError` names parameters, which the line spells as the flags of the
command that ran. Anything else is our bug: one line saying so and exit 1 (`TOKOMETER_DEBUG=1`
shows the traceback).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from typing import Any

import click

from tokometer import __version__
from tokometer.errors import InputError, TokometerError

# command name -> "module:attribute"; a module that is not there is simply not offered.
COMMANDS: dict[str, str] = {
    "estimate": "tokometer.cli.estimate:estimate",
    "hardware": "tokometer.cli.catalogs:hardware",
    "models": "tokometer.cli.catalogs:models",
    "quants": "tokometer.cli.catalogs:quants",
    "engines": "tokometer.cli.catalogs:engines",
    "utilization": "tokometer.cli.explore:utilization",
    "fit": "tokometer.cli.explore:fit",
    "sweep": "tokometer.cli.explore:sweep",
    "validate": "tokometer.cli.validate:validate",
    "calibrate": "tokometer.cli.validate:calibrate",
    "bench": "tokometer.cli.bench:bench",
    "runs": "tokometer.cli.bench:runs",
    "probe": "tokometer.cli.bench:probe",
    "serve": "tokometer.cli.web:serve",
    "feel": "tokometer.cli.web:feel",
    # serving (issue 11)
    "simulate": "tokometer.cli.simulate:simulate",
    "plan": "tokometer.cli.plan:plan",
}


class LazyGroup(click.Group):
    invoked: click.Command | None = None  # the subcommand this run loaded, to name its flags in errors

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [name for name, target in COMMANDS.items() if _available(target)]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None or not _available(target):
            return None
        module_name, attr = target.split(":")
        command = getattr(importlib.import_module(module_name), attr)
        assert isinstance(command, click.Command)
        LazyGroup.invoked = command
        return command


def _available(target: str) -> bool:
    module_name, _ = target.split(":")
    try:
        return importlib.util.find_spec(module_name) is not None
    except ModuleNotFoundError:
        return False


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="tokometer")
def cli() -> None:
    """How fast will this model run on this hardware, why, and is my setup as fast as it should be?

    Decoding one token reads every active weight once, so a single stream's speed is bounded by
    memory bandwidth / bytes read per token. tokometer shows that ceiling next to a realistic
    estimate, for catalog models and hardware or your own numbers.
    """


def main(argv: list[str] | None = None) -> Any:
    try:
        return cli.main(args=argv, prog_name="tokometer", standalone_mode=False)
    except TokometerError as exc:
        click.echo(f"error: {_message(exc)}", err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.UsageError as exc:  # one line, like every other error, with where to look
        command = exc.ctx.command_path if exc.ctx is not None else "tokometer"
        click.echo(f"error: {_bounded(exc.format_message())} (see `{command} --help`)", err=True)
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(0)
    except Exception as exc:  # a bug of ours: say so in one line, the traceback only on request
        import os

        if os.environ.get("TOKOMETER_DEBUG"):
            raise
        click.echo(f"internal error (a bug in tokometer, please report it): {type(exc).__name__}: {str(exc)[:200]}", err=True)
        sys.exit(1)


MAX_ERROR_LINES = 3
MAX_ERROR_LINE_CHARS = 400


def _message(exc: TokometerError) -> str:
    """The error as a command-line user reads it: parameters named by the flags they typed."""
    if isinstance(exc, InputError) and LazyGroup.invoked is not None:
        from tokometer.cli.options import flag_names

        return _bounded(exc.render(flag_names(LazyGroup.invoked)))
    return _bounded(str(exc))


def _bounded(text: str) -> str:
    """At most `MAX_ERROR_LINES` lines of at most `MAX_ERROR_LINE_CHARS` characters each (a quoted
    hostile value must not flood the terminal)."""
    lines = [line if len(line) <= MAX_ERROR_LINE_CHARS else line[: MAX_ERROR_LINE_CHARS - 3] + "..." for line in text.splitlines() or [""]]
    return "\n".join(lines[:MAX_ERROR_LINES])
