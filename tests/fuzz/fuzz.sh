#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with clang++ and runs each for a while
# (tests/fuzz/README.md). ctest runs it for 5 s a target (test fuzz_parsers); run it longer by hand:
#   tests/fuzz/fuzz.sh [--seconds 600] [--build-dir build/fuzz] [--jobs 2] [TARGET...]
# Exit 0: no finding; 1: a target found a crash (its input is under <build dir>/crashes/, the log
# beside it); 77: clang++ or libFuzzer is missing (skipped; the reason is printed).
set -euo pipefail
here=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
seconds=600
build="$here/../../build/fuzz"
jobs=2
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --build-dir) build=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    -h|--help) sed -n 2,7p "$0"; exit 0 ;;
    *) targets+=("$1"); shift ;;
  esac
done
[ ${#targets[@]} -gt 0 ] || targets=(config safetensors shard manifest events ckpt_listing probe)

cxx=$(command -v clang++ || command -v clang++-14 || true)
cc=$(command -v clang || command -v clang-14 || true)
if [ -z "$cxx" ] || [ -z "$cc" ]; then
  echo "SKIP: clang++ not found: the fuzz targets need clang's libFuzzer (apt-get install clang libclang-rt-14-dev)"
  exit 77
fi
mkdir -p "$build"
probe_dir=$(mktemp -d)
trap 'rm -rf "$probe_dir"' EXIT
echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' >"$probe_dir/p.cpp"
if ! "$cxx" -fsanitize=fuzzer,address,undefined "$probe_dir/p.cpp" -o "$probe_dir/p" 2>"$probe_dir/err"; then
  echo "SKIP: $cxx cannot link a libFuzzer target (apt-get install libclang-rt-14-dev): $(head -c 300 "$probe_dir/err")"
  exit 77
fi

launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache); fi
gen=()
if command -v ninja >/dev/null; then gen=(-G Ninja); fi
t0=$(date +%s)
cmake -S "$here" -B "$build" "${gen[@]}" "${launcher[@]}" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_C_COMPILER="$cc" \
  -DCMAKE_BUILD_TYPE= -DCMAKE_CXX_FLAGS=-O1 >"$build/configure.log" 2>&1 || { cat "$build/configure.log"; exit 1; }
cmake --build "$build" -j "$jobs" $(printf -- '--target fuzz_%s ' "${targets[@]}") >"$build/build.log" 2>&1 ||
  { tail -n 60 "$build/build.log"; exit 1; }
echo "built ${#targets[@]} fuzz targets with $cxx in $(( $(date +%s) - t0 )) s"

found=0
for t in "${targets[@]}"; do
  work="$build/corpus/$t"     # what the fuzzer adds; the committed seeds stay as they are
  crashes="$build/crashes"
  mkdir -p "$work" "$crashes"
  log="$build/fuzz_$t.log"
  set +e
  "$build/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$crashes/$t-" "$work" "$here/corpus/$t" >"$log" 2>&1
  rc=$?
  set -e
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 || true)
  if [ $rc -ne 0 ]; then
    found=1
    echo "fuzz_$t: FINDING after ${runs:-?} runs (exit $rc); log $log:"
    grep -E 'ERROR|SUMMARY|invariant|terminate|what\(\)|Test unit written' "$log" | head -n 20 || tail -n 30 "$log"
  else
    echo "fuzz_$t: ${runs:-?} runs in $seconds s, ${cov:-cov ?}, $(ls "$work" | wc -l) new inputs, no finding"
  fi
done
exit $found
