-- creds/npm.lua: a preset (docs/addons.md "Presets"): an npm registry's
-- token, registry.npmjs.org or a private one, for `npm install` in sandboxes
-- that hold only a placeholder. Copy it, or list it as it is and set:
--
-- addon_config:
--   npm_token: file:/run/secrets/npm_token   (required: env:NAME or file:PATH)
--   npm_registry: https://npm.acme.example/  (default https://registry.npmjs.org/;
--                                             a path is kept: https://h/npm/)
--   npm_scope: "@acme"                        (optional: only this scope goes there)
--   npm_name: npm                             (the credential's name in policies)
--   npm_default: "true"                       (sandboxes without a credentials
--                                             policy get it; default: only those
--                                             whose policy names it)
--
-- The sandbox gets ~/.npmrc with the registry and the placeholder as its
-- _authToken, and NPM_TOKEN set to the placeholder. Tarballs the registry
-- redirects to another host (a CDN) go there with nothing.
local cfg = proxy.config
local url = cfg.npm_registry or "https://registry.npmjs.org/"
local host = url:match("^https://([%w%.%-]+)[:/]")
if cfg.npm_token == nil then error("creds/npm.lua: set addon_config.npm_token") end
if host == nil then error("creds/npm.lua: npm_registry is a https:// URL") end

return {
  name = "creds-npm",
  credentials = {
    { name = cfg.npm_name or "npm", form = "bearer", secret = cfg.npm_token,
      hosts = { host:lower() }, default = cfg.npm_default == "true", env = { "NPM_TOKEN" },
      client = { npm = url, scope = cfg.npm_scope } },
  },
}
