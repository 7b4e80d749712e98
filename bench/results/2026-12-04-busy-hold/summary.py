"""One line per run of a runs.sh output directory: pushed msg/s, PostgreSQL CPU per message,
push and end-to-end p50 / p99 / p99.9 ms, push calls, lost and out of order."""
import glob
import json
import sys

print('| run | msg/s | PostgreSQL CPU per message | push p50 / p99 / p99.9 ms | e2e p50 / p99 / p99.9 ms '
      '| push calls | lost / out of order |')
print('|---|---|---|---|---|---|---|')
for d in sorted(glob.glob(sys.argv[1] + '/*-[0-9]')):
    f = glob.glob(d + '/**/broker.json', recursive=True)
    j = json.load(open(f[0]))
    s, t = j['summary'], j['telemetry']
    lat = {l['name']: l for l in j['latency']}
    calls = sum(x['calls'] for x in t['top_statements'] if 'push' in x['query'])

    def pct(name):
        if name not in lat:
            return '-'
        return '%s / %s / %s' % (lat[name]['p50_ms'], lat[name]['p99_ms'], lat[name]['p999_ms'])

    print('| `%s` | %.0f | %.1f µs | %s | %s | %d | %d / %d |' % (
        d.split('/')[-1], s['push_rate'], s['pg_cpu_us_per_pushed'], pct('push'), pct('e2e'),
        calls, j['verification']['lost'], j['verification']['out_of_order']))
