#!/usr/bin/env bash
# Builds llama.cpp's own `llama-server` from the llama.cpp that node-llama-cpp bundles
# (node_modules/node-llama-cpp/llama/gitRelease.bundle), so `spark bench --scenario peer` compares
# Spark with plain llama-server built from the very same sources. Offline: nothing is downloaded.
#
# The build lives outside the repository, in ${SPARK_LLAMA_SERVER_CACHE:-~/.cache/spark/llama-server}/<commit>,
# and is reused when its binary already exists. Prints the binary's path on its last line.
# About 10 minutes on 2 cores. Never run from `npm test`.
#
#   scripts/build-llama-server.sh            # build (or reuse) and print the path
#   spark bench --scenario peer --peer-bin "$(scripts/build-llama-server.sh | tail -n1)"
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bundle="$repo_root/node_modules/node-llama-cpp/llama/gitRelease.bundle"
if [[ ! -f "$bundle" ]]; then
  echo "build-llama-server: $bundle not found (run npm install first)" >&2
  exit 1
fi

commit="$(git bundle list-heads "$bundle" | awk '$2 == "HEAD" { print $1 }')"
if [[ -z "$commit" ]]; then
  echo "build-llama-server: the bundle names no HEAD commit" >&2
  exit 1
fi

cache_root="${SPARK_LLAMA_SERVER_CACHE:-$HOME/.cache/spark/llama-server}"
dir="$cache_root/$commit"
binary="$dir/build/bin/llama-server"
if [[ -x "$binary" ]]; then
  echo "build-llama-server: reusing $binary" >&2
  echo "$binary"
  exit 0
fi

mkdir -p "$cache_root"
if [[ ! -d "$dir/src/.git" ]]; then
  rm -rf "$dir/src"
  git clone --quiet "$bundle" "$dir/src"
  git -C "$dir/src" checkout --quiet "$commit"
fi

jobs="${SPARK_BUILD_JOBS:-$(nproc)}"
generator=()
if command -v ninja >/dev/null; then generator=(-G Ninja); fi
cmake -S "$dir/src" -B "$dir/build" "${generator[@]}" \
  -DCMAKE_BUILD_TYPE=Release \
  -DGGML_NATIVE=ON \
  -DLLAMA_CURL=OFF \
  -DLLAMA_BUILD_TESTS=OFF \
  -DLLAMA_BUILD_EXAMPLES=OFF \
  -DLLAMA_BUILD_SERVER=ON \
  -DBUILD_SHARED_LIBS=OFF >&2
cmake --build "$dir/build" --target llama-server --parallel "$jobs" >&2

if [[ ! -x "$binary" ]]; then
  echo "build-llama-server: the build finished without $binary" >&2
  exit 1
fi
echo "$binary"
