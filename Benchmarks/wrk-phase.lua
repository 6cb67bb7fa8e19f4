-- wrk script of the benchmarks' closed-loop phases (WrkPhase in BenchmarkSupport): it sends prepared requests.
-- Arguments (after `--`): MODE DATA
--   static: every request is the one in DATA.0 (method, path, headers, body as written by WrkPhase)
--   cycle:  thread i sends the requests of DATA.i in order, over and over
--   list:   thread i sends the requests of DATA.i once each, in order (single-use inputs: codes, proofs)
--   chain:  thread i starts from the refresh tokens of DATA.i ("T <token>") and sends each token once with
--           the next proof ("P <proof>"); a 200 answer's refresh token goes back into the thread's pool
-- done() prints one JSON line: requests, duration, failures, latency percentiles, exhausted threads.

local threads = {}
local counter = 0

function setup(thread)
    thread:set("id", counter)
    counter = counter + 1
    table.insert(threads, thread)
end

local mode, requests, index, tokens, proofs, verifying
local chainMethod, chainPath, chainHeaders, chainBody
exhausted = false

local function lines(path)
    local result = {}
    for line in io.lines(path) do
        if line ~= "" then table.insert(result, line) end
    end
    return result
end

-- A request line of DATA: "METHOD PATH<TAB>Header: value<TAB>…<TAB><TAB>BODY".
local function parse(line)
    local head, body = line:match("^(.-)\t\t(.*)$")
    local fields = {}
    for field in (head .. "\t"):gmatch("([^\t]*)\t") do table.insert(fields, field) end
    local method, path = fields[1]:match("^(%S+) (%S+)$")
    local headers = {}
    for i = 2, #fields do
        local name, value = fields[i]:match("^([^:]+): (.*)$")
        headers[name] = value
    end
    return method, path, headers, body
end

function init(args)
    mode = args[1]
    index = 0
    -- wrk calls request() of its first thread once before the run, to check the request, and never sends
    -- what it returns: that call must not use up a refresh token.
    verifying = id == 0
    if mode == "static" then
        local method, path, headers, body = parse(lines(args[2] .. ".0")[1])
        requests = { wrk.format(method, path, headers, body) }
    elseif mode == "list" or mode == "cycle" then
        requests = {}
        for _, line in ipairs(lines(args[2] .. "." .. id)) do
            table.insert(requests, wrk.format(parse(line)))
        end
    elseif mode == "chain" then
        tokens, proofs = {}, {}
        local all = lines(args[2] .. "." .. id)
        chainMethod, chainPath, chainHeaders, chainBody = parse(all[1])
        for i = 2, #all do
            local kind, value = all[i]:match("^(%a) (.*)$")
            if kind == "T" then table.insert(tokens, value) else table.insert(proofs, value) end
        end
    else
        error("unknown mode " .. tostring(mode))
    end
    -- Without a response function wrk does not parse answers at all.
    if mode ~= "chain" then response = nil end
end

-- The index of the next single-use input of `count`; once they are used up the thread stops and says so.
local function nextIndex(count)
    index = index + 1
    if index > count then
        exhausted = true
        wrk.thread:stop()
        index = count
    end
    return index
end

function request()
    if mode == "static" then
        return requests[1]
    elseif mode == "list" then
        return requests[nextIndex(#requests)]
    elseif mode == "cycle" then
        index = index % #requests + 1
        return requests[index]
    end
    if verifying then
        verifying = false
        return wrk.format(chainMethod, chainPath, chainHeaders, chainBody)
    end
    local proof = proofs[nextIndex(#proofs)]
    -- A failed rotation returns no token; the request then carries none and fails too.
    local token = table.remove(tokens) or ""
    chainHeaders["DPoP"] = proof
    return wrk.format(chainMethod, chainPath, chainHeaders, chainBody .. token)
end

local refusalShown = false

function response(status, headers, body)
    if status == 200 then
        local token = body:match('"refresh_token":"([^"]+)"')
        if token then table.insert(tokens, token) end
    elseif not refusalShown then
        -- The first refusal of each thread, for the benchmark's log: its chain ends here.
        refusalShown = true
        io.stderr:write(string.format("wrk thread %d: HTTP %d %s\n", id, status, body:sub(1, 300)))
    end
end

function done(summary, latency, requests)
    local errors = summary.errors
    local out = 0
    for _, thread in ipairs(threads) do
        if thread:get("exhausted") then out = out + 1 end
    end
    io.write(string.format(
        '{"requests":%d,"duration_us":%d,"status_errors":%d,"socket_errors":%d,"p50_us":%d,"p99_us":%d,"exhausted_threads":%d}\n',
        summary.requests, summary.duration, errors.status, errors.connect + errors.read + errors.write + errors.timeout,
        latency:percentile(50), latency:percentile(99), out))
end
