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

function M.on_request(req, ctx)
  local spec = (ctx.sandbox.org and cfg["gitlab_token@" .. ctx.sandbox.org]) or cfg.gitlab_token
  local tok, err
  if spec then tok, err = proxy.secret(spec) else err = "no gitlab_token configured" end
  if not tok then
    proxy.warn("gitlab: no credential: " .. tostring(err))
    req:deny(502, "gitlab credential unavailable on the proxy")
    return
  end
  if is_git(req.path) then
    req:inject("Authorization", proxy.gitlab_basic(tok), "gitlab-git")
  else
    req:inject("Authorization", "Bearer " .. tok, "gitlab-api")
  end
end

return M
