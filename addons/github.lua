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
-- repositories: the names when every policy entry is an exact owner/name
-- of one owner; with globs or several owners the owner/name patterns
-- themselves, which the proxy resolves against the installation's
-- repositories (proxy.github_app_token: the token is minted for exactly
-- those that match, none or too many fail closed).
local function token_scope(pol)
  local repos, perms
  local list = pol.repositories
  if list ~= nil and #list > 0 then
    local owner
    repos = {}
    for _, r in ipairs(list) do
      local o, n = r:match("^([^/]+)/([^/]+)$")
      if not o or r:find("[*?]") or (owner and owner:lower() ~= o:lower()) then
        repos = { table.unpack(list) }  -- globs or several owners: the proxy resolves them
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
--
-- Under a policy every request is judged on its canonical target
-- (req:canonicalize(), egress-proxy/reqcanon.c: decoded, dot segments
-- resolved, no "//" or trailing "/"), and that canonical target is what goes
-- upstream, so GitHub runs exactly what was judged. What has no canonical
-- form, an encoded '/', a route keyword in another case and a method
-- override header are refused: the proxy never guesses how GitHub reads them.
--
-- Scope: git, the web host, codeload and raw by /{owner}/{repo}[.git]/...;
-- the API and uploads by /repos/{owner}/{repo}/... (GHE: under /api/v3 and
-- /api/uploads); /repositories/{id}/... names no owner/name, so it is
-- refused under a repositories list.
--
-- Push rules (a push or protect list) make writes an allow-list: a request
-- with any method but GET or HEAD passes only when it is in the tables
-- below (known to be harmless, or judged by the proxy itself: a push's
-- command list, a ref named in the path); anything else is refused.

-- API paths any session may use under api = "repositories".
local global_ok = { ["/user"] = true, ["/rate_limit"] = true, ["/meta"] = true,
  ["/zen"] = true, ["/octocat"] = true, ["/emojis"] = true, ["/versions"] = true }

-- Headers that make some servers run another method than the request line's.
local override_headers = { "X-HTTP-Method-Override", "X-HTTP-Method", "X-Method-Override" }

-- Writes under /repos/{owner}/{repo} (or /repositories/{id}) that push rules
-- let through: { methods, pattern on the path after the repository[, kind] }.
-- kind "ref": a ref update judged by the push rules (the ref is in the path).
-- Not here, so refused under push rules: merges, pulls/{n}/merge and
-- update-branch, contents, POST git/refs (the ref is in the body), releases,
-- tags, branches (rename, protection), the repository itself (DELETE,
-- PATCH, transfer), dispatches and workflows, statuses and check runs (they
-- can satisfy a protection rule or start an auto-merge), reviews (they can
-- approve), deploy keys, hooks, collaborators, settings.
local rest_routes = {
  { "PATCH DELETE", "^/git/refs/(.+)$", "ref" },
  -- git objects: nothing moves until a ref does (PATCH git/refs, above)
  { "POST", "^/git/blobs$" }, { "POST", "^/git/trees$" }, { "POST", "^/git/commits$" },
  { "POST", "^/git/tags$" },
  -- issues, comments, labels, assignees, milestones, reactions
  { "POST", "^/issues$" }, { "PATCH", "^/issues/%d+$" },
  { "POST", "^/issues/%d+/comments$" }, { "PATCH DELETE", "^/issues/comments/%d+$" },
  { "POST PUT DELETE", "^/issues/%d+/labels$" }, { "DELETE", "^/issues/%d+/labels/[^/]+$" },
  { "POST DELETE", "^/issues/%d+/assignees$" },
  { "POST", "^/issues/%d+/reactions$" }, { "DELETE", "^/issues/%d+/reactions/%d+$" },
  { "POST", "^/issues/comments/%d+/reactions$" },
  { "DELETE", "^/issues/comments/%d+/reactions/%d+$" },
  { "POST", "^/labels$" }, { "PATCH DELETE", "^/labels/[^/]+$" },
  { "POST", "^/milestones$" }, { "PATCH DELETE", "^/milestones/%d+$" },
  -- pull requests: open, edit, comment, request reviewers (never merge)
  { "POST", "^/pulls$" }, { "PATCH", "^/pulls/%d+$" },
  { "POST", "^/pulls/%d+/comments$" }, { "POST", "^/pulls/%d+/comments/%d+/replies$" },
  { "PATCH DELETE", "^/pulls/comments/%d+$" },
  { "POST", "^/pulls/comments/%d+/reactions$" },
  { "DELETE", "^/pulls/comments/%d+/reactions/%d+$" },
  { "POST DELETE", "^/pulls/%d+/requested_reviewers$" },
  -- commit comments
  { "POST", "^/commits/%x+/comments$" }, { "PATCH DELETE", "^/comments/%d+$" },
  { "POST", "^/comments/%d+/reactions$" }, { "DELETE", "^/comments/%d+/reactions/%d+$" },
}

