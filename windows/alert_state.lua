-- Move a tenant's alerts between ok and firing, at most once per onset, across every worker.
-- One call per tenant per batch; the transitions are applied in order, each as it would be alone.
-- KEYS[1] the tenant's firing counter for this minute   KEYS[1 + i] the state hash of transition i
-- ARGV[1] now ms   ARGV[2] cooldown ms   ARGV[3] max firings per minute per tenant   ARGV[4] state ttl s
-- then per transition, 3 values: wanted state ('firing' | 'ok'), sequence of the session
-- evaluated, alert id to use if this fires.
-- Returns per transition 'fired' | 'resolved' | 'unchanged', then the alert id ('' if unchanged):
-- a condition evaluated on an older session than the last one applied is ignored, so the state
-- follows the window's order.
local now, cooldown, max_per_minute, ttl = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
local out = {}

local function apply(key, wanted, sequence_text, alert_id)
  local state = redis.call('HMGET', key, 'status', 'sequence', 'alert_id', 'resolved_ms')
  local status = state[1] or 'ok'
  if state[2] and tonumber(sequence_text) <= tonumber(state[2]) then return 'unchanged', '' end
  redis.call('HSET', key, 'sequence', sequence_text)
  redis.call('EXPIRE', key, ttl)
  if wanted == status then return 'unchanged', '' end
  if wanted == 'firing' then
    if state[4] and now - tonumber(state[4]) < cooldown then return 'unchanged', '' end
    local fired = redis.call('INCR', KEYS[1])
    if fired == 1 then redis.call('PEXPIRE', KEYS[1], 60000) end
    if fired > max_per_minute then return 'unchanged', '' end
    redis.call('HSET', key, 'status', 'firing', 'alert_id', alert_id)
    return 'fired', alert_id
  end
  redis.call('HSET', key, 'status', 'ok', 'resolved_ms', ARGV[1])
  return 'resolved', state[3] or ''
end

for i = 1, #KEYS - 1 do
  local base = 4 + (i - 1) * 3
  local change, id = apply(KEYS[1 + i], ARGV[base + 1], ARGV[base + 2], ARGV[base + 3])
  out[#out + 1] = change
  out[#out + 1] = id
end
return out
