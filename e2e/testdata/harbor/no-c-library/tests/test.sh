#!/bin/bash
# 1 when the agent wrote hello, 0 otherwise.
mkdir -p /logs/verifier
if [ "$(cat /app/hello.txt 2>/dev/null)" = hello ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo "hello.txt: $(cat /app/hello.txt 2>&1)"
  echo 0 > /logs/verifier/reward.txt
fi
