#!/usr/bin/env bash
# A real llama.cpp server for the slow end-to-end test (tests/e2e/test_llama_server.py):
# llama-cpp-python with its OpenAI-compatible server, built so that it runs on any x86-64 or
# arm64 machine, not only the one that compiled it.
#
# Why not a plain `pip install llama-cpp-python`: its default build passes -march=native
# (GGML_NATIVE=ON), so a CPU that advertises AMX or AVX-512 gets `tileloadd`/zmm instructions,
# and a VM that advertises them but traps them kills the server with "invalid opcode" in
# libggml-cpu.so. Here GGML_NATIVE is off, AVX-512 and AMX are off by name, and the x86
# baseline (AVX2, FMA, F16C, BMI2) is switched on only when /proc/cpuinfo lists it.
#
# pip keys its wheel cache on the sdist, not on CMAKE_ARGS, so a native wheel built earlier
# would be reused silently. This script therefore builds with --no-cache-dir into its own
# wheel folder, keyed by the version and the exact flags, under ~/.cache/tokometer, and
# reinstalls from there. The first build takes about 13 minutes on two cores; later runs
# reinstall the stored wheel in seconds. With CI set, the test fails rather than skips when
# this install is missing.
set -euo pipefail

VERSION="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
CACHE_ROOT="${XDG_CACHE_HOME:-$HOME/.cache}/tokometer/llama-cpp-wheels"

has_cpu_flag() { grep -qw "$1" /proc/cpuinfo 2>/dev/null; }
on_if_cpu_has() { if has_cpu_flag "$1"; then echo ON; else echo OFF; fi; }

flags=(-DGGML_NATIVE=OFF -DGGML_CCACHE=OFF)
case "$(uname -m)" in
  x86_64 | amd64)
    flags+=(
      -DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_BF16=OFF
      -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DGGML_AVX_VNNI=OFF
      -DGGML_AVX="$(on_if_cpu_has avx)" -DGGML_AVX2="$(on_if_cpu_has avx2)"
      -DGGML_FMA="$(on_if_cpu_has fma)" -DGGML_F16C="$(on_if_cpu_has f16c)"
      -DGGML_BMI2="$(on_if_cpu_has bmi2)" -DGGML_SSE42="$(on_if_cpu_has sse4_2)"
    )
    ;;
  aarch64 | arm64)
    # With GGML_NATIVE off and no GGML_CPU_ARM_ARCH, the compiler's baseline (armv8-a) is used,
    # which every arm64 CPU runs; TOKOMETER_ARM_ARCH (e.g. armv8.2-a+dotprod) opts into more.
    if [ -n "${TOKOMETER_ARM_ARCH:-}" ]; then flags+=(-DGGML_CPU_ARM_ARCH="$TOKOMETER_ARM_ARCH"); fi
    ;;
esac
CMAKE_ARGS="${flags[*]}"
key="$(printf '%s\n%s\n%s\n' "$VERSION" "$(python -c 'import sys; print(sys.implementation.cache_tag)')" "$CMAKE_ARGS" | sha256sum | cut -c1-16)"
wheel_dir="$CACHE_ROOT/$VERSION-$key"

echo "llama-cpp.sh: llama-cpp-python $VERSION, CMAKE_ARGS=$CMAKE_ARGS"
wheel="$(ls "$wheel_dir"/llama_cpp_python-*.whl 2>/dev/null | head -n 1 || true)"
if [ -z "$wheel" ]; then
  echo "llama-cpp.sh: building a portable wheel into $wheel_dir (about 13 minutes on two cores)"
  mkdir -p "$wheel_dir.partial"
  CMAKE_ARGS="$CMAKE_ARGS" FORCE_CMAKE=1 python -m pip wheel -q --no-cache-dir --no-deps \
    --no-binary llama-cpp-python -w "$wheel_dir.partial" "llama-cpp-python==$VERSION"
  rm -rf "$wheel_dir"
  mv "$wheel_dir.partial" "$wheel_dir"
  printf '%s\n' "$CMAKE_ARGS" >"$wheel_dir/CMAKE_ARGS"
  wheel="$(ls "$wheel_dir"/llama_cpp_python-*.whl | head -n 1)"
else
  echo "llama-cpp.sh: reusing $wheel"
fi

# --force-reinstall --no-deps replaces a native build of the same version already installed;
# the second install only adds the server's dependencies.
python -m pip install -q --force-reinstall --no-deps "$wheel"
python -m pip install -q "llama_cpp_python[server] @ file://$wheel"
python -c "import llama_cpp.server.app; import llama_cpp; print('llama-cpp-python', llama_cpp.__version__)"
