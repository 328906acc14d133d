-- hotpath's INFO counters for Prometheus, through redis_exporter's
-- `--script` option (docs/operations.md, "Prometheus"): returns
-- {name, value, name, value, ...} for every numeric `hotpath_*` field of
-- `INFO hotpath`; the exporter turns each pair into
-- redis_script_values{key="<name>"} <value>.
local out = {}
local info = redis.call('INFO', 'hotpath')
for name, value in string.gmatch(info, '(hotpath_[%w_]+):(%-?%d+%.?%d*)\r?\n') do
  out[#out + 1] = name
  out[#out + 1] = value
end
return out
