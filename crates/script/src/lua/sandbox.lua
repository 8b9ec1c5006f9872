-- The sandbox every script runs in, built once per Lua state from the
-- state's full standard library (see sandbox.rs). Arguments, from Rust:
--   normalize(e)  -> e', where: an error raised by Rust (a library or the
--                    redis API) as the value Redis's C code would raise, and
--                    whether it still needs Lua's "chunk:line:" prefix
--   random, randomseed: Redis's PRNG (rand48.rs)
--   redis: the redis API table (api.rs), filled before this runs
-- Returns the scripts' environment (a read-only view of the allowed
-- globals), the error handler, `protect`, `environment` and the globals.
local normalize, random, randomseed, redis = ...

local dbg = debug
local type, tostring, error, select, unpack = type, tostring, error, select, unpack
local raw_pcall, raw_xpcall, raw_next, raw_pairs = pcall, xpcall, next, pairs
local raw_rawset, raw_rawget, raw_setmetatable, raw_getfenv = rawset, rawget, setmetatable, getfenv
local original_globals = _G
local ipairs = ipairs
local READONLY = "Attempt to modify a readonly table"

-- Read-only tables. Lua 5.1 has no read-only flag (Redis patches its Lua
-- for one), so a protected table is an empty proxy whose metatable reads
-- through to the real table and refuses writes; the globals below that
-- could write to or see past a proxy (rawset, setmetatable, next, pairs,
-- rawget, table.*) know proxies.
local real_of = raw_setmetatable({}, { __mode = "k" })

local function refuse_write()
  error(READONLY, 2)
end

local function protect(t, index)
  local proxy, mt = {}, { __index = index or t, __newindex = refuse_write }
  -- getmetatable shows the metatable read-only, as Redis's read-only
  -- tables show theirs: changing it is refused like any other write.
  local shown = {}
  raw_setmetatable(shown, { __index = mt, __newindex = refuse_write, __metatable = false })
  real_of[shown] = mt
  mt.__metatable = shown
  raw_setmetatable(proxy, mt)
  real_of[proxy] = t
  return proxy
end

local function refuse_proxy(t)
  if real_of[t] then
    error(READONLY, 0)
  end
end

-- The script's frame nearest to the error: the first caller `level` or
-- more frames above the caller of this function that is neither C nor
-- this sandbox.
local function script_frame(level)
  level = level + 2
  while true do
    local info = dbg.getinfo(level, "nSl")
    if not info or (info.what ~= "C" and info.source ~= "=sandbox") then
      return info
    end
    level = level + 1
  end
end

local function where_prefixed(msg, info)
  if info and info.currentline and info.currentline > 0 then
    return info.short_src .. ":" .. info.currentline .. ": " .. msg
  end
  return msg
end

-- The error handler of every script call, as Redis's
-- __redis__err__handler: an error becomes a table {err=..., source=...,
-- line=...} naming where the script was when it failed.
local function error_handler(err)
  local needs_where
  err, needs_where = normalize(err)
  local info = script_frame(1)
  if type(err) ~= "table" then
    if needs_where then
      err = where_prefixed(tostring(err), info)
    end
    err = { err = "ERR " .. tostring(err) }
  end
  if info then
    err["source"] = info.source
    err["line"] = info.currentline
  end
  return err
end

-- pcall as Redis 7 has it: an error table's message is returned, not the
-- table.
local function caught(err)
  local needs_where
  err, needs_where = normalize(err)
  if type(err) ~= "table" and needs_where then
    err = where_prefixed(tostring(err), script_frame(1))
  end
  return err
end

local function pcall_result(ok, ...)
  if ok then
    return true, ...
  end
  local err = ...
  if type(err) == "table" then
    local msg = err.err
    if type(msg) == "string" or type(msg) == "number" then
      err = msg
    end
  end
  return false, err
end

local function safe_pcall(f, ...)
  local n, args = select("#", ...), { ... }
  return pcall_result(raw_xpcall(function()
    return f(unpack(args, 1, n))
  end, caught))
end

local function safe_xpcall(f, handler)
  return raw_xpcall(f, function(err)
    return handler((caught(err)))
  end)
