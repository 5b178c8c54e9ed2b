-- Count a batch of one tenant's sessions in its rolling window, atomically, each at most once.
-- One call per tenant per round of a batch (redis_window.py: rounds of 50 sessions, in order):
-- the sums are written once per field at the end, not once per field per session (a session
-- adds ~60 fields and evicts as many: that was ~120 HINCRBY each).
-- The seen marker holds the owner, then owner|recorded, then owner|published as the
-- delivery's records are appended and its result published (see base.py's statuses).
-- KEYS[1] sums hash   KEYS[2] order zset (score = event ms)   KEYS[3] newest event ms
-- KEYS[4] prefix of per-session contributions   KEYS[5] session digests hash (id -> JSON)
-- KEYS[6] counting sequence of the tenant   KEYS[7] recent sums   KEYS[8] recent order
-- (score = sequence)   KEYS[9] prefix of recent contributions   KEYS[9 + i] seen marker of session i
-- ARGV[1] max sessions  ARGV[2] window ms  ARGV[3] seen ttl s  ARGV[4] sessions in the recent window
-- ARGV[5], ARGV[6] the sum of the contributions of every session sent to count, to the window's
-- sums and to the recent window's (JSON as below; '' for none; '-' when a total would not fit
-- HINCRBY's int64): when every one of them is counted now (the usual case) the sums take these
-- once instead of decoding and adding each session's;
-- otherwise each counted session's are added
-- ARGV[7] the sessions, MessagePack: an array of 7 strings each (one argument for the round:
-- packing seven per session cost the worker more than unpacking costs Redis): id, event ms,
-- owner (delivery id), '1' to count or '0' to only remember, digest JSON ('' for none), its
-- contribution to the window's sums and to the recent window's (each JSON ["field", "value",
-- ...], values integer strings; '' for none), stored as they come.
-- The recent window is the last ARGV[4] sessions in counting order: every worker's sessions,
-- complete at the moment this one is counted, which is what live alerts are judged on.
-- Returns {sums before, recent sums before, then per session {status, sequence (0 unless counted
-- now), sessions, first ms, last ms, contributions it evicted, recent contributions it evicted,
-- the sequence a resumed session was counted with while it is in the recent window (else 0)}}:
-- the caller replays them over the sums before to get each session's sums exactly.
-- A sum that reaches 0 is removed, as if never written (the in-process window does the same).

-- Integers below 2^52 add exactly as doubles; larger ones go to HINCRBY as strings (int64).
local EXACT = 4503599627370496

local function add_to(hash, field, value)
  if redis.call('HINCRBY', hash, field, value) == 0 then redis.call('HDEL', hash, field) end
end

local function negated(v)
  if string.sub(v, 1, 1) == '-' then return string.sub(v, 2) end
  return '-' .. v
end

-- Per-field deltas of the batch, flushed to the hash once at the end.
local function new_pending(hash) return {hash = hash, delta = {}} end

local function flush(pending)
  for field, v in pairs(pending.delta) do
    if v ~= 0 then add_to(pending.hash, field, string.format('%.0f', v)) end
  end
end

-- The hot loop (~60 fields a session added or taken back): inlined, one tonumber per value.
local function add_pairs(pending, flat, sign)
  local delta, hash = pending.delta, pending.hash
  for i = 1, #flat, 2 do
    local field, text = flat[i], flat[i + 1]
    local v = tonumber(text)
    if v == nil or v >= EXACT or v <= -EXACT then
      add_to(hash, field, sign > 0 and text or negated(text))
    elseif v ~= 0 then  -- '0' and '-0' change nothing
      local before = delta[field] or 0
      local after = before + sign * v
      if after >= EXACT or after <= -EXACT then
        add_to(hash, field, string.format('%.0f', before))
        after = sign * v
      end
      delta[field] = after
    end
  end
end

-- Take a stored contribution back out of the sums; returns it (JSON) for the caller's replay.
local function take_back(pending, key)
  local stored = redis.pcall('GET', key)
  if type(stored) == 'string' then
    redis.call('DEL', key)
    add_pairs(pending, cjson.decode(stored), -1)
    return stored
  end
  if not stored then return '[]' end
  -- WRONGTYPE: a contribution written as a hash by the per-session script before this one
  local flat = redis.call('HGETALL', key)
  if #flat == 0 then return '[]' end
  redis.call('DEL', key)
  add_pairs(pending, flat, -1)
  return cjson.encode(flat)
end

local sums_before = redis.call('HGETALL', KEYS[1])
local recent_before = redis.call('HGETALL', KEYS[7])
local sums = new_pending(KEYS[1])
local recent_sums = new_pending(KEYS[7])
local max_sessions, window_ms, seen_ttl, recent_max = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4])
local newest = tonumber(redis.call('GET', KEYS[3]) or '-1e300')
local newest_changed = false
local out = {sums_before, recent_before}

