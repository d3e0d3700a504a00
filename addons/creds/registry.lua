-- creds/registry.lua: a preset (docs/addons.md "Presets"): an OCI/Docker
-- registry (GHCR, Docker Hub, a private distribution registry). With a
-- realm, the token flow: the proxy fetches a token per scope at the realm
-- with the Basic credential and sends it as Bearer; skopeo or podman in the
-- sandbox need no credentials. Without one, Basic on every request (a
-- registry with htpasswd). addon_config:
--   registry_host: ghcr.io                      (required: the registry's host)
--   registry_user: acme-bot                     (required)
--   registry_password: file:/run/secrets/ghcr   (required: env:NAME or file:PATH)
--   registry_realm: https://ghcr.io/token       (the token flow; Docker Hub:
--                                               https://auth.docker.io/token with
--                                               registry_host registry-1.docker.io)
--   registry_service: ghcr.io                   (with a realm: the service it
--                                               issues tokens for; default the host)
--   registry_name: registry                     (the credential's name)
--   registry_default: "true"                    (see creds/npm.lua)
local cfg = proxy.config
if cfg.registry_host == nil or cfg.registry_user == nil or cfg.registry_password == nil then
  error("creds/registry.lua: set addon_config.registry_host, registry_user and registry_password")
end
local host = cfg.registry_host:lower()
local c = { name = cfg.registry_name or "registry", user = cfg.registry_user,
  secret = cfg.registry_password, hosts = { host }, default = cfg.registry_default == "true" }
if cfg.registry_realm ~= nil then
  c.form = "registry"
  c.realm = cfg.registry_realm
  c.service = cfg.registry_service or host
else
  c.form = "basic"
  c.client = { docker = host }
end

return { name = "creds-registry", credentials = { c } }
