#!/bin/bash
# Says what of the agent's artifacts it sees, at their paths in the agent's
# containers, and scores the answer.
for f in /logs/artifacts/note.txt /app/out/result.txt /app/out/hook.txt /app/build/answer.txt \
	/app/build/keep/deep.txt /var/lib/db/dump.txt /app/build/x.o /app/build/cache/blob /app/never-written.txt /opt/agent-image; do
	if [ -e "$f" ]; then echo "saw $f: $(head -c 200 "$f" | tr '\n' ' ')"; else echo "no $f"; fi
done
ls -A /logs/verifier | sed 's/^/verifier log: /'
answer=$(cat /app/build/answer.txt)
echo "answer: $answer"
if [ "$answer" = 42 ] && grep -q dumped /var/lib/db/dump.txt; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
