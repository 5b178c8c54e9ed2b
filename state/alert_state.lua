-- Move a tenant's alerts between ok and firing, at most once per onset, across every worker.
-- One call per tenant per batch; the transitions are applied in order, each as it would be alone.
-- KEYS[1] the tenant's firing counter for this minute   KEYS[2..] the state hashes of the alerts moved
-- ARGV[1] now ms   ARGV[2] cooldown ms   ARGV[3] max firings per minute per tenant   ARGV[4] state ttl s
-- ARGV[5] the transitions, MessagePack (one argument for the batch, not four per transition): an
-- array of [index of the state hash in KEYS, wanted state ('firing' | 'ok'), sequence of the
-- session evaluated, alert id to use if this fires].
-- Returns per transition 'fired' | 'resolved' | 'unchanged', then the alert id ('' if unchanged):
-- a condition evaluated on an older session than the last one applied is ignored, so the state
-- follows the window's order.
local now, cooldown, max_per_minute, ttl = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
local out = {}

-- Each key's state is read once per call and written back once at the end: a batch of 200
-- sessions brings ~200 transitions of the same few keys (~3 commands each, one at a time).
local states, touched = {}, {}

local function state_of(key)
  local state = states[key]
  if state == nil then
    local stored = redis.call('HMGET', key, 'status', 'sequence', 'alert_id', 'resolved_ms')
    state = {status = stored[1] or 'ok', sequence = stored[2], alert_id = stored[3], resolved_ms = stored[4],
             fields = {}}
    states[key] = state
  end
  return state
end

local function set(state, field, value)
  state[field] = value
  state.fields[field] = true
end

local function apply(key, wanted, sequence_text, alert_id)
  local state = state_of(key)
  if state.sequence and tonumber(sequence_text) <= tonumber(state.sequence) then return 'unchanged', '' end
  if next(state.fields) == nil then touched[#touched + 1] = key end
  set(state, 'sequence', sequence_text)
  if wanted == state.status then return 'unchanged', '' end
  if wanted == 'firing' then
    if state.resolved_ms and now - tonumber(state.resolved_ms) < cooldown then return 'unchanged', '' end
    local fired = redis.call('INCR', KEYS[1])
    if fired == 1 then redis.call('PEXPIRE', KEYS[1], 60000) end
    if fired > max_per_minute then return 'unchanged', '' end
    set(state, 'status', 'firing')
    set(state, 'alert_id', alert_id)
    return 'fired', alert_id
  end
  set(state, 'status', 'ok')
  set(state, 'resolved_ms', ARGV[1])
  return 'resolved', state.alert_id or ''
end

for _, t in ipairs(cmsgpack.unpack(ARGV[5])) do
  local change, id = apply(KEYS[t[1]], t[2], t[3], t[4])
  out[#out + 1] = change
  out[#out + 1] = id
end

for _, key in ipairs(touched) do  -- a key no transition moved keeps its state and its TTL
  local state, written = states[key], {}
  for field in pairs(state.fields) do
    written[#written + 1] = field
    written[#written + 1] = state[field]
  end
  redis.call('HSET', key, unpack(written))
  redis.call('EXPIRE', key, ttl)
end
return out
