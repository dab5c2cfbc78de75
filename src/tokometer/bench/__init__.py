"""Measure real servers and grade them against the prediction (docs/PHYSICS.md, section 8).

Modules, from the wire up: `sse` (SSE/NDJSON framing), `protocols` (OpenAI chat/completions,
llama.cpp native, Ollama), `detect` (which protocol a URL speaks, who the server is), `client`
(one streaming request, timestamped on arrival), `metrics` (pure formulas over timestamps),
`summary`, `runner` (speed / depth / concurrency / rate / trace modes) with `plan` (what a
config asks for), `schedule` (when each mode sends its requests) and `prompt_counts`, `grading`
(share of the ceiling, MBU, MFU, flags), `probe` (this machine's bandwidth and FLOPs), `synthetic`
(a server streaming at a known rate, with fault injection), `importers` (llama-bench and vllm
bench results), `render` (text views of stored runs).

Nothing heavy is imported here, so `tokometer --help` stays fast.
"""

__all__ = [
    "client",
    "detect",
    "grading",
    "importers",
    "metrics",
    "plan",
    "probe",
    "prompt_counts",
    "prompts",
    "protocols",
    "render",
    "runner",
    "schedule",
    "sse",
    "summary",
    "synthetic",
]
