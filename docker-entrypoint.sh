#!/bin/sh
# ctxlake image entrypoint: one image, one role per container (docs/design.md §1, §13).
# tini (PID 1) forwards SIGTERM to the role, which finishes its current batch and exits 0.
#
#   syncd [--once]                  per-node daemon (DaemonSet)
#   maint --once                    maintenance pass (CronJob)
#   operator [--namespace NS|-A]    kopf fleet operator (Deployment)
#   mcp                             stdio MCP server
#   hook <runtime> [<event>]        one hook event, payload on stdin
#   ctxlake <verb> ...              the operator CLI (status, doctor, ...)
set -eu
app="${CTXLAKE_APP_DIR:-/app}"
role="${1:-}"
if [ "$#" -gt 0 ]; then shift; fi
case "$role" in
  syncd)    exec python "$app/syncd.py" "$@" ;;
  maint)    exec python "$app/maint.py" "$@" ;;
  operator) exec python "$app/fleet_operator.py" "$@" ;;
  mcp)      exec python "$app/mcp_server.py" "$@" ;;
  hook)     exec python -I -S "$app/hook.py" "$@" ;;
  ctxlake)  exec python "$app/ctxlake.py" "$@" ;;
  *)
    echo "usage: <syncd|maint|operator|mcp|hook|ctxlake> [args...] (got: '${role}')" >&2
    exit 64
    ;;
esac
