"""One line per run of an output directory of runs.sh: pushed and delivered msg/s, PostgreSQL CPU
per message (per delivered one where nothing was pushed), pop and end-to-end latency, push and pop
calls (pg_stat_statements), lost and out of order."""
import glob, json, sys
print('| run | pushed/s | delivered/s | PG CPU µs per message | pop p50 / p99 ms | e2e p50 / p99 / p99.9 ms | push calls | pop calls | lost / ooo |')
print('|---|---|---|---|---|---|---|---|---|')
for d in sorted(glob.glob(sys.argv[1] + '/*/')):
    f = glob.glob(d + '**/broker.json', recursive=True)
    if not f: continue
    j = json.load(open(f[0])); s, t = j['summary'], j['telemetry']
    lat = {l['name']: l for l in j['latency']}
    calls = sum(x['calls'] for x in t['top_statements'] if 'push' in x['query'])
    pops = sum(x['calls'] for x in t['top_statements'] if 'set_config' in x['query'] or ('pop_text' in x['query'] and 'push' not in x['query']))
    pct = lambda n, k=3: '-' if n not in lat else ' / '.join(str(lat[n][x]) for x in ['p50_ms','p99_ms','p999_ms'][:k])
    v = j.get('verification') or {}
    cpu = s['pg_cpu_us_per_pushed'] if s['pushed'] else s['pg_cpu_us_per_delivered']
    print('| `%s` | %.0f | %.0f | %.1f | %s | %s | %d | %d | %s / %s |' % (d.rstrip('/').split('/')[-1], s['push_rate'] or 0, s['deliver_rate'] or 0, cpu or 0, pct('pop',2), pct('e2e'), calls, pops, v.get('lost'), v.get('out_of_order')))
