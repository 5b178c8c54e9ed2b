-- Count one session in its tenant's rolling window, atomically, at most once.
-- The seen marker holds the owner, then owner|recorded, then owner|published as the
-- delivery's records are appended and its result published (see base.py's statuses).
-- KEYS[1] seen marker   KEYS[2] sums hash   KEYS[3] order zset (score = event ms)
-- KEYS[4] newest event ms   KEYS[5] prefix of per-session contribution hashes
-- KEYS[6] session digests hash (session id -> JSON)   KEYS[7] counting sequence of the tenant
-- ARGV[1] session id  ARGV[2] event ms  ARGV[3] max sessions  ARGV[4] window ms
-- ARGV[5] seen ttl s  ARGV[6] owner (delivery id)  ARGV[7] '1' to count, '0' to only remember
-- ARGV[8] the session's digest (JSON, '' for none)
-- ARGV[9..] field, value pairs: integer strings, never turned into Lua numbers (doubles),
-- so sums stay exact int64 in Redis.
-- Returns {status, sums, sessions, first ms, last ms, sequence (0 unless counted now)}.
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
    if #ARGV >= 10 then
      local pairs_ = {}
      for i = 9, #ARGV, 2 do
        redis.call('HINCRBY', KEYS[2], ARGV[i], ARGV[i + 1])
        pairs_[#pairs_ + 1] = ARGV[i]
        pairs_[#pairs_ + 1] = ARGV[i + 1]
      end
      redis.call('HSET', KEYS[5] .. ARGV[1], unpack(pairs_))
    end
  end

  local function evict(member)
    local contribution = KEYS[5] .. member
    local flat = redis.call('HGETALL', contribution)
    for i = 1, #flat, 2 do
      local v = flat[i + 1]
      local negated
      if string.sub(v, 1, 1) == '-' then negated = string.sub(v, 2) else negated = '-' .. v end
      if redis.call('HINCRBY', KEYS[2], flat[i], negated) == 0 then
        redis.call('HDEL', KEYS[2], flat[i])
      end
    end
    redis.call('DEL', contribution)
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
        sequence}
