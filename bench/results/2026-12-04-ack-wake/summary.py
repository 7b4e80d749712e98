"""Per run of a pairs.sh output directory: PostgreSQL and broker CPU per message, the pop, push
and ack calls (count, requests, statement ms), e2e p50/p99 ms, lost and out of order."""
import glob
import json
import sys

for d in sorted(glob.glob(sys.argv[1] + '/*-[0-9]')):
    f = glob.glob(d + '/**/broker.json', recursive=True)
    j = json.load(open(f[0]))
    s, t = j['summary'], j['telemetry']

    def stmt(name):
        for x in t['top_statements']:
            if name in x['query']:
                return x
        return {'calls': 0, 'rows': 0, 'total_ms': 0}

    pop, pp, ack = stmt('regina.pop_text'), stmt('push_pop_text'), stmt('ack_text')
    lat = {l['name']: l for l in j['latency']}
    print(d.split('/')[-1], 'pg µs/msg', round(s['pg_cpu_us_per_pushed'], 1),
          'broker µs/msg', round(s['broker_cpu_us_per_pushed'], 1),
          '| pop_text calls', pop['calls'], 'requests', pop['rows'], 'ms', round(pop['total_ms']),
          '| push_pop_text calls', pp['calls'], 'ms', round(pp['total_ms']),
          '| ack_text calls', ack['calls'], 'ms', round(ack['total_ms']),
          '| e2e p50', lat['e2e']['p50_ms'], 'p99', lat['e2e']['p99_ms'],
          '| lost', j['verification']['lost'], 'out of order', j['verification']['out_of_order'])
