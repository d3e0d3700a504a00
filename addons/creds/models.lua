-- creds/models.lua: a preset (docs/addons.md "Presets"): the common model
-- APIs, each key added to the requests the agent's code makes, the SDKs
-- reading a placeholder from their usual variable. Each credential is
-- declared only when its key is set. addon_config:
--   openai_key: file:/run/secrets/openai        Authorization: Bearer, api.openai.com
--   openai_hosts: "api.openai.com"              (an OpenAI-compatible endpoint:
--                                               its host(s), comma separated)
--   anthropic_key: file:/run/secrets/anthropic  x-api-key, api.anthropic.com
--   models_default: "true"                      (see creds/npm.lua)
local cfg = proxy.config
local creds = {}
local dflt = cfg.models_default == "true"
local function list(s)
  local t = {}
  for x in s:gmatch("[^,%s]+") do t[#t + 1] = x:lower() end
  return t
end
if cfg.openai_key ~= nil then
  creds[#creds + 1] = { name = "openai", form = "bearer", secret = cfg.openai_key,
    hosts = list(cfg.openai_hosts or "api.openai.com"), default = dflt,
    env = { "OPENAI_API_KEY" } }
end
if cfg.anthropic_key ~= nil then
  creds[#creds + 1] = { name = "anthropic", form = "header", field = "x-api-key",
    secret = cfg.anthropic_key, hosts = { "api.anthropic.com" }, default = dflt,
    env = { "ANTHROPIC_API_KEY" } }
end
if #creds == 0 then
  error("creds/models.lua: set addon_config.openai_key and/or anthropic_key")
end

return { name = "creds-models", credentials = creds }
