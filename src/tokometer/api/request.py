"""The estimate's request as callers build it: `EstimateRequest` and its fields (name, kind, unit, group,
help), from which the CLI's options, the web's form checks and its OpenAPI schema are all made.

Light on purpose: it loads only the request's module, so a command's options cost no cost model.
"""

from __future__ import annotations

from tokometer.usecases.request import EstimateRequest, request_fields, request_schema

__all__ = ["EstimateRequest", "request_fields", "request_schema"]
