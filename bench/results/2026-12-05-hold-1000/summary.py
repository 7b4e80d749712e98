"""One line per run of an output directory of runs.sh: pushed and delivered msg/s, PostgreSQL CPU
per message, push and end-to-end p50 / p99 / p99.9, push calls, lost and out of order."""
import glob, json, sys
print('| run | pushed msg/s | delivered/s | PG CPU per message | push p50 / p99 / p99.9 ms | e2e p50 / p99 / p99.9 ms | push calls | lost / ooo |')
print('|---|---|---|---|---|---|---|---|')
for d in sorted(glob.glob(sys.argv[1] + '/*/')):
    f = glob.glob(d + '**/broker.json', recursive=True)
    if not f: continue
    j = json.load(open(f[0])); s, t = j['summary'], j['telemetry']
    lat = {l['name']: l for l in j['latency']}
    calls = sum(x['calls'] for x in t['top_statements'] if 'push' in x['query'])
    pct = lambda n: '-' if n not in lat else '%s / %s / %s' % (lat[n]['p50_ms'], lat[n]['p99_ms'], lat[n]['p999_ms'])
    v = j.get('verification') or {}
    print('| `%s` | %.0f | %.0f | %.1f µs | %s | %s | %d | %s / %s |' % (d.rstrip('/').split('/')[-1], s['push_rate'], s['deliver_rate'], s['pg_cpu_us_per_pushed'], pct('push'), pct('e2e'), calls, v.get('lost'), v.get('out_of_order')))
