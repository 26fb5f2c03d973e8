#!/usr/bin/env bash
# Soak benchmark, run by hand (~35 min): two soaks side by side against the simulator, one whose task
# board keeps LEAK MiB per finished task (a planted leak) and one without. The kit must judge the first
# "leak" with a slope near tasks_done x LEAK / duration, and the second "no evidence of leak".
# Usage: benchmarks/soak_leak_check.sh [DURATION=30m] [LEAK=0.5]   Results: docs/analysis.md.
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${1:-30m}
leak=${2:-0.5}
common=(--headless --load-profile soak --peak-users 6 --ramp 1m --duration "$duration" --sample-interval 5)
locust -f locustfile.py "${common[@]}" --run-dir runs/soak-leak \
  --sim-args "--leak-mib-per-task $leak --task-seconds 2 --ttft-ms 200" > runs/soak-leak.log 2>&1 &
locust -f locustfile.py "${common[@]}" --run-dir runs/soak-steady \
  --sim-args "--task-seconds 2 --ttft-ms 200" > runs/soak-steady.log 2>&1 &
wait
for run in soak-leak soak-steady; do
  echo "== $run"; tail -n 12 "runs/$run.log"
  grep -A4 "trends (slopes per hour)" "runs/$run/report.md" | tail -n 2
done