-- Other API writes push rules let through (kind "graphql": the mutation check).
local api_routes = {
  { "POST", "^/graphql$", "graphql" },
  { "POST", "^/markdown$" }, { "POST", "^/markdown/raw$" },
}

-- Writes on the git host, on the path after /{owner}/{repo}[.git]
-- (kind "push": git-receive-pack, judged by req:push_rules).
local git_routes = {
  { "POST", "^/git%-upload%-pack$" },
  { "POST", "^/git%-receive%-pack$", "push" },
  { "POST", "^/info/lfs/objects/batch$" },
  { "POST", "^/info/lfs/locks$" }, { "POST", "^/info/lfs/locks/verify$" },
  { "POST", "^/info/lfs/locks/[^/]+/unlock$" },
}

-- GraphQL mutations push rules let through when graphql_mutations is true:
-- their root fields only comment, file issues, open or edit pull requests
-- (never merge them) and review. Any other mutation is refused, so one
-- GitHub adds later is refused until it is listed. Not here: createRef,
-- updateRef(s), deleteRef, createCommitOnBranch, mergeBranch,
-- mergePullRequest, enablePullRequestAutoMerge, enqueuePullRequest,
-- updatePullRequestBranch, revertPullRequest (makes a branch), the branch
-- protection and ruleset mutations, and every repository setting.
local gql_harmless = {
  "addComment", "updateIssueComment", "createIssue", "updateIssue", "closeIssue",
  "reopenIssue", "createPullRequest", "updatePullRequest", "closePullRequest",
  "reopenPullRequest", "markPullRequestReadyForReview", "convertPullRequestToDraft",
  "addPullRequestReviewThread", "addPullRequestReviewThreadReply",
  "resolveReviewThread", "unresolveReviewThread", "requestReviews",
  "addLabelsToLabelable", "removeLabelsFromLabelable", "addAssigneesToAssignable",
  "removeAssigneesFromAssignable", "addReaction", "removeReaction",
}

local function has_method(list, m)
  return (" " .. list .. " "):find(" " .. m .. " ", 1, true) ~= nil
end

-- The route of (method, path) in tbl: its kind ("ok" when it has none) and
-- its capture; "case" when it matches only with its keywords in another
-- case (refused: GitHub may or may not route it); nil when not listed.
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

local NOT_HARMLESS = "not a request known to be harmless under the session's push rules " ..
  "(use git push; see docs/addons.md, Credential policy)"

-- A write to a repository (rest: the path after /repos/{o}/{r} or
-- /repositories/{id}): nil when it may go, else why not.
local function repo_write(pol, method, rest, rules)
  local kind, cap = route(rest_routes, method, rest)
  if kind == "case" then return "route spelled in another case" end
  if kind == "ref" then
    -- git/refs/{ref}: heads/... or tags/..., held to the push rules
    if not cap:find("^heads/") and not cap:find("^tags/") then
      return "ref must be heads/... or tags/..."
    end
    if cap:find("%", 1, true) then return "encoded ref name" end
    return ref_refused(pol, "refs/" .. cap, method == "DELETE")
  end
  if kind ~= nil then return nil end
  if rules then return NOT_HARMLESS end
  if rest == "" and method == "DELETE" and pol.delete ~= true then
    return "deleting the repository deletes every ref: delete"
  end
  return nil
end

-- The parts of a request: "api" (p the API path), "uploads" (p the
-- uploads path), "git" (the git and web host) or "content" (codeload, raw).
local function classify(h, path)
  if h == api_host and h ~= host then return "api", path end
  if h == host and h == api_host then
    -- GitHub Enterprise with the API on the web host
    if path:sub(1, 8) == "/api/v3/" or path == "/api/v3" then return "api", path:sub(8) end
    if path == "/api/graphql" then return "api", "/graphql" end
    if path:sub(1, 13) == "/api/uploads/" then return "uploads", path:sub(13) end
    if path:sub(1, 5) == "/api/" or path == "/api" then return "api", path end
    return "git", path
  end
  if h == "uploads.github.com" then return "uploads", path end
  if h == host then return "git", path end
  return "content", path
