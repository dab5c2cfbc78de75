"""The base of every API result: `to_json()` is the text the CLI prints with `--json`."""

from __future__ import annotations

from typing import Any


def dumps(data: Any) -> str:
    """The CLI's JSON text of `data` (`report.text.to_json`: indented, NaN as null)."""
    from tokometer.domain.jsontext import to_json

    return to_json(data)


class JsonResult:
    """`to_json()` for a result whose `to_dict()` is the CLI's `--json` shape."""

    def to_dict(self) -> dict[str, Any]:
        raise NotImplementedError

    def to_json(self) -> str:
        """The text `tokometer <verb> --json` prints for the same inputs."""
        return dumps(self.to_dict())
