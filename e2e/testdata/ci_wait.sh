#!/bin/sh
# A CI job (docs/ci.md): start a return request, block until a person decides
# in another process, branch on the outcome. Usage: ci_wait.sh TASK ORDER REASON
# with assistant on PATH; DATA (data dir) and TTL (draft validity) may be set.
assistant --data "${DATA:-./data}" start "$1" "$2" --reason "$3" --draft-ttl "${TTL:-1h}" >/dev/null || exit
assistant --data "${DATA:-./data}" wait "$1" --timeout 1d >"$1.json"
code=$?
case $code in
0) echo "$1: submitted" ;;
5) echo "$1: cancelled by a person" ;;
6) echo "$1: failed: $(grep -o '"code": "[a-z_]*"' "$1.json" | cut -d'"' -f4)" ;;
*) echo "$1: no outcome (exit $code), see $1.json" ;;
esac
exit $code
