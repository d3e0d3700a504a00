-- creds/aws.lua: a preset (docs/addons.md "Presets"): AWS, every service
-- whose requests carry x-amz-content-sha256 (S3 and S3-compatible stores),
-- signed again with the real key: the sandbox's AWS CLI and SDKs sign with
-- placeholders. addon_config:
--   aws_key_id: file:/run/secrets/aws_key_id   (required: env:NAME or file:PATH)
--   aws_secret: file:/run/secrets/aws_secret   (required)
--   aws_session_token: file:/run/secrets/aws_token  (optional: temporary credentials)
--   aws_hosts: "s3.amazonaws.com,*.s3.amazonaws.com,s3.eu-west-1.amazonaws.com,*.s3.eu-west-1.amazonaws.com"
--                                              (default: S3 in us-east-1, path
--                                              and virtual-host style)
--   aws_regions: "us-east-1,eu-west-1"         (default: any)
--   aws_services: "s3"                          (default: s3)
--   aws_name: aws                              (the credential's name)
--   aws_default: "true"                        (see creds/npm.lua)
--
-- The sandbox gets AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY (and
-- AWS_SESSION_TOKEN) set to placeholders, and ~/.aws/credentials and
-- ~/.aws/config (profile default, the first region).
local cfg = proxy.config
if cfg.aws_key_id == nil or cfg.aws_secret == nil then
  error("creds/aws.lua: set addon_config.aws_key_id and aws_secret")
end
local function list(s)
  local t = {}
  for x in (s or ""):gmatch("[^,%s]+") do t[#t + 1] = x end
  return t
end
local hosts = list(cfg.aws_hosts or "s3.amazonaws.com,*.s3.amazonaws.com")
local regions = list(cfg.aws_regions)
local env = { "AWS_ACCESS_KEY_ID=key_id", "AWS_SECRET_ACCESS_KEY" }
if cfg.aws_session_token ~= nil then env[#env + 1] = "AWS_SESSION_TOKEN=session_token" end

return {
  name = "creds-aws",
  credentials = {
    { name = cfg.aws_name or "aws", form = "sigv4", key_id = cfg.aws_key_id,
      secret = cfg.aws_secret, token = cfg.aws_session_token, hosts = hosts,
      regions = #regions > 0 and regions or nil, services = list(cfg.aws_services or "s3"),
      default = cfg.aws_default == "true", env = env, client = { aws = "default" } },
  },
}
