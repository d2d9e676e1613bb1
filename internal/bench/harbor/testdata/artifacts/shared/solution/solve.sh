#!/bin/bash
mkdir -p /app/report /logs/artifacts
printf 'one\ntwo\n' > /app/report/summary.txt
echo scratch > /app/report/scratch.tmp
echo 42 > /logs/artifacts/answer.txt
