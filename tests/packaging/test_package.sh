#!/usr/bin/env bash
# The Debian package end to end: `cpack -G DEB` builds traindeck_<version>_amd64.deb; lintian
# reports no error and no warning other than those explained in packaging/lintian.md;
# appstreamcli and desktop-file-validate accept the metadata; the dependencies are runtime
# packages (no -dev); the man pages name every subcommand and option the programs' --help
# lists; and the package extracted into a temporary root runs: `traindeck-engine --version`
# prints the project version, `prepare` and a 6-step `train` complete, `traindeck --version`
# prints the same version.
#   test_package.sh BUILD_DIR SOURCE_DIR VERSION
set -euo pipefail
build=$(readlink -f "$1"); src=$(readlink -f "$2"); version=$3
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

echo "== cpack"
(cd "$tmp" && cpack -G DEB --config "$build/CPackConfig.cmake" -B "$tmp/out" >"$tmp/cpack.log" 2>&1) ||
  { cat "$tmp/cpack.log"; fail "cpack failed"; }
deb="$tmp/out/traindeck_${version}_amd64.deb"
[ -f "$deb" ] || { ls "$tmp/out"; fail "no $deb"; }
echo "$(basename "$deb"): $(du -k "$deb" | cut -f1) kB"

echo "== dependencies"
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
[ -n "$depends" ] || fail "no Depends field (dpkg-shlibdeps did not run)"
if grep -Eq -- '-dev( |,|$)' <<<"$depends"; then fail "a -dev package in Depends: $depends"; fi
for lib in libqt6widgets6 libsqlite3-0 libssh2-1 libopenblas0; do
  grep -q "$lib" <<<"$depends" || fail "Depends lacks $lib"
done

echo "== lintian"
# Tags kept on purpose are listed in packaging/lintian.md as "- `tag`: why".
mapfile -t allowed < <(sed -n 's/^- `\([a-z0-9-]*\)`:.*/\1/p' "$src/packaging/lintian.md")
lintian --allow-root --no-cfg --display-level '>=warning' "$deb" >"$tmp/lintian.log" 2>&1 || true
cat "$tmp/lintian.log"
while read -r level pkg tag rest; do
  case "$level" in
    E:) fail "lintian error: $tag $rest" ;;
    W:) printf '%s\n' "${allowed[@]}" | grep -qx "$tag" || fail "lintian warning not explained in packaging/lintian.md: $tag $rest" ;;
  esac
done <"$tmp/lintian.log"
grep -q '^E: \|^W: ' "$tmp/lintian.log" || echo "lintian: clean"

echo "== extract"
root="$tmp/root"
dpkg-deb -x "$deb" "$root"
appstreamcli validate --no-net "$root/usr/share/metainfo/io.github.traindeck.TrainDeck.metainfo.xml" ||
  fail "appstreamcli rejects the metainfo"
desktop-file-validate "$root/usr/share/applications/io.github.traindeck.TrainDeck.desktop" ||
  fail "desktop-file-validate rejects the desktop entry"
# A file manager passes a file to Exec's %f/%F/%u/%U and offers the app for the MimeType files:
# both only when traindeck takes a file argument (its --help lists "Arguments:").
desktop="$root/usr/share/applications/io.github.traindeck.TrainDeck.desktop"
gui_help=$(QT_QPA_PLATFORM=offscreen "$root/usr/bin/traindeck" --help)
if ! grep -q '^Arguments:' <<<"$gui_help"; then
  grep -Eq '^Exec=.*%[fFuU]' "$desktop" && fail "the desktop entry's Exec passes a file, but traindeck takes no file argument"
  grep -q '^MimeType=' "$desktop" && fail "the desktop entry claims MimeType files, but traindeck takes no file argument"
