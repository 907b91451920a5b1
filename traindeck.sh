#!/usr/bin/env bash
# TrainDeck quick start.
#   ./traindeck.sh run    install what is missing, build, prepare the demo corpus and open the workbench
#                         with the demo experiment (no display: train the demo model headless)
#   ./traindeck.sh test   install what is missing, build, run every test (ctest)
#   ./traindeck.sh package  install what is missing, build, write build/traindeck_<version>_amd64.deb
#   ./traindeck.sh image [--tag T] [--builder podman|buildah|docker]
#                         build the traindeck-engine OCI image (FROM scratch, no registry) with podman:
#                         localhost/traindeck-engine:<version> (docs/containers.md)
# Debian 12. Packages are installed with apt-get (through sudo when not root).
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")"

what=${1:-run}
jobs=$(nproc 2>/dev/null || echo 2)

# Debian packages for building the engine and the desktop workbench, and for the tests.
BUILD_PKGS=(build-essential cmake ninja-build pkg-config git libopenblas-openmp-dev nlohmann-json3-dev
            libcli11-dev libsentencepiece-dev libsqlite3-dev zlib1g-dev libssl-dev fortunes
            qt6-base-dev qt6-svg-dev qt6-tools-dev qt6-tools-dev-tools qt6-l10n-tools libqcustomplot-dev
            libssh2-1-dev qtkeychain-qt6-dev libgloo-dev libcpp-httplib-dev
            qt6-translations-l10n  # Qt's own dialogs in the UI's language (the .deb Recommends it)
            ccache)  # compiles through it (CMakeLists.txt): a rebuild on this machine reuses its cache in ~/.cache/ccache
TEST_PKGS=(python3 python3-torch sentencepiece openssh-server openssh-client iproute2
           lintian appstream desktop-file-utils clang libclang-rt-14-dev protobuf-compiler prometheus
           slurm-wlm munge podman runc)  # a real Slurm and a real container runtime for the target tests

install_missing() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  local sudo=()
  [ "$(id -u)" -ne 0 ] && sudo=(sudo)
  echo "traindeck: installing Debian packages: ${missing[*]}" >&2
  "${sudo[@]}" apt-get update -q >&2
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
}

build() {
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRAINDECK_GUI=ON -DTRAINDECK_REMOTE=ON -DBUILD_TESTING="$1" >/dev/null
  cmake --build build -j "$jobs"
}

case "$what" in
  run)
    install_missing "${BUILD_PKGS[@]}"
    build OFF
    engine=build/engine/cli/traindeck-engine
    # The default corpus: the plain-text fortune files of Debian's fortunes package.
    corpus=/usr/share/games/fortunes
    data=data/fortunes-byte
    "$engine" prepare --input "$corpus" --out "$data" --tokenizer byte
    if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ] && [ "${TRAINDECK_HEADLESS:-0}" != 1 ]; then
      # The workbench, with the demo experiment ready on the fortunes dataset.
      echo "traindeck: opening the workbench (store data/traindeck.db)" >&2
      exec build/gui/app/traindeck --store data/traindeck.db --demo-dataset "$data"
    fi
    echo "traindeck: no display (DISPLAY and WAYLAND_DISPLAY are unset, or TRAINDECK_HEADLESS=1), so the workbench does not open;" \
         "running the headless demo instead. Open the workbench later with: build/gui/app/traindeck --store data/traindeck.db" >&2
    "$engine" plan --config resources/configs/demo.json --set "data.path=$data"
    run_id=demo-$(date +%Y%m%d-%H%M%S)
    train=("$engine" train --config resources/configs/demo.json --set "data.path=$data" --out "runs/$run_id"
           --db data/traindeck.db --experiment demo --no-events-stdout)
    echo "traindeck: training the demo model, run $run_id. Ctrl-C stops it at the next step with a checkpoint;" \
         "continue it with:" >&2
    echo "  ${train[*]} --resume" >&2
    "${train[@]}" --run-id "$run_id"
    "$engine" runs show "$run_id" --db data/traindeck.db
    ;;
  test)
    install_missing "${BUILD_PKGS[@]}" "${TEST_PKGS[@]}"
    build ON
    # Two tests at a time: most of the long ones wait on daemons (Slurm, sshd, podman), and their
    # fixtures name everything after the test's pid, so they do not collide (546 s instead of 945 s
    # on 2 cores; session 19's note).
    ctest --test-dir build --output-on-failure --timeout 900 --parallel 2
    ;;
  package)
    install_missing "${BUILD_PKGS[@]}"
    build OFF
    (cd build && cpack -G DEB >/dev/null)
    echo "traindeck: $(ls build/traindeck_*_amd64.deb); install it with: sudo apt install ./$(ls build/traindeck_*_amd64.deb)" >&2
    ;;
  image)
    # The engine bundle (remote/bundle.h) with this machine's glibc as an image; docs/containers.md.
    shift
    install_missing "${BUILD_PKGS[@]}" podman
    cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRAINDECK_GUI=ON -DTRAINDECK_REMOTE=ON >/dev/null
    cmake --build build -j "$jobs" --target traindeck-engine td_engine_image
    out=$(build/remote/td_engine_image --engine build/engine/cli/traindeck-engine --work build/engine-image "$@")
    tag=$(printf '%s\n' "$out" | sed -n 's/^image=//p')
    echo "traindeck: image $tag built; try it with: podman run --rm $tag --version" >&2
    echo "traindeck: carry it to a node with: podman save -o traindeck-engine.tar $tag, then there: podman load -i traindeck-engine.tar" >&2
    ;;
  *)
    echo "usage: $0 run|test|package|image" >&2
    exit 2
    ;;
esac