local function evict(member, evicted)
  evicted[#evicted + 1] = take_back(sums, KEYS[4] .. member)
  redis.call('HDEL', KEYS[5], member)
  redis.call('ZREM', KEYS[2], member)
end

local offered, counted_now = 0, {}  -- sessions sent to count; the (contribution, recent) of those counted
for i, session in ipairs(cmsgpack.unpack(ARGV[7])) do
  local id, ts_text, owner, counted, digest, contribution, recent_contribution =
    session[1], session[2], session[3], session[4], session[5], session[6], session[7]
  local seen_key = KEYS[9 + i]
  local status, sequence, counted_as = 'new', 0, 0
  local evicted, recent_evicted = {}, {}
  if counted == '1' then offered = offered + 1 end
  local seen = redis.call('GET', seen_key)
  if seen then
    if seen == owner then status = 'resume'
    elseif seen == owner .. '|recorded' then status = 'resume_recorded'
    elseif seen == owner .. '|published' then status = 'done'
    else status = 'duplicate' end
    if status == 'resume' or status == 'resume_recorded' then
      counted_as = tonumber(redis.call('ZSCORE', KEYS[8], id) or '0')
    end
  else
    redis.call('SET', seen_key, owner, 'EX', seen_ttl)
    local ts = tonumber(ts_text)
    if ts >= newest then
      newest = ts
      newest_changed = true
    end
    local cutoff = newest - window_ms

    if counted == '1' and ts >= cutoff then
      redis.call('ZADD', KEYS[2], ts_text, id)
      sequence = redis.call('INCR', KEYS[6])
      if digest ~= '' then redis.call('HSET', KEYS[5], id, digest) end
      counted_now[#counted_now + 1] = {contribution, recent_contribution}
      if contribution ~= '' then redis.call('SET', KEYS[4] .. id, contribution, 'EX', seen_ttl) end
      if recent_contribution ~= '' then redis.call('SET', KEYS[9] .. id, recent_contribution, 'EX', seen_ttl) end
      redis.call('ZADD', KEYS[8], sequence, id)
      local excess_recent = redis.call('ZCARD', KEYS[8]) - recent_max
      if excess_recent > 0 then
        for _, member in ipairs(redis.call('ZRANGE', KEYS[8], 0, excess_recent - 1)) do
          recent_evicted[#recent_evicted + 1] = take_back(recent_sums, KEYS[9] .. member)
          redis.call('ZREM', KEYS[8], member)
        end
      end
    end

    local expired = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', '(' .. string.format('%.0f', cutoff))
    for _, member in ipairs(expired) do evict(member, evicted) end
    local excess = redis.call('ZCARD', KEYS[2]) - max_sessions
    if excess > 0 then
      for _, member in ipairs(redis.call('ZRANGE', KEYS[2], 0, excess - 1)) do evict(member, evicted) end
    end
  end
  local first = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
  local last = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
  out[#out + 1] = {status, sequence, redis.call('ZCARD', KEYS[2]), first[2] or false, last[2] or false,
                   evicted, recent_evicted, counted_as}
end

-- The sums are integers: adding the batch's total or each session's gives the same sums.
if #counted_now == offered and ARGV[5] ~= '-' then
  if ARGV[5] ~= '' then add_pairs(sums, cjson.decode(ARGV[5]), 1) end
  if ARGV[6] ~= '' then add_pairs(recent_sums, cjson.decode(ARGV[6]), 1) end
else
  for _, added in ipairs(counted_now) do
    if added[1] ~= '' then add_pairs(sums, cjson.decode(added[1]), 1) end
    if added[2] ~= '' then add_pairs(recent_sums, cjson.decode(added[2]), 1) end
  end
end
if newest_changed then redis.call('SET', KEYS[3], string.format('%.0f', newest), 'KEEPTTL') end
flush(sums)
flush(recent_sums)
-- An idle tenant's keys expire together, as its seen markers do (window days + 1 day after its
-- last session). Renewing every key of the window on every call would cost one EXPIRE per
-- session in the window per batch; they are renewed together at most once a day instead (when
-- the order key has less than its full TTL minus a day left, or none yet). A contribution
-- written in between gets the full TTL, so none expires before the keys it belongs to.
if redis.call('TTL', KEYS[2]) < tonumber(seen_ttl) - 86400 then
  for _, k in ipairs({1, 2, 3, 5, 6, 7, 8}) do redis.call('EXPIRE', KEYS[k], seen_ttl) end
  for _, member in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do redis.call('EXPIRE', KEYS[4] .. member, seen_ttl) end
  for _, member in ipairs(redis.call('ZRANGE', KEYS[8], 0, -1)) do redis.call('EXPIRE', KEYS[9] .. member, seen_ttl) end
end
return out
