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
--                        walk: requests=<answers> duration_us=<first request to last answer> failed=<non-2xx> started_us=<first request, us since the epoch>
--                      and ends wrk at once (wrk would otherwise sit out its whole -d). The start
--                      on the wall clock lets another client's per-request log (h2load's) be cut
--                      to the walk's window: scripts/bench signing.
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
local CLOCK_REALTIME, CLOCK_MONOTONIC = 0, 1
local function now_ns(clock)
    local t = ffi.new("bench_timespec")
    ffi.C.clock_gettime(clock or CLOCK_MONOTONIC, t)
    return tonumber(t.tv_sec) * 1e9 + tonumber(t.tv_nsec)
end
local started_wall_us

function init(args)
    for i = 1, count do
        requests[i] = wrk.format("GET", prefix .. i)
    end
    math.randomseed(os.time())
end

function request()
    if walk then
        if not started_ns then
            started_ns = now_ns()
            started_wall_us = now_ns(CLOCK_REALTIME) / 1000
        end
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
            io.write(string.format("walk: requests=%d duration_us=%d failed=%d started_us=%.0f\n", answered,
                (now_ns() - started_ns) / 1000, failed, started_wall_us))
            io.flush()
            os.exit(0)
        end
    end
end
