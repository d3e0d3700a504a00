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
--
-- Under a policy every request is judged on its canonical target
-- (req:canonicalize(), egress-proxy/reqcanon.c: decoded, dot segments
-- resolved, no "//" or trailing "/"), which is also what goes upstream.
-- What has no canonical form, a route keyword in another case and a method
-- override header are refused. An encoded '/' (%2F) is GitLab's way to
-- name a project or a ref in the API, so it stays there, and only there:
-- nowhere else, and never where decoding it would make a git or web route.
--
-- Scope: git by the project path before .git/ (or the smart HTTP suffix),
-- the API by /api/v4/projects/{id}/... ({id} the URL-encoded path; a
-- numeric id is refused under a projects list), the web UI by
-- /{project}/-/....
--
-- Push rules (a push or protect list) make writes an allow-list: a request
-- with any method but GET or HEAD passes only when it is in the tables
-- below; anything else is refused.

-- API paths any session may use under api = "projects".
local global_ok = { ["/api/v4/user"] = true, ["/api/v4/version"] = true }

-- Headers that make Rails (Rack::MethodOverride) run another method.
local override_headers = { "X-HTTP-Method-Override", "X-HTTP-Method", "X-Method-Override" }

-- Writes under /api/v4/projects/{id} that push rules let through: { methods,
-- pattern on the path after the id[, kind] }. Kinds "branch" and "tag": a
-- delete judged by the push rules (the name is in the path). Not here, so
-- refused under push rules: commits, files, branch and tag creation,
-- protected branches and tags, cherry-pick, revert, submodules, changelog,
-- releases, merge request merge, rebase and approval, pipelines, the
-- project itself (DELETE, PUT, transfer, fork), merged_branches, hooks,
-- deploy keys, variables, statuses.
local rest_routes = {
  { "DELETE", "^/repository/branches/([^/]+)$", "branch" },
  { "DELETE", "^/repository/tags/([^/]+)$", "tag" },
  -- issues, notes, discussions, award emoji (kind "text": a description or
  -- a note GitLab reads for quick actions, checked by req:refuse_quick_actions)
  { "POST", "^/issues$", "text" }, { "PUT", "^/issues/%d+$", "text" },
  { "POST", "^/issues/%d+/notes$", "text" }, { "PUT", "^/issues/%d+/notes/%d+$", "text" },
  { "DELETE", "^/issues/%d+/notes/%d+$" },
  { "POST", "^/issues/%d+/discussions$", "text" },
  { "POST", "^/issues/%d+/discussions/%x+/notes$", "text" },
  { "PUT", "^/issues/%d+/discussions/%x+/notes/%d+$", "text" },
  { "DELETE", "^/issues/%d+/discussions/%x+/notes/%d+$" },
  { "POST", "^/issues/%d+/award_emoji$" }, { "DELETE", "^/issues/%d+/award_emoji/%d+$" },
  { "POST", "^/issues/%d+/notes/%d+/award_emoji$" },
  { "DELETE", "^/issues/%d+/notes/%d+/award_emoji/%d+$" },
  -- merge requests: open, edit, discuss (never merge, rebase or approve)
  { "POST", "^/merge_requests$", "text" }, { "PUT", "^/merge_requests/%d+$", "text" },
  { "POST", "^/merge_requests/%d+/notes$", "text" },
  { "PUT", "^/merge_requests/%d+/notes/%d+$", "text" },
  { "DELETE", "^/merge_requests/%d+/notes/%d+$" },
  { "POST", "^/merge_requests/%d+/discussions$", "text" },
  { "PUT", "^/merge_requests/%d+/discussions/%x+$", "text" },
  { "POST", "^/merge_requests/%d+/discussions/%x+/notes$", "text" },
  { "PUT", "^/merge_requests/%d+/discussions/%x+/notes/%d+$", "text" },
  { "DELETE", "^/merge_requests/%d+/discussions/%x+/notes/%d+$" },
  { "POST", "^/merge_requests/%d+/award_emoji$" },
  { "DELETE", "^/merge_requests/%d+/award_emoji/%d+$" },
  -- labels, milestones, commit comments
  { "POST", "^/labels$" }, { "PUT DELETE", "^/labels/[^/]+$" },
  { "POST", "^/milestones$" }, { "PUT", "^/milestones/%d+$" },
  { "POST", "^/repository/commits/%x+/comments$", "text" },
}

-- Other API writes push rules let through.
local api_routes = { { "POST", "^/api/v4/markdown$" } }

-- Writes on git paths, after /{project}[.git] (kind "push": judged by req:push_rules).
local git_routes = {
  { "POST", "^/git%-upload%-pack$" },
  { "POST", "^/git%-receive%-pack$", "push" },
  { "POST", "^/info/lfs/objects/batch$" },
  { "POST", "^/info/lfs/locks$" }, { "POST", "^/info/lfs/locks/verify$" },
  { "POST", "^/info/lfs/locks/%d+/unlock$" },
  { "PUT", "^/gitlab%-lfs/objects/%x+/%d+$" },
}

-- GraphQL mutations push rules let through when graphql_mutations is true:
-- metadata of issues and merge requests that carries no text (GitLab runs
-- quick actions such as /merge found in a note's or a description's text,
-- so createNote, createIssue, mergeRequestCreate and their updates are
-- refused here: the REST routes above check their text). Not here:
-- commitCreate, createBranch, mergeRequestAccept, the branch and tag rules.
local gql_harmless = {
  "discussionToggleResolve", "issueSetAssignees", "mergeRequestSetDraft",
  "mergeRequestSetAssignees", "mergeRequestSetLabels", "mergeRequestSetReviewers",
  "mergeRequestSetMilestone", "awardEmojiAdd", "awardEmojiRemove", "awardEmojiToggle",
}

