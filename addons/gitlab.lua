-- gitlab.lua: GitLab credentials (gitlab.com or self-hosted) for git over
-- HTTPS (Basic oauth2:TOKEN) and the API (Bearer). See docs/addons.md.
--
-- addon_config keys:
--   gitlab_host        default gitlab.com (self-hosted: your host)
--   gitlab_token       secret spec: env:NAME or file:PATH (a personal,
--                      project or group access token, or an OAuth token)
--   gitlab_token@ORG   a token for sandboxes registered with org ORG
-- Client PRIVATE-TOKEN / JOB-TOKEN headers are stripped, so a dummy token
-- in the sandbox never reaches GitLab.
--
-- A sandbox registered with a policy (ctx.sandbox.policy.gitlab, see
-- docs/addons.md "Credential policy") is held to it: project scope for git
-- and the API, the api mode and push rules on git-receive-pack.
local M = { name = "gitlab", strip_headers = { "PRIVATE-TOKEN", "JOB-TOKEN" } }
local cfg = proxy.config
local host = (cfg.gitlab_host or "gitlab.com"):lower()

local function is_git(path)
  return path:find("%.git/") or path:find("%.git$") or path:find("/info/refs", 1, true)
      or path:find("/git%-upload%-pack") or path:find("/git%-receive%-pack")
      or path:find("/info/lfs/", 1, true)
end

function M.on_connect(ctx)
  if ctx.host == host and ctx.port == 443 then return "intercept" end
  return nil
end

-- ---- policy ----

-- API paths any session may use under api = "projects".
local global_ok = { ["/api/v4/user"] = true, ["/api/v4/version"] = true }

local function project_allowed(pol, path)
  local list = pol.projects
  if list == nil then return true end
  if type(list) ~= "table" then error("policy.gitlab.projects: not a list") end
  -- group[/subgroup...]/project, each part of GitLab's path characters
  if not path:find("^[%w%.%-_]+/[%w%.%-_/]+$") or path:find("//", 1, true)
      or path:sub(-1) == "/" then
    return false
  end
  for _, pat in ipairs(list) do
    if type(pat) ~= "string" then error("policy.gitlab.projects: not a string") end
    if proxy.glob(pat, path, true) then return true end
  end
  return false
end

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
  req:deny(403, m, '{"message":"403 Forbidden - ' .. m:gsub('[%c"\\]', "") .. '"}',
    "application/json")
end

-- %XX-decodes s (nil if an escape is malformed).
local function unescape(s)
  if s:find("%%[^%x]") or s:find("%%%x?$") then return nil end
  return (s:gsub("%%(%x%x)", function(h) return string.char(tonumber(h, 16)) end))
end

-- The project a git path names: the part before .git/ or before the smart HTTP suffix.
local function git_project(path)
  local p = path:match("^/(.-)%.git/") or path:match("^/(.-)%.git$")
  if p then return p end
  for _, suf in ipairs({ "/info/refs", "/git-upload-pack", "/git-receive-pack", "/info/lfs/" }) do
    local i = path:find(suf, 1, true)
    if i then return path:sub(2, i - 1) end
  end
  return nil
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
-- /api/v4/projects/ID): deleting a branch or tag is held to the push rules;
-- the calls that name their branch in the body or query are refused under
-- push rules (a push or protect list). nil: not one of them.
local function rest_ref_write(pol, method, rest)
  if method == "GET" or method == "HEAD" or method == "OPTIONS" then return nil end
  local b = rest:match("^/repository/branches/([^/]+)$")
  local t = rest:match("^/repository/tags/([^/]+)$")
  if (b or t) and method == "DELETE" then
    local name = unescape(b or t)
    if not name then return "encoded ref name" end
    return ref_refused(pol, (b and "refs/heads/" or "refs/tags/") .. name, true)
  end
  if rest == "/repository/merged_branches" and pol.delete ~= true then return "delete" end
  if pol.push == nil and pol.protect == nil then return nil end
  if rest:find("^/repository/commits/?$") or rest:find("^/repository/files/")
      or rest:find("^/repository/branches") or rest:find("^/repository/tags")
      or rest:find("^/repository/commits/[^/]+/cherry_pick$")
      or rest:find("^/repository/commits/[^/]+/revert$")
      or rest:find("^/merge_requests/%d+/merge$") or rest:find("^/merge_requests/%d+/rebase$")
      or rest:find("^/repository/submodules/") then
    return "API call that changes refs (use git push)"
  end
  return nil
end

local function enforce(req, pol, git)
  local path = req.path:gsub("%?.*", "")
  if ambiguous(path) then
    if git then deny_git(req, "ambiguous path") else deny_api(req, "ambiguous path") end
    return false
  end
  local mode = pol.api or "all"
  if git then
    local proj = git_project(path)
    if not proj or not project_allowed(pol, proj) then
      deny_git(req, "project " .. tostring(proj) .. " is not allowed for this session")
      return false
    end
    req:push_rules{ push = pol.push, protect = pol.protect, delete = pol.delete == true }
    return true
  end
  local id = path:match("^/api/v4/projects/([^/]+)")
  if id then
    local proj = unescape(id)
    if pol.projects ~= nil and (proj == nil or proj:find("^%d+$")) then
      -- a numeric id cannot be checked against project paths: use the path form
      deny_api(req, "projects are addressed by their URL-encoded path under this policy")
      return false
    end
    if proj and not project_allowed(pol, proj) then
      deny_api(req, "project " .. proj .. " is not allowed for this session")
      return false
    end
    local why = rest_ref_write(pol, req.method, path:match("^/api/v4/projects/[^/]+(.*)$"))
    if why then
      deny_api(req, why)
      return false
    end
    return true
  end
  if path:sub(1, 8) ~= "/api/v4/" and path ~= "/api/v4" then
    -- the web UI: /GROUP/PROJECT/-/...
    local proj = path:match("^/(.-)/%-/")
    if proj then
      if not project_allowed(pol, proj) then
        deny_git(req, "project " .. proj .. " is not allowed for this session")
        return false
      end
      return true
    end
  end
  if mode == "projects" and not global_ok[path] then
    deny_api(req, "API path outside the session's projects")
    return false
  end
  return true
end

function M.on_request(req, ctx)
  local pol = ctx.sandbox.policy and ctx.sandbox.policy.gitlab
  local git = is_git(req.path)
  if pol ~= nil and not enforce(req, pol, git) then return end
  local spec = (ctx.sandbox.org and cfg["gitlab_token@" .. ctx.sandbox.org]) or cfg.gitlab_token
  local tok, err
  if spec then tok, err = proxy.secret(spec) else err = "no gitlab_token configured" end
  if not tok then
    proxy.warn("gitlab: no credential: " .. tostring(err))
    req:deny(502, "gitlab credential unavailable on the proxy")
    return
  end
  if git then
    req:inject("Authorization", proxy.gitlab_basic(tok), "gitlab-git")
  else
    req:inject("Authorization", "Bearer " .. tok, "gitlab-api")
  end
end

return M
