-- creds/pypi.lua: a preset (docs/addons.md "Presets"): a Python package
-- index behind Basic auth (a private simple index, or upload.pypi.org with
-- user __token__), for `pip install` in sandboxes that hold only a
-- placeholder. addon_config:
--   pypi_index: https://pypi.acme.example/simple/  (required)
--   pypi_password: file:/run/secrets/pypi           (required: env:NAME or file:PATH)
--   pypi_user: deploy                               (default __token__)
--   pypi_name: pypi                                 (the credential's name)
--   pypi_default: "true"                            (see creds/npm.lua)
--
-- The sandbox gets pip.conf with index-url carrying the user and the
-- placeholder as its password; the proxy swaps it inside the Basic pair.
local cfg = proxy.config
local url = cfg.pypi_index
if url == nil or cfg.pypi_password == nil then
  error("creds/pypi.lua: set addon_config.pypi_index and pypi_password")
end
local host = url:match("^https://([%w%.%-]+)[:/]")
if host == nil then error("creds/pypi.lua: pypi_index is a https:// URL") end

return {
  name = "creds-pypi",
  credentials = {
    { name = cfg.pypi_name or "pypi", form = "basic", user = cfg.pypi_user or "__token__",
      secret = cfg.pypi_password, hosts = { host:lower() },
      default = cfg.pypi_default == "true", client = { pip = url } },
  },
}
