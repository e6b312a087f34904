#!/bin/sh
# Regenerates the screenshots of README.md and docs/GUI.md, headless (no display needed):
#   docs/screenshots/make.sh [BUILD_DIR]        (default: build)
# Every image comes from `llmprism --screenshot` on the bundled sample samples/anomalies.
set -e
cd "$(dirname "$0")/../.."
B="${1:-build}/app/gui/llmprism"
S=samples/anomalies
D=docs/screenshots
"$B" --screenshot $D/window.png --view window --select-step 10 --size 1600x900 $S
"$B" --screenshot $D/timeline.png --size 1600x820 $S
"$B" --screenshot $D/timeline-zoom.png --steps 9-11 --find node-0008:0 --size 1600x820 $S
"$B" --screenshot $D/timeline-dark.png --theme dark --steps 23-25 --size 1600x820 $S
"$B" --screenshot $D/steps.png --view steps --select-step 10 --size 1400x480 $S
"$B" --screenshot $D/ranks.png --view ranks --select-step 10 --size 1400x480 $S
"$B" --screenshot $D/topology.png --view topology --size 1400x560 $S
# A capture over the memory budget (the sample needs ~3 MB whole): analysed in stages, job-0's window from step 14.
"$B" --screenshot $D/staged.png --view window --memory 2M --job job-0 --steps 14 --size 1600x900 $S
# The compare window (tiny, seed 11, against seed 12 with a NIC link at a third of its bandwidth): drawn by its GUI
# test, which exports it as the window's File ▸ Compare With… does.
LLMPRISM_COMPARE_SHOT=$D/compare.png QT_QPA_PLATFORM=offscreen "${1:-build}/tests/tst_gui_compare" slowLinkAndExport >/dev/null
