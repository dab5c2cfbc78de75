"""tokometer: how fast will this model run on this hardware, why, and is my setup as fast as it should be?

The public surface is small on purpose: `estimate` (and the value types it returns)
for library users; everything else is reached through the CLI or the web app.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
