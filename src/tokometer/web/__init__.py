"""The local web app (`tokometer serve`): pages over the same library API and JSON shapes as the CLI.

`create_app()` lives in `tokometer.web.app` (it imports Starlette), imported on first use. The
handlers call the public API (`tokometer.api`), as the CLI does, never the use cases directly.
"""

from __future__ import annotations

from typing import Any

__all__ = ["create_app"]


def create_app(*args: Any, **kwargs: Any) -> Any:
    """`tokometer.web.app.create_app`, imported on first use."""
    from tokometer.web.app import create_app as make

    return make(*args, **kwargs)