local function has_method(list, m)
  return (" " .. list .. " "):find(" " .. m .. " ", 1, true) ~= nil
end

-- The route of (method, path) in tbl: its kind ("ok" when it has none) and
-- its capture; "case" when it matches only with its keywords in another
-- case; nil when not listed.
local function route(tbl, method, path)
  local lp = path:lower()
  for _, r in ipairs(tbl) do
    if has_method(r[1], method) and lp:find(r[2]) then
      local cap = path:match(r[2])
      if cap == nil then return "case" end
      return r[3] or "ok", cap
    end
  end
  return nil
end

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

local NOT_HARMLESS = "not a request known to be harmless under the session's push rules " ..
  "(use git push; see docs/addons.md, Credential policy)"

-- A write to a project (rest: the path after /api/v4/projects/{id}): nil
-- when it may go (and true when its text must be checked for quick
-- actions), else why not.
local function project_write(pol, method, rest, rules)
  local kind, cap = route(rest_routes, method, rest)
  if kind == "case" then return "route spelled in another case" end
  if kind == "branch" or kind == "tag" then
    local name = unescape(cap)
    if not name or name == "" then return "encoded ref name" end
    -- GitLab's API may read a trailing .json/.xml as a format, not the name
    if name:find("%.json$") or name:find("%.xml$") then return "ambiguous ref name" end
    return ref_refused(pol, (kind == "branch" and "refs/heads/" or "refs/tags/") .. name, true)
  end
  if kind ~= nil then return nil, rules and kind == "text" end
  if rules then return NOT_HARMLESS end
  if method == "DELETE" and pol.delete ~= true and
      (rest == "" or rest:lower() == "/repository/merged_branches") then
    return "delete"
  end
  return nil
end

local function enforce(req, pol)
  local deny = is_git(req.path) and deny_git or deny_api
  for _, h in ipairs(override_headers) do
    if req:header(h) ~= nil then
      deny(req, "method override header " .. h)
      return false
    end
  end
  local path, why = req:canonicalize()
  if not path then
    deny(req, "request target refused: " .. why)
    return false
  end
  local git = is_git(path)
  local api = path:sub(1, 8) == "/api/v4/" or path == "/api/v4"
  deny = git and deny_git or deny_api
  if path:find("%2F", 1, true) then
    local dec = path:gsub("%%2F", "/")
    if not api or git or is_git(dec) or dec:find("/-/", 1, true) then
      deny(req, "encoded / in the path")
      return false
    end
  end
  local lp = path:lower()
  local seg = path:match("^/api/v4/([^/]+)")
  if (lp:sub(1, 5) == "/api/" and path:sub(1, 5) ~= "/api/") or
      (lp:sub(1, 8) == "/api/v4/" and not api) or (seg and seg:lower() ~= seg) then
    deny(req, "route spelled in another case")
    return false
  end
  local mode = pol.api or "all"
  local rules = pol.push ~= nil or pol.protect ~= nil
  local write = req.method ~= "GET" and req.method ~= "HEAD"
  if git then
    local proj = git_project(path)
    if not proj or not project_allowed(pol, proj) then
      deny_git(req, "project " .. tostring(proj) .. " is not allowed for this session")
      return false
    end
    local armed = req:push_rules{ push = pol.push, protect = pol.protect, delete = pol.delete == true }
    if write then
      local rest = path:sub(#proj + 2):gsub("^%.git", "")
      local r = route(git_routes, req.method, rest)
      if r == "case" then
        deny_git(req, "route spelled in another case")
        return false
      end
      if rules and (r == nil or (r == "push" and not armed)) then
        deny_git(req, NOT_HARMLESS)
        return false
      end
    end
    return true
  end
  local id, rest = path:match("^/api/v4/projects/([^/]+)(.*)$")
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
    local why, text
    if write then why, text = project_write(pol, req.method, rest, rules) end
    if why then
      deny_api(req, why)
      return false
    end
    if text then req:refuse_quick_actions() end
    return true
  end
  if not api then
    -- the web UI: /GROUP/PROJECT/-/...
    local proj = path:match("^/(.-)/%-/")
    if proj then
      if not project_allowed(pol, proj) then
        deny_git(req, "project " .. proj .. " is not allowed for this session")
        return false
      end
      if write and rules then
        deny_git(req, NOT_HARMLESS)
        return false
      end
      return true
    end
  end
  if mode == "projects" and not global_ok[path] then
    deny_api(req, "API path outside the session's projects")
    return false
  end
  if path == "/api/graphql" then
    -- the body judged as GitLab parses it (egress-proxy/gql.c)
    if pol.graphql_mutations ~= true then
      req:graphql_rules{ mutations = false, forge = "gitlab" }
    elseif rules then
      req:graphql_rules{ mutations = true, allow = gql_harmless, forge = "gitlab" }
    end
    return true
  end
  if write and rules then
    local r = route(api_routes, req.method, path)
    if r == nil or r == "case" then
      deny_api(req, r == "case" and "route spelled in another case" or NOT_HARMLESS)
      return false
    end
  end
  return true
end

function M.on_request(req, ctx)
  local pol = ctx.sandbox.policy and ctx.sandbox.policy.gitlab
  if pol ~= nil and not enforce(req, pol) then return end
  -- req.path: the canonical target once enforce canonicalized it
  local git = is_git(req.path)
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
