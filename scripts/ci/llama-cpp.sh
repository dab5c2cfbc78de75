#!/usr/bin/env bash
# A real llama.cpp server for the slow end-to-end test (tests/e2e/test_llama_server.py):
# llama-cpp-python with its OpenAI-compatible server. pip builds it from source the first time
# (about 13 minutes on two cores) and reuses its wheel cache after that. With CI set, the test
# fails rather than skips when this install is missing.
set -euo pipefail
python -m pip install -q 'llama-cpp-python[server]'
python -c "import llama_cpp.server.app; import llama_cpp; print('llama-cpp-python', llama_cpp.__version__)"
