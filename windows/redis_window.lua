-- Count one session in its tenant's rolling window, atomically, at most once.
-- The seen marker holds the owner, then owner|recorded, then owner|published as the
-- delivery's records are appended and its result published (see base.py's statuses).
-- KEYS[1] seen marker   KEYS[2] sums hash   KEYS[3] order zset (score = event ms)
-- KEYS[4] newest event ms   KEYS[5] prefix of per-session contribution hashes
-- KEYS[6] session digests hash (session id -> JSON)   KEYS[7] counting sequence of the tenant
-- ARGV[1] session id  ARGV[2] event ms  ARGV[3] max sessions  ARGV[4] window ms
-- ARGV[5] seen ttl s  ARGV[6] owner (delivery id)  ARGV[7] '1' to count, '0' to only remember
-- ARGV[8] the session's digest (JSON, '' for none)   ARGV[9] sessions in the recent window
-- ARGV[10..] field, value pairs: integer strings, never turned into Lua numbers (doubles),
-- so sums stay exact int64 in Redis. Fields starting 'ro:' go to the recent window only.
-- KEYS[8] recent sums  KEYS[9] recent order (score = sequence)  KEYS[10] recent contributions
-- The recent window is the last ARGV[9] sessions in counting order: every worker's sessions,
-- complete at the moment this one is counted, which is what live alerts are judged on.
-- Returns {status, sums, sessions, first ms, last ms, sequence (0 unless counted now), recent sums}.
-- A sum that reaches 0 is removed, as if never written (the in-process window does the same).
local function add_to(hash, field, value)
  if redis.call('HINCRBY', hash, field, value) == 0 then redis.call('HDEL', hash, field) end
end

-- Subtract a session's contribution (a hash of field -> integer string) and delete it. The
-- negation is done on the string: the values never become Lua numbers (doubles).
local function take_back(hash, contribution)
  local flat = redis.call('HGETALL', contribution)
  for i = 1, #flat, 2 do
    local v = flat[i + 1]
    if v ~= '0' then  -- nothing to take back, and Redis refuses '-0'
      if string.sub(v, 1, 1) == '-' then add_to(hash, flat[i], string.sub(v, 2)) else add_to(hash, flat[i], '-' .. v) end
    end
  end
  redis.call('DEL', contribution)
end

local status = 'new'
local sequence = 0
local seen = redis.call('GET', KEYS[1])
if seen then
  if seen == ARGV[6] then status = 'resume'
  elseif seen == ARGV[6] .. '|recorded' then status = 'resume_recorded'
  elseif seen == ARGV[6] .. '|published' then status = 'done'
  else status = 'duplicate' end
else
  redis.call('SET', KEYS[1], ARGV[6], 'EX', ARGV[5])
  local ts = tonumber(ARGV[2])
  local newest = tonumber(redis.call('GET', KEYS[4]) or ARGV[2])
  if ts >= newest then
    newest = ts
    redis.call('SET', KEYS[4], ARGV[2])
  end
  local cutoff = newest - tonumber(ARGV[4])

  if ARGV[7] == '1' and ts >= cutoff then
    redis.call('ZADD', KEYS[3], ARGV[2], ARGV[1])
    sequence = redis.call('INCR', KEYS[7])
    if ARGV[8] ~= '' then redis.call('HSET', KEYS[6], ARGV[1], ARGV[8]) end
    local pairs_, recent_ = {}, {}
    for i = 10, #ARGV, 2 do
      if string.sub(ARGV[i], 1, 3) == 'ro:' then
        add_to(KEYS[8], ARGV[i], ARGV[i + 1])
        recent_[#recent_ + 1] = ARGV[i]
        recent_[#recent_ + 1] = ARGV[i + 1]
      else
        add_to(KEYS[2], ARGV[i], ARGV[i + 1])
        pairs_[#pairs_ + 1] = ARGV[i]
        pairs_[#pairs_ + 1] = ARGV[i + 1]
      end
    end
    if #pairs_ > 0 then redis.call('HSET', KEYS[5] .. ARGV[1], unpack(pairs_)) end
    if #recent_ > 0 then redis.call('HSET', KEYS[10] .. ARGV[1], unpack(recent_)) end
    redis.call('ZADD', KEYS[9], sequence, ARGV[1])
    local excess_recent = redis.call('ZCARD', KEYS[9]) - tonumber(ARGV[9])
    if excess_recent > 0 then
      for _, member in ipairs(redis.call('ZRANGE', KEYS[9], 0, excess_recent - 1)) do
        take_back(KEYS[8], KEYS[10] .. member)
        redis.call('ZREM', KEYS[9], member)
      end
    end
  end

  local function evict(member)
    take_back(KEYS[2], KEYS[5] .. member)
    redis.call('HDEL', KEYS[6], member)
    redis.call('ZREM', KEYS[3], member)
  end

  local expired = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', '(' .. string.format('%.0f', cutoff))
  for _, member in ipairs(expired) do evict(member) end
  local excess = redis.call('ZCARD', KEYS[3]) - tonumber(ARGV[3])
  if excess > 0 then
    for _, member in ipairs(redis.call('ZRANGE', KEYS[3], 0, excess - 1)) do evict(member) end
  end
end

local first = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
local last = redis.call('ZRANGE', KEYS[3], -1, -1, 'WITHSCORES')
return {status, redis.call('HGETALL', KEYS[2]), redis.call('ZCARD', KEYS[3]), first[2] or false, last[2] or false,
        sequence, redis.call('HGETALL', KEYS[8])}