end

local function safe_next(t, k)
  return raw_next(real_of[t] or t, k)
end

local function safe_pairs(t)
  local real = real_of[t]
  if real then
    return raw_next, real, nil
  end
  return raw_pairs(t)
end

local function safe_rawset(t, k, v)
  refuse_proxy(t)
  return raw_rawset(t, k, v)
end

local function safe_rawget(t, k)
  return raw_rawget(real_of[t] or t, k)
end

local function safe_setmetatable(t, mt)
  refuse_proxy(t)
  return raw_setmetatable(t, mt)
end

-- loadstring and load compile source only, as Redis 7.0.15's patched Lua
-- does: bytecode (which `string.dump` makes) could step outside the
-- sandbox, so it reads as the source it is not. The chunk gets its
-- caller's environment, never the state's real globals.
local raw_loadstring, raw_load, raw_setfenv, concat = loadstring, load, setfenv, table.concat

local function compile(chunk, chunkname, env)
  if type(chunk) == "string" and chunk:byte(1) == 27 then
    local first_line = chunk:match("^[^%z\n]*")
    return nil, '[string "' .. first_line .. "\"]:1: unexpected symbol near 'char(27)'"
  end
  local f, err = raw_loadstring(chunk, chunkname)
  if f then
    raw_setfenv(f, env)
  end
  return f, err
end

local function safe_loadstring(chunk, chunkname)
  return compile(chunk, chunkname, raw_getfenv(2))
end

local function safe_load(reader, chunkname)
  if type(reader) ~= "function" then
    return raw_load(reader, chunkname)
  end
  local pieces = {}
  while true do
    local piece = reader()
    if piece == nil or piece == "" then
      break
    end
    if type(piece) ~= "string" then
      return nil, "reader function must return a string"
    end
    pieces[#pieces + 1] = piece
  end
  return compile(concat(pieces), chunkname or "=(load)", raw_getfenv(2))
end

-- table.* functions write with raw sets: refused on proxies.
local table_lib = {}
for name, fn in raw_pairs(table) do
  table_lib[name] = fn
end
for _, name in ipairs({ "insert", "remove", "sort", "setn" }) do
  local fn = table_lib[name]
  if fn then
    table_lib[name] = function(t, ...)
      refuse_proxy(t)
      return fn(t, ...)
    end
  end
end

math.random = random
math.randomseed = randomseed

-- The globals scripts see, as Redis 7.0 allows them.
local visible = {
  string = protect(string),
  table = protect(table_lib),
  math = protect(math),
  cjson = protect(cjson),
  struct = protect(struct),
  cmsgpack = protect(cmsgpack),
  bit = protect(bit),
  redis = protect(redis),
  coroutine = protect(coroutine),
  xpcall = safe_xpcall,
  tostring = tostring,
  setmetatable = safe_setmetatable,
  next = safe_next,
  assert = assert,
  tonumber = tonumber,
  rawequal = rawequal,
  collectgarbage = collectgarbage,
  getmetatable = getmetatable,
  rawset = safe_rawset,
  pcall = safe_pcall,
  type = type,
  select = select,
  unpack = unpack,
  gcinfo = gcinfo,
  pairs = safe_pairs,
  rawget = safe_rawget,
  loadstring = safe_loadstring,
  ipairs = ipairs,
  _VERSION = _VERSION,
  load = safe_load,
  error = error,
}

-- An environment whose globals are those of `current()`, read-only; a
-- missing global is an error, as Redis's strict globals make it.
local function environment(current)
  return protect({}, function(_, name)
    local value = current()[name]
    if value == nil then
      error("Script attempted to access nonexistent global variable '" .. tostring(name) .. "'", 2)
    end
    return value
  end)
end

local scripts_env = environment(function()
  return visible
end)
visible._G = scripts_env

-- What scripts must never reach, gone from the real globals too.
for _, name in ipairs({ "debug", "dofile", "loadfile", "print", "require", "module", "setfenv", "getfenv", "newproxy" }) do
  original_globals[name] = nil
end

return scripts_env, error_handler, protect, environment, visible
