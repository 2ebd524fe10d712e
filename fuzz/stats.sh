#!/usr/bin/env bash
# Prints a Markdown table of the fuzz runs logged by run_all.sh.
LOGDIR=${LOGDIR:-/tmp/neff-fuzz-logs}
echo "| target | seconds | executions | exec/s | edges (cov) | features (ft) | corpus | peak RSS MiB | crashes |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
for log in "$LOGDIR"/*.log; do
  t=$(basename "$log" .log)
  execs=$(grep -oP 'stat::number_of_executed_units:\s*\K\d+' "$log" | tail -1)
  eps=$(grep -oP 'stat::average_exec_per_sec:\s*\K\d+' "$log" | tail -1)
  rss=$(grep -oP 'stat::peak_rss_mb:\s*\K\d+' "$log" | tail -1)
  last=$(grep -E '^#[0-9]+' "$log" | tail -1)
  cov=$(grep -oP 'cov: \K\d+' <<< "$last")
  ft=$(grep -oP 'ft: \K\d+' <<< "$last")
  corp=$(grep -oP 'corp: \K[^ ]+' <<< "$last")
  secs=$(grep -oP 'Done \d+ runs in \K\d+' "$log" | tail -1)
  crashes=$(grep -c 'Test unit written to' "$log")
  echo "| $t | ${secs:-?} | ${execs:-?} | ${eps:-?} | ${cov:-?} | ${ft:-?} | ${corp:-?} | ${rss:-?} | $crashes |"
done