fi
for f in usr/bin/traindeck usr/bin/traindeck-engine usr/share/icons/hicolor/scalable/apps/traindeck.svg \
         usr/share/man/man1/traindeck-engine.1.gz usr/share/man/man1/traindeck.1.gz usr/share/doc/traindeck/copyright; do
  [ -e "$root/$f" ] || fail "the package lacks /$f"
done

engine="$root/usr/bin/traindeck-engine"
got=$("$engine" --version)
[ "$got" = "traindeck-engine $version" ] || fail "traindeck-engine --version printed '$got', expected 'traindeck-engine $version'"
got=$(QT_QPA_PLATFORM=offscreen "$root/usr/bin/traindeck" --version)
[ "$got" = "traindeck $version" ] || fail "traindeck --version printed '$got', expected 'traindeck $version'"

echo "== man pages name every subcommand and option of --help"
man_text=$(zcat "$root/usr/share/man/man1/traindeck-engine.1.gz" | sed 's/\\-/-/g')
subs=$("$engine" --help | sed -n '/^Subcommands:/,$p' | awk 'NR>1 && NF {print $1}')
for sub in $subs; do
  grep -q -- "$sub" <<<"$man_text" || fail "traindeck-engine.1 does not describe subcommand $sub"
  for opt in $("$engine" "$sub" --help | grep -o -- '--[a-z][a-z0-9-]*' | sort -u); do
    [ "$opt" = --help ] && continue
    grep -q -- "$opt" <<<"$man_text" || fail "traindeck-engine.1 does not describe $sub $opt"
  done
done
gui_man=$(zcat "$root/usr/share/man/man1/traindeck.1.gz" | sed 's/\\-/-/g')
for opt in $(QT_QPA_PLATFORM=offscreen "$root/usr/bin/traindeck" --help | grep -o -- '--[a-z][a-z0-9-]*' | sort -u); do
  grep -q -- "$opt" <<<"$gui_man" || fail "traindeck.1 does not describe $opt"
done

echo "== a short training with the extracted engine"
mkdir -p "$tmp/corpus"
for i in $(seq 1 200); do echo "line $i: the quick brown fox jumps over the lazy dog, and the run goes on."; done >"$tmp/corpus/a.txt"
"$engine" prepare --input "$tmp/corpus" --out "$tmp/data" --tokenizer byte --quiet
cat >"$tmp/tiny.json" <<JSON
{"model": {"vocab_size": 257, "seq_len": 32, "n_layer": 1, "n_head": 2, "d_model": 32},
 "train": {"steps": 6, "micro_batch": 4, "lr": 0.001, "warmup": 2, "min_lr": 0.0001, "threads": 1,
           "eval_interval": 3, "eval_batches": 2, "sample_interval": 0, "checkpoint_interval": 0},
 "data": {"path": "$tmp/data"}}
JSON
"$engine" train --config "$tmp/tiny.json" --out "$tmp/run" --run-id pkg-test --quiet --no-events-stdout
grep '"type":"run_end"' "$tmp/run/events.jsonl" | grep -q '"status":"completed"' || fail "the training did not complete"
steps=$(grep -c '"type":"step"' "$tmp/run/events.jsonl")
[ "$steps" -eq 6 ] || fail "expected 6 step events, got $steps"
# The engine trains on OpenBLAS's OpenMP build whichever build the system's alternative is
# (it re-executes itself with that build first when needed: engine/ops/blas_kernel.cpp).
# The last OpenBLAS initialised (after the re-exec, if there was one), resolved through the
# alternatives' symlinks, must be the OpenMP build.
loaded=$(LD_DEBUG=libs "$engine" --version 2>&1 | sed -n 's/.*calling init: \(.*libopenblas[^ ]*\).*/\1/p' | tail -n 1)
[ -n "$loaded" ] && readlink -f "$loaded" | grep -q '/openblas-openmp/' ||
  fail "the installed engine did not load OpenBLAS's OpenMP build"
echo "PASS: $(basename "$deb") builds, lints, validates, installs and trains"
