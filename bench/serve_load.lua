-- wrk script of bench/serve_load.sh: queries from query.bodies, adds from add.bodies under fresh
-- ids, ADD_SHARE percent adds; prints p50/p99/p99.9 latency at the end.
local work = os.getenv("WORK") or "."
local add_share = tonumber(os.getenv("ADD_SHARE") or "0")
local queries, adds = {}, {}

local function load(path, into)
  for line in io.lines(path) do into[#into + 1] = line end
end

function setup(thread)
  thread:set("tid", tostring(math.random(1, 1e9)))
end

function init(args)
  load(work .. "/query.bodies", queries)
  load(work .. "/add.bodies", adds)
  counter = 0
  math.randomseed(os.time() + tonumber(tid))
end

function request()
  counter = counter + 1
  if math.random(100) <= add_share then
    local body = adds[(counter % #adds) + 1]
    -- {"text": ...} -> {"id": "<thread>-<n>", "text": ...}
    body = '{"id": "load-' .. tid .. '-' .. counter .. '", ' .. string.sub(body, 2)
    return wrk.format("POST", "/v1/add", {["Content-Type"] = "application/json"}, body)
  end
  local body = queries[(counter % #queries) + 1]
  return wrk.format("POST", "/v1/query", {["Content-Type"] = "application/json"}, body)
end

function done(summary, latency, requests)
  io.write(string.format("latency p50 %.2f ms, p99 %.2f ms, p99.9 %.2f ms, max %.2f ms; %d requests, %d errors (status %d, timeout %d)\n",
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency:percentile(99.9) / 1000, latency.max / 1000,
    summary.requests, summary.errors.status + summary.errors.timeout + summary.errors.connect + summary.errors.read + summary.errors.write,
    summary.errors.status, summary.errors.timeout))
end
