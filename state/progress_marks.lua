-- Move deliveries' seen markers on to their next phase (base.py's statuses): only a marker the
-- window wrote (XX), and it keeps its expiry (KEEPTTL). One call per tenant per batch instead
-- of one SET each.
-- KEYS[i] a delivery's seen marker   ARGV[i] its new value
for i = 1, #KEYS do
  redis.call('SET', KEYS[i], ARGV[i], 'XX', 'KEEPTTL')
end
return #KEYS
