-- creds/maven.lua: a preset (docs/addons.md "Presets"): a Maven repository
-- behind Basic auth, for `mvn` in sandboxes that hold only a placeholder.
-- addon_config:
--   maven_host: maven.acme.example        (required: the repository's host)
--   maven_user: deploy                    (required)
--   maven_password: file:/run/secrets/mvn (required: env:NAME or file:PATH)
--   maven_server: acme                    (the <server> id the project's pom names;
--                                         default the credential's name)
--   maven_name: maven                     (the credential's name)
--   maven_default: "true"                 (see creds/npm.lua)
--
-- The sandbox gets ~/.m2/settings.xml with a <server> of that id whose
-- password is the placeholder.
local cfg = proxy.config
if cfg.maven_host == nil or cfg.maven_user == nil or cfg.maven_password == nil then
  error("creds/maven.lua: set addon_config.maven_host, maven_user and maven_password")
end
local name = cfg.maven_name or "maven"

return {
  name = "creds-maven",
  credentials = {
    { name = name, form = "basic", user = cfg.maven_user, secret = cfg.maven_password,
      hosts = { cfg.maven_host:lower() }, default = cfg.maven_default == "true",
      client = { maven = cfg.maven_server or name } },
  },
}
