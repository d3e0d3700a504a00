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
--
-- A sandbox registered with a policy (ctx.sandbox.policy.github, see
-- docs/addons.md "Credential policy") is held to it: repository scope for
-- git, the API and the content hosts, the api mode, push rules on
-- git-receive-pack and the GraphQL mutation check.
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

-- An App token's scope under policy section pol: its permissions, and its
-- repositories when every policy entry is an exact owner/name of one owner
-- (with globs or several owners: all of the installation's, the scope check
-- still applies).
local function token_scope(pol)
  local repos, perms
  local list = pol.repositories
  if list ~= nil and #list > 0 then
    local owner
    repos = {}
    for _, r in ipairs(list) do
      local o, n = r:match("^([^/]+)/([^/]+)$")
      if not o or r:find("[*?]") or (owner and owner:lower() ~= o:lower()) then
        repos = nil
        break
      end
      owner = o
      repos[#repos + 1] = n
    end
  end
  if pol.permissions ~= nil then
    perms = {}
    for k, v in pairs(pol.permissions) do perms[k] = v end
  end
  return repos, perms
end

local function token_for(ctx, pol)
  if cfg.github_app_id then
    local repos, perms, owner
    local l = ctx.sandbox.labels and ctx.sandbox.labels.github_repositories
    if pol ~= nil then
      -- a token of this sandbox's own: cached for it, revoked when it deregisters
      repos, perms = token_scope(pol)
      owner = ctx.sandbox.id
    elseif l then
      repos = {}
      for r in l:gmatch("[^,%s]+") do repos[#repos + 1] = r end
    end
    local tok, err = proxy.github_app_token{
      api = app_api,
      app_id = cfg.github_app_id,
      installation_id = cfg.github_app_installation_id,
      private_key_file = cfg.github_app_private_key,
      repositories = repos,
      permissions = perms,
      sandbox = owner,
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

-- ---- policy ----

-- API paths any session may use under api = "repositories".
local global_ok = { ["/user"] = true, ["/rate_limit"] = true, ["/meta"] = true,
  ["/zen"] = true, ["/octocat"] = true, ["/emojis"] = true, ["/versions"] = true }

local function repo_allowed(pol, owner, name)
  local list = pol.repositories
  if list == nil then return true end
  if type(list) ~= "table" then error("policy.github.repositories: not a list") end
  -- GitHub names: letters, digits, '.', '-', '_' (anything else: not a repository we allow)
  if not owner:find("^[%w%.%-_]+$") or not name:find("^[%w%.%-_]+$") then return false end
  local full = owner .. "/" .. name
  for _, pat in ipairs(list) do
    if type(pat) ~= "string" then error("policy.github.repositories: not a string") end
    if proxy.glob(pat, full, true) then return true end
  end
  return false
end

-- A path the proxy cannot place unambiguously: dot segments (also encoded), //, \.
local function ambiguous(path)
  local p = path:lower()
  return p:find("//", 1, true) or p:find("/./", 1, true) or p:find("/../", 1, true)
      or p:find("/%.%.?$") or p:find("%2e", 1, true) or p:find("\\", 1, true)
end

local function deny_git(req, msg)
  req:deny(403, "denied by policy: " .. msg)
end

local function deny_api(req, msg)
  local m = "denied by policy: " .. msg
  req:deny(403, m, '{"message":"' .. m:gsub('[%c"\\]', "") ..
    '","documentation_url":"https://docs.github.com/rest"}', "application/json")
end

-- The push rules' verdict on ref (a full refs/... name): nil or why not.
local function ref_refused(pol, ref, del)
  for _, pat in ipairs(pol.protect or {}) do
    if proxy.glob(pat, ref) then return "protected ref" end
  end
  if del and pol.delete ~= true then return "delete" end
  if pol.push == nil then return nil end
  for _, pat in ipairs(pol.push) do
    if proxy.glob(pat, ref) then return nil end
  end
  return "ref outside push"
end

-- REST calls that move refs without a push (rest: the path after
-- /repos/OWNER/REPO): PATCH/DELETE git/refs/REF are held to the push rules;
-- the others name their branch in the body, so under push rules (a push or
-- protect list) they are refused. nil: not one of them.
local function rest_ref_write(pol, method, rest)
  if method == "GET" or method == "HEAD" or method == "OPTIONS" then return nil end
  local ref = rest:match("^/git/refs/(.+)$")
  if ref and (method == "PATCH" or method == "DELETE") then
    if ref:find("%", 1, true) then return "encoded ref name" end
    return ref_refused(pol, "refs/" .. ref, method == "DELETE")
  end
  if pol.push == nil and pol.protect == nil then return nil end
  if rest:find("^/git/refs/?$") or rest:find("^/git/tags/?$") or rest:find("^/contents/")
      or rest == "/merges" or rest == "/merge-upstream" or rest:find("^/pulls/%d+/merge$")
      or rest:find("^/pulls/%d+/update%-branch$") or rest:find("^/branches/[^/]+/rename$")
      or rest:find("^/releases/?$") or rest:find("^/git/refs/") then
    return "API call that changes refs (use git push)"
  end
  return nil
end

-- Checks a request against policy section pol; true when it may go on (push
-- rules and the GraphQL check armed), false when it was refused.
local function enforce(req, ctx, pol, is_api)
  local path = req.path:gsub("%?.*", "")
  if ambiguous(path) then
    if is_api then deny_api(req, "ambiguous path") else deny_git(req, "ambiguous path") end
    return false
  end
  local mode = pol.api or "all"
  if is_api then
    local p = path
    if ctx.host == host and p:sub(1, 8) == "/api/v3/" then p = p:sub(8) end
    if ctx.host == api_host and ctx.host == host and p == "/api/graphql" then p = "/graphql" end
    local owner, name = p:match("^/repos/([^/]+)/([^/]+)")
    if owner then
      if not repo_allowed(pol, owner, name) then
        deny_api(req, "repository " .. owner .. "/" .. name .. " is not allowed for this session")
        return false
      end
      local why = rest_ref_write(pol, req.method, p:match("^/repos/[^/]+/[^/]+(.*)$"))
      if why then
        deny_api(req, why)
        return false
      end
    elseif mode == "repositories" and not global_ok[p] then
      deny_api(req, "API path outside the session's repositories")
      return false
    end
    if p == "/graphql" and pol.graphql_mutations ~= true then
      req:refuse_graphql_mutations()
    end
    return true
  end
  -- git over HTTPS and the content hosts: /OWNER/REPO[.git]/...
  local owner, name = path:match("^/([^/]+)/([^/]+)")
  if not owner then
    if mode == "repositories" then
      deny_git(req, "path outside the session's repositories")
      return false
    end
    return true
  end
  name = name:gsub("%.[gG][iI][tT]$", "")
  if not repo_allowed(pol, owner, name) then
    deny_git(req, "repository " .. owner .. "/" .. name .. " is not allowed for this session")
    return false
  end
  req:push_rules{ push = pol.push, protect = pol.protect, delete = pol.delete == true }
  return true
end

function M.on_request(req, ctx)
  local pol = ctx.sandbox.policy and ctx.sandbox.policy.github
  local is_api = ctx.host == api_host and (ctx.host ~= host or req.path:sub(1, 5) == "/api/")
  if pol ~= nil then
    -- uploads.github.com has /repos/OWNER/REPO/... paths like the API
    if not enforce(req, ctx, pol, is_api or ctx.host == "uploads.github.com") then return end
  end
  local tok, err, rule = token_for(ctx, pol)
  if not tok then
    proxy.warn("github: no credential for " .. ctx.host .. ": " .. tostring(err))
    req:deny(502, "github credential unavailable on the proxy")
    return
  end
  if is_api or extra[ctx.host] then
    req:inject("Authorization", "Bearer " .. tok, rule .. "-bearer")
  else
    -- git over HTTPS (and the web host): Basic x-access-token:TOKEN
    req:inject("Authorization", proxy.github_basic(tok), rule .. "-git")
  end
end

return M
