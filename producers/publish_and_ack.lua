-- Publish a batch's results, alerts and dead letters and acknowledge its input entries in one
-- atomic call: a result exists exactly when its input entry was acknowledged. One script instead
-- of a MULTI of one XADD per entry: redis-py reads and parses a reply per queued command.
-- KEYS: the output streams, then the input stream (KEYS[#KEYS]).
-- ARGV[1] each stream's approximate max length   ARGV[2] the input's consumer group
-- ARGV[3] the entries, MessagePack: an array of [index of the stream in KEYS, field, value, ...]
--         (one argument for the batch: packing a few arguments per entry cost the worker more
--         than the script costs Redis)
-- ARGV[4..] the input entry ids to acknowledge.
for _, entry in ipairs(cmsgpack.unpack(ARGV[3])) do
  redis.call('XADD', KEYS[entry[1]], 'MAXLEN', '~', ARGV[1], '*', unpack(entry, 2))
end
-- XACK in slices: unpack takes at most a few thousand values (a batch may hold 10,000 entries)
local at = 4
while at <= #ARGV do
  local last = math.min(at + 999, #ARGV)
  redis.call('XACK', KEYS[#KEYS], ARGV[2], unpack(ARGV, at, last))
  at = last + 1
end
return 0
