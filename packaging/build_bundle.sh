#!/usr/bin/env bash
# Build the one-folder app bundle with PyInstaller and check it works headless.
# Usage (from the repository root, after the README's set-up):  bash packaging/build_bundle.sh
# Writes dist/style-studio/ and prints its size and the build time.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/pip install -q -e '.[package]'
start=$(date +%s)
.venv/bin/pyinstaller packaging/style-studio.spec --noconfirm --clean --log-level WARN \
    --distpath dist --workpath build/pyinstaller
end=$(date +%s)
app=dist/style-studio/style-studio
"$app" --version
out=$(mktemp -d)
"$app" render resources/samples/content/chelsea.png resources/samples/style/starry_night.jpg \
    -o "$out/bundle.png" --size 128 --iterations 10 --weights untrained --progress none
test -s "$out/bundle.png"
QT_QPA_PLATFORM=offscreen XDG_CONFIG_HOME="$out" timeout 20 "$app" && status=0 || status=$?
test "$status" = 124  # still running after 20 s: the window started and did not crash
echo "bundle: $(du -sh dist/style-studio | cut -f1) in dist/style-studio, built in $((end - start)) s"
