#!/usr/bin/env bash
# Build the wheel, install it into a fresh virtual environment, and use it
# the three ways a user would: the window, `render`, and `python -m`.
# Usage (from the repository root):  bash packaging/check_wheel.sh
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -m pip wheel --no-deps -q -w "$work/dist" .
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q "$work"/dist/style_studio-*.whl
cd "$work"  # away from the source tree: only the installed wheel can be imported
"$work/venv/bin/style-studio" --version
"$work/venv/bin/python" -m style_studio --version
content=$("$work/venv/bin/python" -c "from style_studio.resources import sample; print(sample('content', 'chelsea.png'))")
style=$("$work/venv/bin/python" -c "from style_studio.resources import sample; print(sample('style', 'starry_night.jpg'))")
case "$content" in "$work"/venv/*) ;; *) echo "samples not read from the wheel: $content"; exit 1;; esac
"$work/venv/bin/style-studio" render "$content" "$style" -o "$work/out.png" --size 64 --iterations 3 \
    --weights untrained --progress none
test -s "$work/out.png"
QT_QPA_PLATFORM=offscreen XDG_CONFIG_HOME="$work" timeout 15 "$work/venv/bin/style-studio" && status=0 || status=$?
test "$status" = 124  # still running after 15 s: the window opened on the samples and did not crash
echo "wheel OK: $(basename "$work"/dist/*.whl)"
