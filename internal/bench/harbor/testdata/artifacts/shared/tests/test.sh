#!/bin/bash
mkdir -p /logs/verifier
if [ "$(cat /logs/artifacts/answer.txt)" = 42 ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
