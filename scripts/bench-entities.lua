-- wrk script for scripts/bench: GETs spread over many vehicles, one thread (wrk -t1).
--
-- Environment:
--   BENCH_PATH_PREFIX  the path before the vehicle's number (/v1/providers/bench/vehicles/e)
--   BENCH_ENTITIES     how many vehicles: the numbers 1 .. BENCH_ENTITIES
--   BENCH_ORDER        `random`: every request names a vehicle picked at random (the measured
--                      many-entity row); `walk`: vehicles in order, 1 .. N, each asked once, then
--                      from 1 again, until N + BENCH_CONNECTIONS answers are in (wrk keeps one
--                      request in flight per connection, so by then every one of the first N has
--                      been answered): the warm-ups and the cold-miss row. A walk then prints
--                        walk: requests=<answers> duration_us=<first request to last answer> failed=<non-2xx>
--                      and ends wrk at once (wrk would otherwise sit out its whole -d).
--   BENCH_CONNECTIONS  wrk's -c, for `walk`
--
-- The requests are formatted once in init(), so that choosing one costs a table lookup and the
-- client is not what the row measures.

local prefix = os.getenv("BENCH_PATH_PREFIX")
local count = tonumber(os.getenv("BENCH_ENTITIES"))
local walk = os.getenv("BENCH_ORDER") == "walk"
local stop_after = count + tonumber(os.getenv("BENCH_CONNECTIONS") or "0")
local requests = {}
local last = 0
local answered = 0
local failed = 0
local started_ns

-- wrk's clocks are not visible to scripts; LuaJIT's FFI reads the monotonic clock.
local ffi = require("ffi")
ffi.cdef [[
    typedef struct { long tv_sec; long tv_nsec; } bench_timespec;
    int clock_gettime(int clock, bench_timespec *now);
]]
local CLOCK_MONOTONIC = 1
local function now_ns()
    local t = ffi.new("bench_timespec")
    ffi.C.clock_gettime(CLOCK_MONOTONIC, t)
    return tonumber(t.tv_sec) * 1e9 + tonumber(t.tv_nsec)
end

function init(args)
    for i = 1, count do
        requests[i] = wrk.format("GET", prefix .. i)
    end
    math.randomseed(os.time())
end

function request()
    if walk then
        started_ns = started_ns or now_ns()
        last = last % count + 1
        return requests[last]
    end
    return requests[math.random(count)]
end

if walk then
    function response(status, headers, body)
        answered = answered + 1
        if status < 200 or status > 399 then failed = failed + 1 end
        if answered >= stop_after then
            io.write(string.format("walk: requests=%d duration_us=%d failed=%d\n", answered,
                (now_ns() - started_ns) / 1000, failed))
            io.flush()
            os.exit(0)
        end
    end
end
