#!/bin/bash
# The full default print-size render (issue #12): rocket.jpg in the style of the
# Starry Night at 4096 px, the default schedule (1024 -> 2048 -> 4096 px,
# 300 + 150 + 75 iterations), fp32, proxy weights. About 8 hours on a 2-core
# CPU without bf16, so it is made to be run in segments: run this again with
# the same folder and it resumes from the last checkpoint (saved every minute).
# Stop it with Ctrl+C, or from elsewhere with
#   kill -TERM $(pgrep -f 'bin/pytho[n].* render .*print-4096')
# (the render's own pid: the [n] keeps the pattern from matching the shell
# that runs this line, and a pattern that also matched /usr/bin/time would
# stop its peak-memory log):
# the render saves its checkpoint and stops after its current step. Pause it
# the same way with -STOP and -CONT.
#
#   bash benchmarks/print_render.sh [FOLDER]     # default benchmarks/out/print-4096
#
# FOLDER gets the picture, the checkpoints (cache/), each segment's time and
# peak memory (segments.log) and the progress records (progress.jsonl).
# benchmarks/print_figures.py FOLDER reads them for docs/performance.md (times, peak,
# and with --pictures the whole picture and a 100 % crop where tiles meet).
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
folder=$(mkdir -p "${1:-$root/benchmarks/out/print-4096}" && cd "${1:-$root/benchmarks/out/print-4096}" && pwd)
weights=$(realpath -m "$root/../shared/weights/vgg19-hed-proxy.pth")
[ -f "$weights" ] || { echo "print_render.sh: needs the proxy weights at $weights" >&2; exit 2; }
export STYLE_STUDIO_CACHE="$folder/cache"
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)
echo "segment start $(date -Is) cpu=$cpu cores=$(nproc) avx512_bf16=$(grep -c -w avx512_bf16 /proc/cpuinfo)" >> "$folder/segments.log"
start=$(date +%s)
/usr/bin/time -f "peak resident memory %M kB" -a -o "$folder/segments.log" \
  "$root/.venv/bin/style-studio" render "$root/resources/samples/content/rocket.jpg" \
  "$root/resources/samples/style/starry_night.jpg" -o "$folder/rocket-4096.png" --size 4096 \
  --precision fp32 --weights "$weights" --progress json --resume \
  >> "$folder/progress.jsonl" 2>> "$folder/stderr.log"
status=$?
echo "segment end $(date -Is) status=$status seconds=$(( $(date +%s) - start ))" >> "$folder/segments.log"
tail -n 3 "$folder/segments.log"
exit $status
