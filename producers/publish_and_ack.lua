-- Publish a batch's results, alerts and dead letters and acknowledge its input entries in one
-- atomic call: a result exists exactly when its input entry was acknowledged. One script instead
-- of a MULTI of one XADD per entry: redis-py reads and parses a reply per queued command.
-- KEYS[i] the stream of entry i (i <= ARGV[3])   KEYS[#KEYS] the input stream
-- ARGV[1] each stream's approximate max length   ARGV[2] the input's consumer group
-- ARGV[3] entries, then per entry: its count of values n, then n values (field, value, ...);
-- then the input entry ids to acknowledge.
local at = 4
for i = 1, tonumber(ARGV[3]) do
  local n = tonumber(ARGV[at])
  redis.call('XADD', KEYS[i], 'MAXLEN', '~', ARGV[1], '*', unpack(ARGV, at + 1, at + n))
  at = at + n + 1
end
-- XACK in slices: unpack takes at most a few thousand values (a batch may hold 10,000 entries)
while at <= #ARGV do
  local last = math.min(at + 999, #ARGV)
  redis.call('XACK', KEYS[#KEYS], ARGV[2], unpack(ARGV, at, last))
  at = last + 1
end
return 0
