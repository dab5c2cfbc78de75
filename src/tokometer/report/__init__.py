"""Rendering: one JSON shape, short human tables. No computation here."""
