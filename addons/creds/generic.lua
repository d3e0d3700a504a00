-- creds/generic.lua: a preset (docs/addons.md "Presets"): one credential
-- for the hosts you name, in the form you name, for an internal service or
-- any API the other presets do not cover. Copy the file once per service
-- (give each copy its own prefix). addon_config:
--   generic_name: corp                          (required: the credential's name)
--   generic_hosts: "api.corp.example,*.svc.corp.example"   (required)
--   generic_secret: file:/run/secrets/corp      (required: env:NAME or file:PATH)
--   generic_form: bearer                        (bearer, basic, header or query)
--   generic_user: svc                           (basic: the user)
--   generic_field: X-Api-Key                    (header or query: its name)
--   generic_env: CORP_TOKEN                     (optional: a variable the sandbox
--                                               gets set to the placeholder)
--   generic_default: "true"                     (see creds/npm.lua)
local cfg = proxy.config
if cfg.generic_name == nil or cfg.generic_hosts == nil or cfg.generic_secret == nil then
  error("creds/generic.lua: set addon_config.generic_name, generic_hosts and generic_secret")
end
local hosts = {}
for h in cfg.generic_hosts:gmatch("[^,%s]+") do hosts[#hosts + 1] = h:lower() end

return {
  name = "creds-generic",
  credentials = {
    { name = cfg.generic_name, form = cfg.generic_form or "bearer", secret = cfg.generic_secret,
      user = cfg.generic_user, field = cfg.generic_field, hosts = hosts,
      default = cfg.generic_default == "true",
      env = cfg.generic_env and { cfg.generic_env } or nil },
  },
}
