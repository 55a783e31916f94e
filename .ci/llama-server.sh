#!/usr/bin/env bash
# Builds llama.cpp's `llama-server` from the llama-cpp-python source distribution (which vendors llama.cpp) and caches
# the binary outside the clone, keyed by version, so later runs skip the ~10-minute build. Prints the binary's path.
#
#   .ci/llama-server.sh            # build (or reuse) and print the path
#
# Needs: python3 with pip (to download the source with the ordinary client), cmake, a C++ compiler.
# The tests in tests/e2e/served.rs call this script; NEXTTOKEN_LLAMA_SERVER=/path/to/llama-server skips it entirely.
set -euo pipefail
VERSION=0.3.36
# Not -march=native on x86: there ggml turns on its AMX path, which crashes on virtualised Sapphire and Granite Rapids
# (llama.cpp issue 20824: its worker threads lack the tile-data permission); this project's CI saw llama-server die
# with SIGSEGV at its first pass on such an Intel VM. The tests need a working server, not its fastest build: AVX2.
case "$(uname -m)" in
  x86_64) ISA=(-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON
               -DGGML_AVX512=OFF -DGGML_AVX_VNNI=OFF) ;;
  *) ISA=(-DGGML_NATIVE=ON) ;;
esac
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/nexttoken/llama-server-$VERSION-noamx"
BIN="$CACHE/llama-server"
if [[ -x "$BIN" ]]; then
  echo "$BIN"
  exit 0
fi
for tool in cmake python3; do
  command -v "$tool" >/dev/null 2>&1 || { echo "llama-server.sh: '$tool' is not installed; install it and retry" >&2; exit 1; }
done
mkdir -p "$CACHE"
# One build at a time: a second caller waits for the first instead of building again.
exec 9>"$CACHE/.lock"
flock 9
if [[ -x "$BIN" ]]; then
  echo "$BIN"
  exit 0
fi
WORK="$(mktemp -d "$CACHE/build.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
echo "llama-server.sh: downloading llama-cpp-python==$VERSION source (once)" >&2
python3 -m pip download --quiet --no-deps --no-binary llama-cpp-python "llama-cpp-python==$VERSION" -d "$WORK" >&2
tar -xzf "$WORK"/llama_cpp_python-"$VERSION".tar.gz -C "$WORK"
SRC="$WORK/llama_cpp_python-$VERSION/vendor/llama.cpp"
echo "llama-server.sh: building llama-server (about 10 minutes on 2 cores; once)" >&2
cmake -S "$SRC" -B "$WORK/build" -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF "${ISA[@]}" \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DBUILD_SHARED_LIBS=OFF >&2
cmake --build "$WORK/build" --target llama-server -j"${NEXTTOKEN_BUILD_JOBS:-2}" >&2
# Atomic: copy beside the final name, then rename, so a half-written binary is never found.
cp "$WORK/build/bin/llama-server" "$BIN.tmp"
mv "$BIN.tmp" "$BIN"
echo "$BIN"