end

-- Checks a request against policy section pol; true when it may go on (push
-- rules and the GraphQL check armed), false when it was refused.
local function enforce(req, ctx, pol)
  local raw_kind = classify(ctx.host, (req.path:gsub("%?.*", "")))
  local deny = (raw_kind == "api" or raw_kind == "uploads") and deny_api or deny_git
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
  local kind, p = classify(ctx.host, path)
  deny = (kind == "api" or kind == "uploads") and deny_api or deny_git
  -- GitHub names never hold a '/': an encoded one is a route we would guess
  if path:find("%2F", 1, true) then
    deny(req, "encoded / in the path")
    return false
  end
  local lp = path:lower()
  if ctx.host == host and ctx.host == api_host and lp:sub(1, 5) == "/api/" and path:sub(1, 5) ~= "/api/" then
    deny_api(req, "route spelled in another case")
    return false
  end
  local mode = pol.api or "all"
  local rules = pol.push ~= nil or pol.protect ~= nil
  local write = req.method ~= "GET" and req.method ~= "HEAD"
  if kind == "api" or kind == "uploads" then
    -- every route of the API starts with a lower-case keyword
    local first = p:match("^/([^/]*)") or ""
    if first:lower() ~= first then
      deny(req, "route spelled in another case")
      return false
    end
    local lpp = p:lower()
    if kind == "api" and p ~= "/graphql" and (lpp:find("^/graphql") or lpp:find("^/api/graphql")) then
      deny(req, "GraphQL is served at /graphql only")
      return false
    end
    local owner, name, rest = p:match("^/repos/([^/]+)/([^/]+)(.*)$")
    local rid, rrest = p:match("^/repositories/([^/]+)(.*)$")
    if owner then
      if not repo_allowed(pol, owner, name) then
        deny(req, "repository " .. owner .. "/" .. name .. " is not allowed for this session")
        return false
      end
    elseif rid then
      if pol.repositories ~= nil then
        deny(req, "a repository id cannot be checked against the session's repositories: " ..
          "use /repos/{owner}/{repo}")
        return false
      end
      rest = rrest
    elseif mode == "repositories" and not global_ok[p] then
      deny(req, "API path outside the session's repositories")
      return false
    end
    if write then
      local why
      if kind == "uploads" then
        why = rules and NOT_HARMLESS or nil
      elseif rest then
        why = repo_write(pol, req.method, rest, rules)
      elseif rules then
        local r = route(api_routes, req.method, p)
        why = r == "case" and "route spelled in another case" or (r == nil and NOT_HARMLESS) or nil
      end
      if why then
        deny(req, why)
        return false
      end
    end
    if kind == "api" and p == "/graphql" then
      if pol.graphql_mutations ~= true then
        req:graphql_rules{ mutations = false }
      elseif rules then
        req:graphql_rules{ mutations = true, allow = gql_harmless }
      end
    end
    return true
  end
  -- git, the web host and the content hosts: /OWNER/REPO[.git]/...
  local owner, name, rest = path:match("^/([^/]+)/([^/]+)(.*)$")
  if not owner then
    if mode == "repositories" then
      deny(req, "path outside the session's repositories")
      return false
    end
    if write and rules then
      deny(req, NOT_HARMLESS)
      return false
    end
    return true
  end
  name = name:gsub("%.[gG][iI][tT]$", "")
  if not repo_allowed(pol, owner, name) then
    deny(req, "repository " .. owner .. "/" .. name .. " is not allowed for this session")
    return false
  end
  local armed = kind == "git" and
      req:push_rules{ push = pol.push, protect = pol.protect, delete = pol.delete == true }
  if write and kind == "git" then
    local r = route(git_routes, req.method, rest)
    if r == "case" then
      deny(req, "route spelled in another case")
      return false
    end
    if rules and (r == nil or (r == "push" and not armed)) then
      deny(req, NOT_HARMLESS)
      return false
    end
  elseif write and rules then
    deny(req, NOT_HARMLESS)
    return false
  end
  return true
end

function M.on_request(req, ctx)
  local pol = ctx.sandbox.policy and ctx.sandbox.policy.github
  if pol ~= nil and not enforce(req, ctx, pol) then return end
  -- req.path: the canonical target once enforce canonicalized it
  local is_api = ctx.host == api_host and (ctx.host ~= host or req.path:sub(1, 5) == "/api/")
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
