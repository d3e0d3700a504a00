-- github.lua: GitHub credentials for git over HTTPS, the REST/GraphQL API,
-- uploads, codeload and raw content, from a personal access token or a
-- GitHub App installation token. GitHub Enterprise: set github_host (and
-- github_api_host if the API has its own host). See docs/addons.md.
--
-- addon_config keys (all optional except a credential):
--   github_host             git host (default github.com)
--   github_api_host         API host (default api.github.com for github.com,
--                           else github_host with the API under /api/)
--   github_extra_hosts      comma list of hosts that get the API credential
--                           (default uploads.github.com,codeload.github.com,
--                           raw.githubusercontent.com for github.com)
--   github_token            secret spec of a token: env:NAME or file:PATH
--   github_token@ORG        a token for sandboxes registered with org ORG
--   github_app_id, github_app_installation_id, github_app_private_key
--                           (file path): use GitHub App installation tokens
--   github_app_api          API base URL for the token request
--                           (default https://<api host>[/api/v3])
-- A sandbox label github_repositories="a,b" narrows App tokens to those
-- repositories of the installation.
local M = { name = "github" }
local cfg = proxy.config

local host = (cfg.github_host or "github.com"):lower()
local dotcom = host == "github.com"
local api_host = (cfg.github_api_host or (dotcom and "api.github.com" or host)):lower()
local extra = {}
local extra_list = cfg.github_extra_hosts or
    (dotcom and "uploads.github.com,codeload.github.com,raw.githubusercontent.com" or "")
for h in extra_list:gmatch("[^,%s]+") do extra[h:lower()] = true end
local app_api = cfg.github_app_api or
    ("https://" .. api_host .. ((dotcom or cfg.github_api_host) and "" or "/api/v3"))

local function token_for(ctx)
  if cfg.github_app_id then
    local repos
    local l = ctx.sandbox.labels and ctx.sandbox.labels.github_repositories
    if l then
      repos = {}
      for r in l:gmatch("[^,%s]+") do repos[#repos + 1] = r end
    end
    local tok, err = proxy.github_app_token{
      api = app_api,
      app_id = cfg.github_app_id,
      installation_id = cfg.github_app_installation_id,
      private_key_file = cfg.github_app_private_key,
      repositories = repos,
    }
    return tok, err, "github-app"
  end
  local spec = (ctx.sandbox.org and cfg["github_token@" .. ctx.sandbox.org]) or cfg.github_token
  if not spec then return nil, "no github_token configured", "github-pat" end
  local tok, err = proxy.secret(spec)
  return tok, err, "github-pat"
end

function M.on_connect(ctx)
  if ctx.port ~= 443 then return nil end
  if ctx.host == host or ctx.host == api_host or extra[ctx.host] then
    return "intercept"
  end
  return nil
end

function M.on_request(req, ctx)
  local tok, err, rule = token_for(ctx)
  if not tok then
    proxy.warn("github: no credential for " .. ctx.host .. ": " .. tostring(err))
    req:deny(502, "github credential unavailable on the proxy")
    return
  end
  local api = ctx.host == api_host and (ctx.host ~= host or req.path:sub(1, 5) == "/api/")
  if api or extra[ctx.host] then
    req:inject("Authorization", "Bearer " .. tok, rule .. "-bearer")
  else
    -- git over HTTPS (and the web host): Basic x-access-token:TOKEN
    req:inject("Authorization", proxy.github_basic(tok), rule .. "-git")
  end
end

return M
