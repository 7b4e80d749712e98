-- wrk script: POST /api/v1/push with ITEMS messages per request (env, default 1) spread over
-- PARTITIONS partitions (env, default 1000) of queue QUEUE (env, default "bench").
local items = tonumber(os.getenv("ITEMS") or "1")
local partitions = tonumber(os.getenv("PARTITIONS") or "1000")
local queue = os.getenv("QUEUE") or "bench"
local counter = 0

wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"

request = function()
  local parts = {}
  for i = 1, items do
    counter = counter + 1
    parts[i] = string.format(
      '{"queue":"%s","partition":"p%d","payload":{"n":%d,"note":"benchmark message"}}',
      queue, math.random(0, partitions - 1), counter)
  end
  return wrk.format(nil, "/api/v1/push", nil, '{"items":[' .. table.concat(parts, ",") .. ']}')
end

local errors = 0
response = function(status, headers, body)
  if status ~= 201 then errors = errors + 1 end
end

done = function(summary, latency, requests)
  local secs = summary.duration / 1e6
  io.write(string.format("push: %d requests, %.0f req/s, %.0f msg/s, p50 %.2f ms, p99 %.2f ms, non-201: %d\n",
    summary.requests, summary.requests / secs, summary.requests * items / secs,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, summary.errors.status))
end
