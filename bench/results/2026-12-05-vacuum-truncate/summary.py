"""One line per run of runs.sh: PostgreSQL CPU per message, push and end-to-end p99 / p99.9 ms,
the seconds whose push p99 passed 10 ms (and their worst), and what the sampler saw: samples of
an autovacuum worker waiting to truncate (`VacuumTruncate`), and queue statements (push, pop,
ack) active for more than 8 ms."""
import glob
import json
import sys

print('| run | PostgreSQL CPU per message | push p99 / p99.9 ms | e2e p99 / p99.9 ms '
      '| seconds with push p99 > 10 ms (worst) | `VacuumTruncate` samples | queue statements > 8 ms |')
print('|---|---|---|---|---|---|---|')
for d in sorted(glob.glob(sys.argv[1] + '/*-[0-9]')):
    j = json.load(open(glob.glob(d + '/**/broker.json', recursive=True)[0]))
    lat = {l['name']: l for l in j['latency']}
    slow = [x['push_p99_ms'] for x in j['timeline'] if x['push_p99_ms'] > 10]
    samples = open(d + '.samples').read().splitlines()
    truncate = sum('VacuumTruncate' in l for l in samples)
    queue = sum('client backend' in l and 'regina.' in l and 'stats_refresh' not in l
                for l in samples)
    print('| `%s` | %.1f µs | %s / %s | %s / %s | %d (%s) | %d | %d |' % (
        d.split('/')[-1], j['summary']['pg_cpu_us_per_pushed'],
        lat['push']['p99_ms'], lat['push']['p999_ms'], lat['e2e']['p99_ms'],
        lat['e2e']['p999_ms'], len(slow), max(slow) if slow else '-', truncate, queue))
