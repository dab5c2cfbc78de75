"""The one JSON rendering of tokometer's data (`--json`, the web API, exported and rescued runs).

Non-finite floats become null (JSON has no NaN or infinity) and keys keep their order. It lives with the
shared vocabulary so that every layer that writes a record, the bench use case included, writes it the
same way.
"""

from __future__ import annotations

import json
import math
from typing import Any


def _clean(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


def to_json(data: Any) -> str:
    """The one JSON rendering: non-finite floats become null, keys keep their order."""
    return json.dumps(_clean(data), indent=2, ensure_ascii=False)
