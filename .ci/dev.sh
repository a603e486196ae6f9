#!/usr/bin/env bash
# One entry point for a fresh Debian 12 machine: installs the packages, configures, builds, runs.
#   .ci/dev.sh demo   Release build in build/, then the main job on sample_data/
#   .ci/dev.sh test   ASan/UBSan build in build-test/, then every test (ctest)
#   .ci/dev.sh deps   only the packages
# Works as root (CI) and as a user with sudo. CUDA is used when /usr/local/cuda/bin/nvcc exists.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(build-essential cmake ninja-build pkg-config git
  libcli11-dev nlohmann-json3-dev doctest-dev
  libpng-dev libturbojpeg0-dev libjpeg62-turbo-dev libwebp-dev zlib1g-dev libisal-dev libdeflate-dev
  python3 python3-numpy python3-pil man-db)

install_packages() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  ((${#missing[@]} == 0)) && return 0
  local sudo=""
  [[ $(id -u) -eq 0 ]] || sudo="sudo"
  echo "installing: ${missing[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

jobs=$(nproc)

build() {  # build DIR [cmake args...]
  local dir=$1
  shift
  cmake -S . -B "$dir" -G Ninja "$@" >"$dir.configure.log" 2>&1 || { cat "$dir.configure.log"; exit 1; }
  grep -E '^-- (dlprep|  [A-Z]+:)' "$dir.configure.log" >&2 || true
  cmake --build "$dir" -j "$jobs"
}

case "${1:-}" in
  deps)
    install_packages
    ;;
  demo)
    install_packages
    build build -DCMAKE_BUILD_TYPE=Release -DDLPREP_BUILD_TESTS=OFF
    exec tests/demo.sh build/dlprep sample_data/images build/demo
    ;;
  test)
    install_packages
    # -O1 -g1: what ASan recommends, with line-numbered stack traces; half the compile time of
    # -O2 -g (the header-only CLI11 costs ~30 s a file under the sanitizers at -O2), same test time.
    build build-test -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" \
      -DDLPREP_SANITIZE=ON
    cd build-test
    exec ctest --output-on-failure -j "$jobs"
    ;;
  *)
    echo "usage: .ci/dev.sh demo|test|deps" >&2
    exit 2
    ;;
esac
