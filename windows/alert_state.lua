-- Move one alert between ok and firing, at most once per onset, across every worker.
-- KEYS[1] the alert's state hash   KEYS[2] the tenant's firing counter for this minute
-- ARGV[1] wanted state ('firing' | 'ok')   ARGV[2] sequence of the session evaluated
-- ARGV[3] now ms   ARGV[4] cooldown ms   ARGV[5] max firings per minute per tenant
-- ARGV[6] alert id to use if this fires   ARGV[7] state ttl s
-- Returns {'fired', id} | {'resolved', id} | {'unchanged'}: a condition evaluated on an older
-- session than the last one applied is ignored, so the state follows the window's order.
local state = redis.call('HMGET', KEYS[1], 'status', 'sequence', 'alert_id', 'resolved_ms')
local status = state[1] or 'ok'
local sequence = tonumber(ARGV[2])
if state[2] and sequence <= tonumber(state[2]) then return {'unchanged'} end
redis.call('HSET', KEYS[1], 'sequence', ARGV[2])
redis.call('EXPIRE', KEYS[1], ARGV[7])
if ARGV[1] == status then return {'unchanged'} end
local now = tonumber(ARGV[3])
if ARGV[1] == 'firing' then
  if state[4] and now - tonumber(state[4]) < tonumber(ARGV[4]) then return {'unchanged'} end
  local fired = redis.call('INCR', KEYS[2])
  if fired == 1 then redis.call('PEXPIRE', KEYS[2], 60000) end
  if fired > tonumber(ARGV[5]) then return {'unchanged'} end
  redis.call('HSET', KEYS[1], 'status', 'firing', 'alert_id', ARGV[6])
  return {'fired', ARGV[6]}
end
redis.call('HSET', KEYS[1], 'status', 'ok', 'resolved_ms', ARGV[3])
return {'resolved', state[3] or ''}
