"""Where tokometer keeps a user's state: one directory, moved as a whole by `TOKOMETER_HOME`.

It sits at the package top (not in `catalog/`) because catalogs, the run store and the probe all
write under it; tests point `TOKOMETER_HOME` at a temporary directory.
"""

from __future__ import annotations

import os
from pathlib import Path


def tokometer_home() -> Path:
    """The one directory that holds all user state (catalogs, runs, probe results).

    `$TOKOMETER_HOME` if set, else `$XDG_DATA_HOME/tokometer`, else `~/.local/share/tokometer`.
    """
    env = os.environ.get("TOKOMETER_HOME")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "tokometer"
