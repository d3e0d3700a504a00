-- creds/cargo.lua: a preset (docs/addons.md "Presets"): a private crates
-- registry (sparse index, auth-required), whose token cargo sends as the
-- whole Authorization field (no scheme). addon_config:
--   cargo_host: crates.acme.example       (required: the index's and download host)
--   cargo_token: file:/run/secrets/cargo  (required: env:NAME or file:PATH)
--   cargo_index: https://crates.acme.example/index/
--                                         (the sparse index's URL, on cargo_host,
--                                         ending in '/': the sandbox gets client files)
--   cargo_name: cargo                     (the credential's name, and the registry's
--                                         in the sandbox's cargo config)
--   cargo_default: "true"                 (see creds/npm.lua)
--
-- cargo sends nothing to a registry it has no token for: the sandbox gets
-- CARGO_REGISTRIES_<NAME>_TOKEN set to the placeholder (name the registry
-- in the project's .cargo/config.toml; CARGO_REGISTRY_TOKEN for the default)
-- and, with cargo_index, ~/.cargo/config.toml naming the registry (index
-- "sparse+URL", the cargo:token provider) and ~/.cargo/credentials.toml
-- with the placeholder as its token, so a Cargo.toml's
-- `registry = "<name>"` works with no set-up.
local cfg = proxy.config
if cfg.cargo_host == nil or cfg.cargo_token == nil then
  error("creds/cargo.lua: set addon_config.cargo_host and cargo_token")
end
local name = cfg.cargo_name or "cargo"

return {
  name = "creds-cargo",
  credentials = {
    { name = name, form = "header", field = "Authorization", secret = cfg.cargo_token,
      hosts = { cfg.cargo_host:lower() }, default = cfg.cargo_default == "true",
      env = { "CARGO_REGISTRIES_" .. name:upper():gsub("[^A-Z0-9]", "_") .. "_TOKEN",
              "CARGO_REGISTRY_TOKEN" },
      client = cfg.cargo_index and { cargo = cfg.cargo_index } or nil },
  },
}
