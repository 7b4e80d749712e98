-- wrk script: GET /api/v1/pop/queue/QUEUE with BATCH messages and PARTITIONS partitions per pop.
-- MODE=autoack settles on delivery; MODE=ack acknowledges each batch with /ack/batch
-- (the ack is the next request on the same connection).
local queue = os.getenv("QUEUE") or "bench"
local batch = os.getenv("BATCH") or "100"
local partitions = os.getenv("POP_PARTITIONS") or "10"
local mode = os.getenv("MODE") or "autoack"
local pending = nil
delivered = 0  -- globals: done() reads them from each thread
empty = 0
local threads = {}

setup = function(thread) table.insert(threads, thread) end

request = function()
  if pending then
    local body = pending
    pending = nil
    return wrk.format("POST", "/api/v1/ack/batch", {["Content-Type"] = "application/json"}, body)
  end
  return wrk.format("GET", string.format("/api/v1/pop/queue/%s?batch=%s&partitions=%s&autoAck=%s",
    queue, batch, partitions, mode == "autoack" and "true" or "false"))
end

response = function(status, headers, body)
  if status == 204 then empty = empty + 1 end
  if status ~= 200 or not body:find('"messages"', 1, true) then return end
  local acks = {}
  -- Each message object lists transactionId, then partitionId, then leaseId.
  local list = body:sub((body:find('"messages"', 1, true)))
  for tx, pid, lease in list:gmatch('"transactionId"%s*:%s*"([^"]+)".-"partitionId"%s*:%s*"([^"]+)".-"leaseId"%s*:%s*"([^"]*)"') do
    delivered = delivered + 1
    if mode ~= "autoack" then
      acks[#acks + 1] = string.format('{"transactionId":"%s","partitionId":"%s","leaseId":"%s","status":"completed"}', tx, pid, lease)
    end
  end
  if #acks > 0 then pending = '{"acknowledgments":[' .. table.concat(acks, ",") .. ']}' end
end

done = function(summary, latency, requests)
  local total, empties = 0, 0
  for _, t in ipairs(threads) do
    total = total + (t:get("delivered") or 0)
    empties = empties + (t:get("empty") or 0)
  end
  local secs = summary.duration / 1e6
  -- Empty pops mean the backlog ran out before the run ended: the rate is then a lower bound.
  io.write(string.format("pop(%s): %d requests, %d msgs, %.0f msg/s delivered, p50 %.2f ms, p99 %.2f ms, empty pops %d\n",
    mode, summary.requests, total, total / secs, latency:percentile(50) / 1000, latency:percentile(99) / 1000, empties))
end
