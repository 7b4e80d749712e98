#!/usr/bin/env python3
"""Writes a pgbench cycle for ab-files.sh to stdout. Usage: cycle.py N [pop]

N items, each to a partition drawn from p0..p99 of queue e2eq, pushed by regina.push_text (the
measured `count(idx)` call), then a one-item push as the gauge. With `pop`: the N items pushed by
regina.push_pop_text with two autoAck pops of group e2e in the same call (as the broker hands the
pops of parked long-polls to a push), then an autoAck pop as the gauge. N = 1 with `gauge-pop`:
the one-item push measured against the pop."""
import sys

n = int(sys.argv[1])
mode = sys.argv[2] if len(sys.argv) > 2 else ""
item = ('{"queue": "e2eq", "partition": "p\' || :q%d || \'", "transactionId": "\' || gen_random_uuid() '
        '|| \'", "messageId": "\' || gen_random_uuid() || \'"}')
items = ", ".join(item % i for i in range(n))
payloads = ", ".join('{"message":"Hello World"}' for _ in range(n))
request = ('{"queue": "e2eq", "partition": null, "namespace": null, "task": null, "consumerGroup": "e2e", '
           '"batch": 10, "partitions": 1, "autoAck": true, "subscriptionMode": null, '
           '"subscriptionFrom": null, "leaseId": null%s}')
one_push = ("select count(*) from regina.push_text(('[" + item.replace(":q%d", ":p") +
            "]')::jsonb, '[{\"message\":\"Hello World\"}]');")
one_pop = "select count(*) from regina.pop_text('[" + request % "" + "]');"

print("\\set p random(0, 99)")
for i in range(n):
    print("\\set q%d random(0, 99)" % i)
if mode == "pop":
    quiet = request % ', "quiet": true'
    print("select count(idx) from regina.push_pop_text(('[%s]')::jsonb, '[%s]', '[%s, %s]');"
          % (items, payloads, quiet, quiet))
else:
    print("select count(idx) from regina.push_text(('[%s]')::jsonb, '[%s]');" % (items, payloads))
print(one_pop if mode in ("pop", "gauge-pop") else one_push)
