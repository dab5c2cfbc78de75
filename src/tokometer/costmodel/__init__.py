"""The pure cost model: architecture accounting, bytes, FLOPs, roofline, memory. No I/O here."""
